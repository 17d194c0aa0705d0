"""Redelivery is harmless: one continuation delivered many times runs once."""

from __future__ import annotations

from collections import Counter

import pytest

from symfonic_django import pauses
from symfonic_django.models import Pause, Run, RunStatus, TurnEvent
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run
from tests.testapp.models import Refund

from .conftest import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

DELIVERIES = 10


def test_continuation_delivered_10_times_to_4_worker_processes_records_one_refund(
        tenants, celery_workers):
    run = start_run("refund", {"order_id": "A-1001", "amount": 42.5}, scope=tenants["acme"],
                    dispatch=False)
    assert execute_run(run.pk) == "paused"
    pause = Pause.objects.get(run=run)
    # Two prefork workers of two processes each: four processes take deliveries.
    for name in ("dup1", "dup2"):
        celery_workers.start(name, pool="prefork", concurrency=2, wait=False)
    for worker in celery_workers.started:
        worker.wait_ready()

    # approve() also dispatches once on commit, through this process's own broker
    # setting; that message never reaches this test's queue.
    continuation = pauses.approve(pause.pk, actor="reviewer").continuation
    assert continuation is not None and continuation.status == RunStatus.QUEUED
    task_ids = celery_workers.send("symfonic_django.run_continuation", str(continuation.pk),
                                   count=DELIVERIES)

    results = wait_for(
        lambda: (r := celery_workers.results()) and set(task_ids) <= set(r) and r,
        timeout=60, what=f"{DELIVERIES} deliveries to be processed", detail=celery_workers.logs)
    returned = Counter(results[t][1] for t in task_ids)
    assert returned == {"completed": 1, "skipped": DELIVERIES - 1}, results

    refunds = list(Refund.objects.all())
    assert len(refunds) == 1
    assert refunds[0].run_id == continuation.pk and refunds[0].order_id == "A-1001"
    continuation.refresh_from_db()
    assert continuation.status == RunStatus.COMPLETED and continuation.attempts == 1
    assert continuation.output["refunded"] is True
    types = list(TurnEvent.objects.filter(run=continuation).order_by("seq")
                 .values_list("type", flat=True))
    assert types.count("turn.started") == 1 and types[-1] == "turn.completed"
    assert types.count("tool.completed") == 1
    seqs = list(TurnEvent.objects.filter(run=continuation).order_by("seq")
                .values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))
    assert Run.objects.filter(parent=run).count() == 1
    executors = {results[t][0] for t in task_ids}
    assert len(executors) >= 2, executors  # the deliveries really went to several processes
    print(f"\n{DELIVERIES} deliveries: {dict(returned)}, taken by {len(executors)} processes "
          f"{sorted(executors)}")
