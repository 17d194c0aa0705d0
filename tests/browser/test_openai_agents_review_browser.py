"""The review page of the example's ``refund_openai`` pause (the tests' copy), in Chromium:
one action per refund, each described, with approve, reject and respond and no edit (the
SDK cannot run an approved call with other arguments). The screenshot
(``openai-agents-review-page.png``, in the test's temp dir) is docs/openai-agents.md's
(``docs/images/``)."""

from __future__ import annotations

import os
from pathlib import Path

from symfonic_django.models import Decision, Pause, RunStatus
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run

from ..conftest import need, snapshot
from ..openai_agents.docs_project import THREE_REFUNDS
from .conftest import CHROMIUM, review_tab

SHOT = "openai-agents-review-page.png"


def test_the_refund_openai_review_page_offers_approve_reject_respond_and_no_edit(
        transactional_db, users, live_server, tmp_path: Path):
    need(os.path.exists(CHROMIUM), f"no Chromium at {CHROMIUM}")
    run = start_run("refund_openai", THREE_REFUNDS, scope="acme", dispatch=False)
    execute_run(run.pk)
    [pause] = Pause.objects.filter(run=run)
    before = snapshot(pause)
    with review_tab(live_server.url, pause) as tab:
        descriptions = tab.locator(".symfonic-description").all_inner_texts()
        assert descriptions[:3] == ["Refund 10 on order A-1", "Refund 19.99 on order B-2",
                                    "Refund 3 on order C-3"]
        for index in range(3):
            offered = tab.locator(f'input[name="decision_{index}"]').evaluate_all(
                "inputs => inputs.map(i => i.value)")
            assert sorted(offered) == ["approve", "reject", "respond"], offered
        tab.locator('input[name="decision_1"][value="reject"]').check()
        tab.screenshot(path=str(tmp_path / SHOT), full_page=True)
    assert snapshot(pause) == before and not Decision.objects.filter(pause=pause).exists()
    run.refresh_from_db()
    assert run.status == RunStatus.PAUSED
    print(f"screenshot: {tmp_path / SHOT}")
