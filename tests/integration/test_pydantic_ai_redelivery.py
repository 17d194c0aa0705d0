"""A Pydantic AI continuation delivered 10 times to 4 worker processes records each refund
once: the stored message history is resumed by one delivery, the others are skipped (or,
racing, refused before they touch it). ``SYMFONIC_REDELIVERY_TRIALS`` trials (CI: 3; the
acceptance run: 20), each a new run of the tests' ``refund_pydantic``."""

from __future__ import annotations

import os
from collections import Counter
from decimal import Decimal

import pytest

from symfonic_django import pauses
from symfonic_django.models import AgentState, Pause, RunStatus, ToolResult
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run
from tests.testapp.models import Refund

from .conftest import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

DELIVERIES = 10
TRIALS = int(os.environ.get("SYMFONIC_REDELIVERY_TRIALS", "3"))
THREE = {"refunds": [{"order_id": "P-1", "amount": 10}, {"order_id": "P-2", "amount": 19.99},
                     {"order_id": "P-3", "amount": 3}]}
#: Approve P-1, edit P-2 to 5.50, reject P-3.
DECISIONS = [{"type": "approve"},
             {"type": "edit", "edited_action": {"name": "refund",
                                                "args": {"order_id": "P-2", "amount": 5.5}}},
             {"type": "reject", "message": "already refunded"}]
RECORDED = [("P-1", Decimal("10.00")), ("P-2", Decimal("5.50"))]


def test_a_pydantic_ai_continuation_delivered_10_times_to_4_processes_records_each_refund_once(
        tenants, celery_workers):
    for name in ("pyd1", "pyd2"):
        celery_workers.start(name, pool="prefork", concurrency=2, wait=False)
    for worker in celery_workers.started:
        worker.wait_ready()
    executors: set[str] = set()
    for trial in range(TRIALS):
        run = start_run("refund_pydantic", THREE, scope=tenants["acme"], dispatch=False)
        assert execute_run(run.pk) == "paused"
        pause = Pause.objects.get(run=run)
        continuation = pauses.answer_pause(pause.pk, {"decisions": DECISIONS},
                                           dispatch=False).continuation
        task_ids = celery_workers.send("symfonic_django.run_continuation", str(continuation.pk),
                                       count=DELIVERIES)
        results = wait_for(
            lambda ids=task_ids: (r := celery_workers.results()) and set(ids) <= set(r) and r,
            timeout=60, what=f"trial {trial}: {DELIVERIES} deliveries to be processed",
            detail=celery_workers.logs)
        returned = Counter(results[t][1] for t in task_ids)
        assert returned == {"completed": 1, "skipped": DELIVERIES - 1}, (trial, results)
        executors |= {results[t][0] for t in task_ids}

        continuation.refresh_from_db()
        assert continuation.status == RunStatus.COMPLETED and continuation.attempts == 1
        assert sorted(Refund.objects.filter(run_id=run.pk).values_list(
            "order_id", "amount")) == RECORDED, trial
        assert ToolResult.objects.filter(root_run_id=run.pk).count() == 2
        assert AgentState.objects.get(run=run).consumed_by_id == continuation.pk
    assert len(executors) >= 2, executors  # the deliveries really went to several processes
    print(f"\n{TRIALS} trial(s) of {DELIVERIES} deliveries, taken by {len(executors)} "
          f"processes {sorted(executors)}")
