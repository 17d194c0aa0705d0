"""A review claim seen by a second reviewer, in a real browser.

daphne serves the test app against this test's PostgreSQL database
(``conftest.py``'s fixtures; no worker: nothing here answers). In Debian's
chromium, driven by Playwright, alice claims a pause on its page; dora, a second
reviewer of acme, opens the same page and reads "Being reviewed by alice (until
HH:MM UTC)", with no Claim button of her own. Screenshot: ``artifacts/claim-seen.png``.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from symfonic_django.datetimes import format_datetime
from symfonic_django.models import Decision, Pause
from tests.testapp.models import Tenant
from tests.testapp.seed import seed_pause, seed_users

from .conftest import ARTIFACTS, off_the_loop, second_acme_reviewer, signed_in

pytestmark = [pytest.mark.postgres, pytest.mark.services]



def test_a_claim_is_seen_by_a_second_reviewer(server: str, chromium: Any) -> None:
    def seed() -> str:
        seed_users()
        second_acme_reviewer()
        return seed_pause(Tenant.objects.get(slug="acme"), random.Random(7))["id"]

    # Playwright's sync API keeps an event loop in this thread: the ORM runs off it.
    pause_id = off_the_loop(seed)
    path = f"{server}/admin/symfonic_django/pause/{pause_id}/change/"

    alice = signed_in(chromium, server, "alice")
    alice.goto(path)
    alice.click("#symfonic-claim input[name=_claim]")
    alice.wait_for_selector("#symfonic-claim input[name=_release]")
    assert "You are reviewing this pause" in alice.inner_text("#symfonic-claim")

    claimed = off_the_loop(lambda: Pause.objects.select_related("claimed_by").get(pk=pause_id))
    assert claimed.claimed_by.username == "alice"
    until = format_datetime(claimed.claimed_until, "time")  # the page states its zone

    dora = signed_in(chromium, server, "dora")
    dora.goto(path)
    seen = dora.inner_text("#symfonic-claim")
    assert f"Being reviewed by alice (until {until})." in seen
    assert dora.locator("#symfonic-claim input[name=_claim]").count() == 0
    assert dora.locator("#pause_answer_form").count() == 1  # a claim informs: dora may answer
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    dora.screenshot(path=str(ARTIFACTS / "claim-seen.png"), full_page=True)

    audit = off_the_loop(lambda: list(Decision.objects.filter(pause_id=pause_id)
                                      .values_list("action", "actor_label", "via")))
    assert audit == [("claim", "alice", "admin")]
