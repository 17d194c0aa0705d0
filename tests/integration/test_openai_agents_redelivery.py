"""An answered ``refund_openai`` continuation delivered 10 times to 4 worker processes
resumes its stored ``RunState`` once and records each approved refund once.

The SDK would run the approved calls of a state as often as it is handed it; the app hands
it to one continuation run, under that run's claim (``stored_state.consume_state``), and
the other deliveries find the run taken or done. ``SYMFONIC_REDELIVERY_TRIALS`` trials
(3 by default; 20 is the acceptance run), on one set of workers.
"""

from __future__ import annotations

import os
from collections import Counter
from decimal import Decimal

import pytest

from symfonic_django import pauses
from symfonic_django.models import AgentState, Pause, Run, RunStatus, ToolResult, TurnEvent
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run
from tests.testapp.models import Refund

from .conftest import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

DELIVERIES = 10
TRIALS = int(os.environ.get("SYMFONIC_REDELIVERY_TRIALS", "3"))
THREE = {"refunds": [{"order_id": "R-1", "amount": 10}, {"order_id": "R-2", "amount": 19.99},
                     {"order_id": "R-3", "amount": 3}]}
#: Approve R-1 and R-3, reject R-2.
DECISIONS = [{"type": "approve"}, {"type": "reject", "message": "already refunded"},
             {"type": "approve"}]
RECORDED = [("R-1", Decimal("10.00")), ("R-3", Decimal("3.00"))]


def test_a_continuation_delivered_10_times_to_4_processes_records_each_refund_once(
        tenants, celery_workers):
    for name in ("oai1", "oai2"):
        celery_workers.start(name, pool="prefork", concurrency=2, wait=False)
    for worker in celery_workers.started:
        worker.wait_ready()
    executors: set[str] = set()
    for trial in range(TRIALS):
        run = start_run("refund_openai", THREE, scope=tenants["acme"], dispatch=False)
        assert execute_run(run.pk) == "paused", trial
        pause = Pause.objects.get(run=run)
        continuation = pauses.answer_pause(pause.pk, {"decisions": DECISIONS}).continuation
        assert continuation is not None and continuation.status == RunStatus.QUEUED
        task_ids = celery_workers.send("symfonic_django.run_continuation", str(continuation.pk),
                                       count=DELIVERIES)
        results = wait_for(
            lambda ids=task_ids: (r := celery_workers.results()) and set(ids) <= set(r) and r,
            timeout=60, what=f"trial {trial}: {DELIVERIES} deliveries to be processed",
            detail=celery_workers.logs)
        returned = Counter(results[t][1] for t in task_ids)
        assert returned == {"completed": 1, "skipped": DELIVERIES - 1}, (trial, results)
        executors |= {results[t][0] for t in task_ids}

        assert sorted(Refund.objects.filter(run_id=run.pk).values_list(
            "order_id", "amount")) == RECORDED, trial
        assert ToolResult.objects.filter(root_run_id=run.pk).count() == 2
        continuation.refresh_from_db()
        assert continuation.status == RunStatus.COMPLETED and continuation.attempts == 1
        assert AgentState.objects.get(run=run).consumed_by_id == continuation.pk
        types = list(TurnEvent.objects.filter(run=continuation).order_by("seq")
                     .values_list("type", flat=True))
        assert types.count("turn.started") == 1 and types[-1] == "turn.completed"
        assert types.count("tool.completed") == 3
        assert Run.objects.filter(parent=run).count() == 1
    assert len(executors) >= 2, executors
    print(f"\n{TRIALS} trial(s) x {DELIVERIES} deliveries, taken by {len(executors)} processes")
