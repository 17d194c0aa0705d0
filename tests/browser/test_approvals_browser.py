"""Several approvers in a real browser: "1 of 2 approvals" as a second reviewer sees it.

daphne serves the test app (its APPROVAL_POLICY asks two approvers for a
refund over 500) against this test's PostgreSQL database; no worker runs, so the
continuation stays queued. In Debian's chromium, alice approves a refund of 750
on its page; dora, a second reviewer of acme, opens it and reads "1 of 2
approvals — by alice", approves, and the pause is answered with two approvals.
Screenshot: ``artifacts/approvals-1-of-2.png``.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from symfonic_django.models import Decision, Pause
from tests.testapp.models import Tenant
from tests.testapp.seed import seed_pause, seed_users

from .conftest import ARTIFACTS, off_the_loop, second_acme_reviewer, signed_in

pytestmark = [pytest.mark.postgres, pytest.mark.services]


def test_a_second_reviewer_sees_1_of_2_approvals_and_completes_the_quorum(
        server: str, chromium: Any, settings: Any) -> None:
    # The pause is made in this process, under the test app's policy as the server has it.
    settings.SYMFONIC = {**settings.SYMFONIC, "APPROVAL_POLICY":
                         "tests.testapp.approvals.two_approvers_over_500"}

    def seed() -> str:
        seed_users()
        second_acme_reviewer()
        return seed_pause(Tenant.objects.get(slug="acme"), random.Random(3), amount=750)["id"]

    pause_id = off_the_loop(seed)
    assert off_the_loop(lambda: Pause.objects.get(pk=pause_id).approvals_needed) == 2
    path = f"{server}/admin/symfonic_django/pause/{pause_id}/change/"

    alice = signed_in(chromium, server, "alice")
    alice.goto(path)
    alice.check("input[name=decision_0][value=approve]")
    alice.click("input[name=_answer]")
    alice.wait_for_selector("#symfonic-approvals")
    assert "Your approval was counted: 1 of 2 approvals" in alice.inner_text(".messagelist")

    dora = signed_in(chromium, server, "dora")
    dora.goto(path)
    assert dora.inner_text("#symfonic-approvals") == "1 of 2 approvals — by alice"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    dora.screenshot(path=str(ARTIFACTS / "approvals-1-of-2.png"), full_page=True)

    dora.check("input[name=decision_0][value=approve]")
    dora.click("input[name=_answer]")
    dora.wait_for_load_state()
    done = off_the_loop(lambda: Pause.objects.get(pk=pause_id))
    assert done.status == "answered" and done.continuation_id is not None
    approvals = off_the_loop(lambda: list(Decision.objects.filter(pause_id=pause_id)
                                          .values_list("action", "actor_label")))
    assert approvals == [("approve", "alice"), ("approve", "dora")]
