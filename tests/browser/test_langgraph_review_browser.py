"""The review page of the ``create_agent`` agent ``docs/langgraph.md`` shows, in Chromium:
an input per argument of its tool, with the tool's bounds, and a bad edit refused beside
its field. The screenshots (``langgraph-review-page.png``, then
``langgraph-review-refused.png``, in the test's temp dir) are the doc's (``docs/images/``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from symfonic_django.models import Decision, RunStatus

from ..conftest import need, snapshot
from ..langgraph.conftest import pauses_of, run_turn
from ..langgraph.docs_project import ONE_REFUND, project  # noqa: F401  (a fixture)
from .conftest import CHROMIUM, review_tab

SHOT = "langgraph-review-page.png"
#: The same page after "Edit & approve" with an amount of -5.
REFUSED_SHOT = "langgraph-review-refused.png"


def test_the_docs_agents_review_page_has_an_input_per_argument_and_refuses_a_bad_edit(
        transactional_db, project, users, live_server, tmp_path: Path):  # noqa: F811
    need(os.path.exists(CHROMIUM), f"no Chromium at {CHROMIUM}")
    run = run_turn("refunds", {"messages": [{"role": "user", "content": json.dumps(ONE_REFUND)}]})
    [pause] = pauses_of(run)
    before = snapshot(pause)
    with review_tab(live_server.url, pause) as tab:
        amount = tab.locator('input[name="args_0.amount"]')
        assert amount.get_attribute("type") == "number"
        assert amount.get_attribute("max") == "500"
        assert tab.locator('input[name="args_0.order_id"]').get_attribute("maxlength") == "40"
        assert tab.locator(".symfonic-description").first.inner_text() == (
            "refund(order_id=A-1, amount=10)")
        tab.locator('input[name="decision_0"][value="edit"]').check()
        amount.fill("50")
        tab.screenshot(path=str(tmp_path / SHOT), full_page=True)

        tab.locator('input[name="args_0.amount"]').fill("-5")
        tab.locator('input[name="_answer"]').click()
        tab.wait_for_load_state()
        assert "The answer was not sent" in tab.content()
        assert tab.locator('input[name="args_0.amount"]').input_value() == "-5"
        tab.screenshot(path=str(tmp_path / REFUSED_SHOT), full_page=True)
    assert snapshot(pause) == before and not Decision.objects.filter(pause=pause).exists()
    run.refresh_from_db()
    assert run.status == RunStatus.PAUSED
