"""The second locale in a real browser: a French chromium gets the reviewer's pages in French.

daphne serves the test app (``conftest.py``'s fixtures; no worker).
Debian's chromium, driven by Playwright with the browser locale ``fr-FR``, opens
the inbox, a review page and the live viewer as alice: the server's words come
from ``LocaleMiddleware`` and the app's French catalog, the scripts' words
(review.js, viewer.js) from Django's JavaScript catalog. Screenshots:
``artifacts/locale-fr.png`` (the review page) and ``artifacts/locale-fr-viewer.png``.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import INBOX, log_in, off_the_loop, seed, shoot

pytestmark = [pytest.mark.postgres, pytest.mark.services]


def french_alice(browser: Any, server: str) -> Any:
    context = browser.new_context(locale="fr-FR", viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    log_in(page, server, "alice")
    return page


def test_a_french_browser_reads_the_inbox_the_review_page_and_the_viewer_in_french(
        chromium: Any, server: str) -> None:
    (pause,) = off_the_loop(lambda: seed([99.99]))
    page = french_alice(chromium, server)

    page.goto(f"{server}{INBOX}")
    page.wait_for_selector(".symfonic-card")
    assert page.get_attribute("html", "lang") == "fr"
    assert "En attente" in page.inner_text("#symfonic-tab-pending")
    assert page.inner_text(".symfonic-card .symfonic-expiry").startswith("expire dans")
    assert "Toutes les pauses" in page.inner_text(".symfonic-tabs")

    page.goto(f"{server}/admin/symfonic_django/pause/{pause['id']}/change/")
    outcomes = page.inner_text(".symfonic-outcomes")
    assert "Modifier et approuver:" in outcomes and "l’agent exécute refund(" in outcomes
    assert page.get_attribute("input[name=_answer]", "value") == "Envoyer la décision"
    # review.js has the catalog: an emptied input reads "(aucune)" against the proposal.
    page.check("input[name=decision_0][value=edit]")
    page.locator("input[name='args_0.amount']").fill("")
    change = page.locator(".symfonic-arg-input.symfonic-changed .symfonic-change")
    assert change.inner_text() == "99.99 → (aucune)"
    page.locator("input[name='args_0.amount']").fill("50")
    assert change.inner_text() == "99.99 → 50"
    shoot(page, "locale-fr.png")

    # The viewer's words are drawn by viewer.js from the events it streams.
    page.goto(f"{server}/admin/symfonic/runs/{pause['run_id']}/live/")
    page.wait_for_selector(".symfonic-pause")
    assert "Approbation demandée" in page.inner_text(".symfonic-pause-head")
    page.wait_for_function(
        "document.querySelector('#symfonic-outcome').innerText.includes('En attente de 1 réponse')")
    assert page.inner_text("#symfonic-status") == "En pause"
    assert "Transcription" in page.inner_text("#content-main")
    shoot(page, "locale-fr-viewer.png")
    page.context.close()
