"""The inbox, the per-field edit and the bulk confirmation in a real browser.

daphne serves the test app against this test's PostgreSQL database
(``conftest.py``'s fixtures; no worker: nothing here waits for a
continuation). Debian's chromium, driven by Playwright, looks at each page as
alice (reviewer of acme) and saves a screenshot under ``artifacts/``:
``inbox-390.png``, ``inbox-1366.png``, ``edit-diff.png``, ``bulk-confirm.png``.
"""

from __future__ import annotations

from typing import Any

import pytest

from symfonic_django.models import Decision, Pause, PauseStatus

from .conftest import INBOX, log_in, off_the_loop, seed, shoot

pytestmark = [pytest.mark.postgres, pytest.mark.services]

#: No horizontal scrolling: the page is no wider than the window.
FITS = "document.documentElement.scrollWidth <= window.innerWidth"


def alice_at(browser: Any, server: str, width: int, height: int = 900) -> Any:
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.set_default_timeout(15_000)
    log_in(page, server, "alice")
    return page


def within_window(page: Any, selector: str) -> bool:
    """The first ``selector`` is visible and ends inside the window's width."""
    element = page.locator(selector).first
    box = element.bounding_box()
    width = page.evaluate("window.innerWidth")
    return bool(element.is_visible() and box and box["x"] >= 0
                and box["x"] + box["width"] <= width)


def test_the_inbox_fits_390_and_1366_px_with_headline_tenant_and_expiry(
        chromium: Any, server: str) -> None:
    mine = off_the_loop(lambda: seed([99.99, 40, 12.5]))
    oldest = off_the_loop(lambda: Pause.objects.get(pk=mine[0]["id"]).prompt)[
        "action_requests"][0]["description"]
    for width in (390, 1366):
        page = alice_at(chromium, server, width)
        page.goto(f"{server}{INBOX}")
        page.wait_for_selector(".symfonic-card")
        assert page.locator(".symfonic-card").count() == 3  # acme's, not globex's
        assert page.inner_text(".symfonic-card .symfonic-headline") == oldest  # oldest first
        for part in (".symfonic-headline", ".symfonic-tenant", ".symfonic-expiry"):
            assert within_window(page, f".symfonic-card {part}"), (width, part)
        assert page.inner_text(".symfonic-card .symfonic-tenant") == "acme"
        assert page.inner_text(".symfonic-card .symfonic-expiry").startswith("expires in")
        assert page.evaluate(FITS), f"the inbox scrolls sideways at {width} px"
        assert within_window(page, "#symfonic-tab-pending")
        shoot(page, f"inbox-{width}.png")
        page.click(".symfonic-all")  # the full list is one click away
        page.wait_for_selector("#result_list")
        page.context.close()


def test_a_per_field_edit_shows_its_change_against_the_proposal(
        chromium: Any, server: str) -> None:
    (pause,) = off_the_loop(lambda: seed([99.99]))
    path = f"/admin/symfonic_django/pause/{pause['id']}/change/"
    page = alice_at(chromium, server, 1366)
    page.goto(f"{server}{path}")
    assert "the agent runs refund(" in page.inner_text(".symfonic-outcomes")
    page.check("input[name=decision_0][value=edit]")
    amount = page.locator("input[name='args_0.amount']")
    assert amount.is_visible() and amount.input_value() == "99.99"
    amount.fill("50")
    change = page.locator(".symfonic-arg-input.symfonic-changed .symfonic-change")
    assert change.inner_text() == "99.99 → 50"
    assert page.locator(".symfonic-outcomes li.symfonic-chosen").inner_text().startswith(
        "Edit & approve:")
    page.fill("textarea[name=comment]", "the customer kept half")
    assert page.evaluate(FITS)
    shoot(page, "edit-diff.png")
    page.click("input[name=_answer]")
    page.wait_for_url("**/live/")
    page.goto(f"{server}{path}")
    decided = page.inner_text("#decision")
    assert "99.99" in decided and "50" in decided and "Edited and approved" in decided
    assert "the customer kept half" in page.inner_text(".symfonic-history")
    shoot(page, "edit-diff-decided.png")
    answer = off_the_loop(lambda: Pause.objects.get(pk=pause["id"]).answer)
    assert answer["decisions"][0]["edited_action"]["args"]["amount"] == 50


def test_a_bulk_rejection_is_confirmed_listing_every_action(
        chromium: Any, server: str) -> None:
    mine = off_the_loop(lambda: seed([99.99, 40]))
    page = alice_at(chromium, server, 1366)
    page.goto(f"{server}/admin/symfonic_django/pause/")
    for pause in mine:
        page.check(f"input.action-select[value='{pause['id']}']")
    page.select_option("select[name=action]", "reject_selected")
    page.click("button[name=index]")
    page.wait_for_selector("#symfonic-bulk-form")
    listed = page.inner_text(".symfonic-bulk-list")
    for pause in mine:
        args = off_the_loop(lambda p=pause: Pause.objects.get(pk=p["id"]).prompt)
        assert args["action_requests"][0]["args"]["order_id"] in listed
    assert "99.99" in listed and "40" in listed
    page.fill("textarea[name=reason]", "Duplicate orders")
    assert page.evaluate(FITS)
    shoot(page, "bulk-confirm.png")
    assert off_the_loop(lambda: Decision.objects.count()) == 0  # nothing decided yet
    page.click("input[name=_confirm]")
    page.wait_for_selector(".messagelist")
    messages = page.inner_text(".messagelist")
    assert "Rejected 2 pauses." in messages and "2 runs continue" in messages
    assert page.locator(".messagelist li.info a").count() == 2  # a link to each run
    statuses = off_the_loop(lambda: sorted(
        Pause.objects.filter(pk__in=[p["id"] for p in mine]).values_list("status", flat=True)))
    assert statuses == [PauseStatus.ANSWERED, PauseStatus.ANSWERED]
