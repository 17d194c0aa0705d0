"""A reviewer answers in a real browser, a real worker runs the continuation.

daphne serves the test app and a ``celery -A tests.testapp worker``
process consumes Redis, both against this test's PostgreSQL database. Alice
logs in to the admin, sees only acme's pauses, edits a refund's amount and
approves it; the worker resumes the turn and the refund is recorded with the
edited amount; bob gets a 404 for the same page. Screenshots go to
``artifacts/screenshots/``.
"""

from __future__ import annotations

import random
import time
from decimal import Decimal
from typing import Any

import pytest

from symfonic_django.models import Pause, PauseStatus, Run, RunStatus
from tests.testapp.models import Refund, Tenant
from tests.testapp.seed import seed_pause, seed_users

from .conftest import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    CONTINUATION_SECONDS,
    Process,
    log_in,
    off_the_loop,
)

pytestmark = [pytest.mark.postgres, pytest.mark.services]

SHOTS = ARTIFACTS / "screenshots"


def wait_for_continuation(pause_id: str, worker: Process) -> Run:
    deadline = time.monotonic() + CONTINUATION_SECONDS
    while True:
        cont = Run.objects.filter(resumed_pauses__pk=pause_id).first()
        if cont is not None and cont.status in (RunStatus.COMPLETED, RunStatus.FAILED):
            return cont
        if worker.popen.poll() is not None or time.monotonic() > deadline:
            status = cont.status if cont else "no continuation"
            pytest.fail(f"continuation not finished ({status}) after {CONTINUATION_SECONDS}s\n"
                        f"{worker.tail()}")
        time.sleep(0.25)


def shoot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"admin-{name}.png"), full_page=True)


def test_reviewer_edits_and_approves_a_refund_and_the_worker_records_it(server, worker):
    from playwright.sync_api import sync_playwright

    seed_users()
    rng = random.Random(1234)
    acme, globex = Tenant.objects.get(slug="acme"), Tenant.objects.get(slug="globex")
    mine = [seed_pause(acme, rng) for _ in range(2)]
    theirs = seed_pause(globex, rng)
    target = Pause.objects.get(pk=mine[0]["id"])
    order_id = target.prompt["action_requests"][0]["args"]["order_id"]
    orders = {p["id"]: Pause.objects.get(pk=p["id"]).prompt["action_requests"][0]["args"]
              ["order_id"] for p in (*mine, theirs)}
    pause_path = f"/admin/symfonic_django/pause/{target.pk}/change/"

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            alice = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
            alice.set_default_timeout(15_000)
            log_in(alice, server, "alice")
            alice.goto(f"{server}/admin/symfonic_django/pause/")
            listing = alice.inner_text("#result_list")
            shoot(alice, "1-alice-pause-list")
            for pause in mine:
                assert orders[pause["id"]] in listing
            assert orders[theirs["id"]] not in listing
            assert "globex" not in listing

            alice.click(f"#result_list a[href='{pause_path}']")
            alice.wait_for_selector("#pause_answer_form")
            assert "Refund" in alice.inner_text(".symfonic-description")
            alice.check("input[name=decision_0][value=edit]")
            # The refund's args_schema gives each argument its own input, shown once
            # "Edit & approve" is chosen.
            amount = alice.locator("input[name='args_0.amount']")
            assert amount.is_visible()
            amount.fill("7.25")
            shoot(alice, "2-alice-edits-the-amount")
            alice.click("input[name=_answer]")
            # The reviewer lands on the live viewer of the resumed turn and watches it finish.
            alice.wait_for_url("**/admin/symfonic/runs/*/live/")
            assert "Your answer was recorded" in alice.inner_text(".messagelist")
            alice.wait_for_function(
                "document.querySelector('#symfonic-transcript').innerText.includes('is done.')")
            assert "7.25" in alice.inner_text("#symfonic-transcript")
            shoot(alice, "3-alice-watches-the-resumed-turn")

            cont = off_the_loop(lambda: wait_for_continuation(str(target.pk), worker))
            assert cont.status == RunStatus.COMPLETED, worker.tail()
            alice.goto(f"{server}{pause_path}")
            decided = alice.inner_text("#decision")
            assert "Edited and approved" in decided and "7.25" in decided
            assert "turn.completed" in alice.inner_text("#continuation-events")
            shoot(alice, "4-alice-sees-the-decision-and-the-completed-turn")

            bob = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
            bob.set_default_timeout(15_000)
            log_in(bob, server, "bob")
            response = bob.goto(f"{server}{pause_path}")
            assert response is not None and response.status == 404
            shoot(bob, "5-bob-gets-404")
        finally:
            browser.close()

    target.refresh_from_db()
    assert target.status == PauseStatus.ANSWERED and target.answered_by.username == "alice"
    refund = Refund.objects.get(run_id=target.continuation_id)
    assert (refund.order_id, refund.amount) == (order_id, Decimal("7.25"))
    assert Refund.objects.count() == 1
