"""Workers killed mid-turn: the lease lapses, the reaper fails the run, nothing re-runs it.

The workers consume with ``acks_late`` and restore unacknowledged messages
after a second (``redelivery_settings``), so a worker started after the kill
really receives the killed worker's message again.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from django.utils import timezone

from symfonic_django import pauses
from symfonic_django.models import Pause, Run, RunStatus, TurnEvent
from symfonic_django.runs import reap_stale_runs, start_run
from symfonic_django.turns import execute_run
from tests.testapp.models import Refund

from ..conftest import paused_run
from .conftest import Gate, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

LEASE_SECONDS = 3  # the workers' lease; their heartbeat renews it every second
REDELIVERING = "tests.integration.redelivery_settings"


def events(run: Run) -> list[TurnEvent]:
    return list(TurnEvent.objects.filter(run=run).order_by("seq"))


def test_worker_killed_mid_turn_is_reaped_as_lease_expired_and_never_rerun(
        tenants, celery_workers):
    _, pause = paused_run("slow")
    first = celery_workers.start("doomed", pool="solo", settings=REDELIVERING,
                                 lease_seconds=LEASE_SECONDS)
    continuation = pauses.approve(pause.pk, actor="reviewer").continuation
    [task_id] = celery_workers.send("symfonic_django.run_continuation", str(continuation.pk))

    # The turn streams a tick every 0.1 s for a minute. Let it run for longer than
    # one lease: the heartbeat keeps it alive, so the reaper leaves it alone.
    wait_for(lambda: TurnEvent.objects.filter(run=continuation).count() > 10 * LEASE_SECONDS + 5,
             timeout=60, what="the slow turn to stream", detail=celery_workers.logs)
    assert reap_stale_runs() == 0
    running = Run.objects.get(pk=continuation.pk)
    assert running.status == RunStatus.RUNNING
    # With the solo pool, the worker's main process is the one executing the turn.
    assert running.worker.endswith(f":{first.pid}"), (running.worker, first.pid)

    os.kill(first.pid, signal.SIGKILL)
    first.proc.wait(timeout=10)
    streamed = TurnEvent.objects.filter(run=continuation).count()
    lease_until = Run.objects.get(pk=continuation.pk).lease_until
    assert lease_until is not None
    wait_for(lambda: timezone.now() > lease_until, timeout=LEASE_SECONDS + 5,
             what="the lease to lapse")

    assert reap_stale_runs() == 1
    assert reap_stale_runs() == 0  # reaped once
    reaped = Run.objects.get(pk=continuation.pk)
    assert reaped.status == RunStatus.FAILED
    assert reaped.error["code"] == "lease_expired"
    rows = events(reaped)
    assert len(rows) == streamed + 1
    assert [r.seq for r in rows] == list(range(1, len(rows) + 1))
    assert rows[-1].type == "turn.failed" and rows[-1].data["code"] == "lease_expired"

    # The killed worker never acknowledged its acks_late message: a new worker gets
    # it again, and the claim refuses a run that is no longer queued.
    second = celery_workers.start("heir", pool="solo", settings=REDELIVERING,
                                  lease_seconds=LEASE_SECONDS)
    redelivered = wait_for(lambda: second.results().get(task_id), timeout=30,
                           what=f"the redelivery of {task_id}", detail=celery_workers.logs)
    assert redelivered[1] == "skipped"

    after = Run.objects.get(pk=continuation.pk)
    assert after.status == RunStatus.FAILED and after.attempts == 1
    assert after.error["code"] == "lease_expired"
    assert [(r.seq, r.type) for r in events(after)] == [(r.seq, r.type) for r in rows]
    assert [r.type for r in rows].count("turn.started") == 1


def test_refund_worker_killed_after_its_refund_committed_never_refunds_twice(
        tenants, celery_workers):
    run = start_run("refund", {"order_id": "K-7", "amount": 19.9}, scope=tenants["acme"],
                    dispatch=False)
    assert execute_run(run.pk) == "paused"
    doomed = celery_workers.start("doomed", pool="solo", settings=REDELIVERING,
                                  lease_seconds=LEASE_SECONDS)
    continuation = pauses.approve(Pause.objects.get(run=run).pk, actor="reviewer").continuation
    # An uncommitted refund with the same run_id holds the turn inside its refund tool.
    refund_gate = Gate(f"INSERT INTO {Refund._meta.db_table} (order_id, amount, run_id, "
                       "created_at) VALUES ('K-7', 1, %s, now())", [str(continuation.pk)])
    run_gate = None
    try:
        [task_id] = celery_workers.send("symfonic_django.run_continuation",
                                        str(continuation.pk))
        wait_for(lambda: TurnEvent.objects.filter(run=continuation, type="tool.started").exists(),
                 timeout=60, what="the refund tool to start", detail=celery_workers.logs)

        # A tool blocked for longer than a lease is still a live turn: its lease holds.
        time.sleep(LEASE_SECONDS + 1.5)
        assert reap_stale_runs() == 0
        held = Run.objects.get(pk=continuation.pk)
        assert held.status == RunStatus.RUNNING and held.lease_until > timezone.now()

        # Hold the turn right after its refund commits (fenced, with tool.completed as
        # seq 3): an uncommitted event with the next seq makes the turn's insert wait.
        run_gate = Gate(f"INSERT INTO {TurnEvent._meta.db_table} (run_id, seq, type, data, "
                        "scope_key, created_at) VALUES (%s, 4, 'gate', '{}', '', now())",
                        [str(continuation.pk)])
        refund_gate.open()
        wait_for(lambda: Refund.objects.filter(run_id=continuation.pk).exists(), timeout=30,
                 what="the refund to commit")
        assert Run.objects.get(pk=continuation.pk).status == RunStatus.RUNNING  # mid-turn
        os.kill(doomed.pid, signal.SIGKILL)
        doomed.proc.wait(timeout=10)
    finally:
        refund_gate.open()
        if run_gate is not None:
            run_gate.open()

    reaped = wait_for(reap_stale_runs, timeout=LEASE_SECONDS + 30,
                      what="the reaper to fail the run once its lease lapsed")
    assert reaped == 1
    failed = Run.objects.get(pk=continuation.pk)
    assert failed.status == RunStatus.FAILED and failed.error["code"] == "lease_expired"
    rows = events(failed)
    assert rows[-1].type == "turn.failed" and rows[-1].data["code"] == "lease_expired"
    assert [r.seq for r in rows] == list(range(1, len(rows) + 1))

    heir = celery_workers.start("heir", pool="solo", settings=REDELIVERING,
                                lease_seconds=LEASE_SECONDS)
    redelivered = wait_for(lambda: heir.results().get(task_id), timeout=30,
                           what=f"the redelivery of {task_id}", detail=celery_workers.logs)
    assert redelivered[1] == "skipped"

    assert Refund.objects.count() == 1
    refund = Refund.objects.get()
    assert refund.run_id == continuation.pk and refund.order_id == "K-7"
    after = Run.objects.get(pk=continuation.pk)
    assert after.status == RunStatus.FAILED and after.attempts == 1
    assert [(r.seq, r.type) for r in events(after)] == [(r.seq, r.type) for r in rows]
    types = [r.type for r in rows]
    assert types.count("turn.started") == 1 and types.count("tool.started") == 1
