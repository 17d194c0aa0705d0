"""The tests' ``refund_pydantic`` over the HTTP API of a live deployment (daphne, two Celery
workers, a private Redis, PostgreSQL): three refunds pause once with an action each, and an
answer approving one, editing one and rejecting one records exactly those two refunds."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from symfonic_django.models import AgentState, Pause, Run, RunStatus
from tests.testapp.models import Refund

from .stack import Stack, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

THREE = {"refunds": [{"order_id": "H-1", "amount": 10}, {"order_id": "H-2", "amount": 19.99},
                     {"order_id": "H-3", "amount": 3}]}
DECISIONS = [{"type": "approve"},
             {"type": "edit", "edited_action": {"name": "refund",
                                                "args": {"order_id": "H-2", "amount": 5.5}}},
             {"type": "reject", "message": "already refunded"}]


def finished(run_id: str, stack: Stack, statuses: set[str], what: str) -> Run:
    def reached() -> Run | None:
        run = Run.objects.get(pk=run_id)
        return run if run.status in statuses else None

    return wait_for(reached, timeout=60, what=what, detail=stack.logs)


def test_refund_pydantic_over_the_http_api_records_the_approved_and_edited_refunds(
        live: Stack, users: dict[str, Any]) -> None:
    token = users["alice"]["token"]
    status, body = live.api("POST", "runs/", token, {"agent": "refund_pydantic", "input": THREE})
    assert status == 202, body
    run = finished(body["run_id"], live, {RunStatus.PAUSED, RunStatus.FAILED}, "the pause")
    assert run.status == RunStatus.PAUSED, run.error
    [pause] = Pause.objects.filter(run=run)
    assert [a["args"]["order_id"] for a in pause.prompt["action_requests"]] == [
        "H-1", "H-2", "H-3"]

    status, body = live.api("POST", f"pauses/{pause.pk}/answer/", token,
                            {"answer": {"decisions": DECISIONS}})
    assert status == 202, body
    done = finished(body["run_id"], live, {RunStatus.COMPLETED, RunStatus.FAILED},
                    "the continuation")
    assert done.status == RunStatus.COMPLETED, done.error
    assert done.output.startswith("3 refund(s) reviewed")
    assert sorted(Refund.objects.filter(run_id=run.pk).values_list("order_id", "amount")) == [
        ("H-1", Decimal("10.00")), ("H-2", Decimal("5.50"))]
    assert AgentState.objects.get(run=run).consumed_by_id == done.pk
