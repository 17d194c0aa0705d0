"""A review claim seen by a second reviewer, in a real browser.

daphne serves the example project against this test's PostgreSQL database
(``test_admin_browser``'s fixtures; no worker: nothing here answers). In Debian's
chromium, driven by Playwright, alice claims a pause on its page; dora, a second
reviewer of acme, opens the same page and reads "Being reviewed by alice (until
HH:MM UTC)", with no Claim button of her own. Screenshot: ``artifacts/claim-seen.png``.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from example_project.shop.management.commands.seed_demo import seed_pause, seed_users
from example_project.shop.models import Membership, Tenant
from symfonic_django.datetimes import format_datetime
from symfonic_django.models import Decision, Pause

from .test_admin_browser import ROOT, off_the_loop

pytestmark = [pytest.mark.postgres, pytest.mark.services]

ARTIFACTS = ROOT / "artifacts"
PASSWORDS = {"alice": "alice-demo-pw", "dora": "dora-test-pw"}


def second_acme_reviewer() -> None:
    """dora: like alice, a staff member of acme who may view and answer its pauses."""
    dora = get_user_model().objects.create_user("dora", password=PASSWORDS["dora"],
                                                is_staff=True, email="dora@example.com")
    dora.user_permissions.add(*Permission.objects.filter(
        content_type__app_label="symfonic_django",
        codename__in=["view_pause", "view_run", "view_decision", "answer_pause"]))
    Membership.objects.create(user=dora, tenant=Tenant.objects.get(slug="acme"))


def signed_in(browser: Any, server: str, username: str) -> Any:
    page = browser.new_context(viewport={"width": 1366, "height": 900},
                               timezone_id="UTC").new_page()
    page.set_default_timeout(15_000)
    page.goto(f"{server}/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORDS[username])
    page.click("input[type=submit]")
    page.wait_for_selector("#user-tools")
    return page


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
