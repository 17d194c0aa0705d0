"""Zombie workers: a worker frozen (SIGSTOP) in a refund's turn wakes (SIGCONT) after the
reaper failed its run with ``lease_expired``, and moves no money.

The refund agent records its ``Refund`` row through ``afenced``, together with its
``tool.completed`` event, right after it stored ``tool.started``. Each trial freezes
the worker somewhere in that stretch, lets the lease lapse, reaps, wakes the worker
and checks the rows. Three places to freeze, in turn:

``at_tool_started``
    As soon as the test sees ``tool.started`` stored: the worker is before the
    fence or inside its first statements (where exactly is a race; it is counted).
``waiting_on_refund_insert``
    Inside the fenced transaction, its refund INSERT waiting behind a gate.
``holding_run_lock``
    Inside the fenced transaction after its refund and ``tool.completed`` were
    written, holding the run row lock it took to check its lease, not committed.

A refund gate (an uncommitted ``Refund`` row with the run's id and order id,
unique together) is set up in every trial, so however late the test notices the worker,
the effect cannot have committed before the worker is stopped. The gate is
opened (rolled back) while the worker is stopped, so the worker never sees it.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from symfonic_django import pauses
from symfonic_django.models import Pause, Run, RunRetry, RunStatus, TurnEvent
from symfonic_django.runs import CONTINUATION_TASK, reap_stale_runs, retry, start_run
from symfonic_django.turns import execute_run
from tests.testapp.models import Refund

from ..e2e.stack import wait_for
from .conftest import Gate, Worker, Workers

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

#: The zombie's lease. The fenced transaction's server-side bound is about the same.
LEASE_SECONDS = 2
KINDS = ("at_tool_started", "waiting_on_refund_insert", "holding_run_lock")
TRIALS_PER_KIND = 8
#: libpq reads PGAPPNAME, so every connection of the zombie worker carries this
#: application_name, and the test can tell its sessions apart in pg_stat_activity.
ZOMBIE_APP = "symfonic-zombie-worker"

REFUND_GATE_SQL = (f"INSERT INTO {Refund._meta.db_table} (order_id, amount, run_id, created_at) "
                   "VALUES (%s, 1, %s, now())")
# FOR NO KEY UPDATE lets the worker insert events (their foreign key check takes KEY SHARE)
# but makes its lease check (SELECT ... FOR UPDATE) and its heartbeat wait.
RUN_GATE_SQL = f"SELECT 1 FROM {Run._meta.db_table} WHERE id = %s FOR NO KEY UPDATE"
# Each warning is in the log once with Celery's prefix (a second, bare copy comes from stderr).
LEASE_LOST = re.compile(r"WARNING/\S+\] LeaseLost")


@dataclass(frozen=True)
class Session:
    """One database session of the zombie worker, as pg_stat_activity shows it."""

    state: str
    waiting_on_lock: bool
    query: str

    @property
    def in_transaction(self) -> bool:
        return self.state.startswith("idle in transaction") or self.waiting_on_lock or (
            self.state == "active" and '"testapp_refund"' in self.query)


def zombie_sessions() -> list[Session]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT state, wait_event_type, query FROM pg_stat_activity "
                       "WHERE application_name = %s AND datname = current_database()",
                       [ZOMBIE_APP])
        return [Session(state or "", wait == "Lock", query or "")
                for state, wait, query in cursor.fetchall()]


def zombie_waits_on(statement: str) -> bool:
    return any(s.waiting_on_lock and statement in s.query for s in zombie_sessions())


def zombie_in_transaction() -> bool:
    return any(s.in_transaction for s in zombie_sessions())


def approved_refund(tenants: dict[str, Any], order_id: str) -> Run:
    """A refund run paused in-process and approved: returns its queued continuation."""
    run = start_run("refund", {"order_id": order_id, "amount": 12.5}, scope=tenants["acme"],
                    dispatch=False)
    assert execute_run(run.pk) == "paused"
    continuation = pauses.approve(Pause.objects.get(run=run).pk, actor="reviewer").continuation
    assert continuation is not None
    return continuation


def task_result(worker: Worker, task_id: str, what: str, workers: Workers) -> str:
    """Wait until ``worker`` logged the task's result (a solo worker is then idle again)."""
    def logged() -> str:
        found = worker.results().get(task_id)
        return found[1] if found else ""

    return wait_for(logged, timeout=30, what=f"{what} ({task_id})", detail=workers.logs)


def event_rows(run_id: Any) -> list[tuple[int, str]]:
    return list(TurnEvent.objects.filter(run_id=run_id).order_by("seq")
                .values_list("seq", "type"))


def start_zombie(workers: Workers) -> Worker:
    with pytest.MonkeyPatch.context() as patch:  # only the worker's environment
        patch.setenv("PGAPPNAME", ZOMBIE_APP)
        return workers.start("zombie", pool="solo", lease_seconds=LEASE_SECONDS)


@dataclass
class Trial:
    kind: str
    run_id: Any
    frozen_in_fence: bool
    log: str
    seconds: float

    @property
    def lease_lost_lines(self) -> int:
        return len(LEASE_LOST.findall(self.log))

    @property
    def woke_into(self) -> str:
        """What stopped the woken worker, from its log."""
        if "is no longer this worker's" in self.log:
            return "fence refused"  # the lease check before or at the end of the fence
        if "symfonic_event_run_seq" in self.log:
            return "event seq taken"  # its tool.completed collided with the reaper's turn.failed
        if "server closed the connection" in self.log or "terminating connection" in self.log:
            return "server ended it"
        return "other"


def freeze_and_reap(kind: str, zombie: Worker, workers: Workers, tenants: dict[str, Any],
                    number: int) -> Trial:
    """One trial: freeze the zombie at ``kind``, reap its run, wake it, let it finish."""
    started = time.monotonic()
    continuation = approved_refund(tenants, f"Z-{number}")
    run_id = continuation.pk
    mark = len(zombie.log())
    refund_gate = Gate(REFUND_GATE_SQL, [f"Z-{number}", str(run_id)])
    run_gate: Gate | None = None
    stopped = False
    try:
        [task_id] = workers.send(CONTINUATION_TASK, str(run_id))
        if kind == "at_tool_started":
            # Poll hard: from tool.started the worker reaches its fence within milliseconds.
            wait_for(lambda: TurnEvent.objects.filter(run_id=run_id, type="tool.started")
                     .exists(), timeout=30, what="tool.started", detail=workers.logs,
                     interval=0.0002)
        else:
            wait_for(lambda: zombie_waits_on('INSERT INTO "testapp_refund"'), timeout=30,
                     what="the refund insert to wait on the gate", detail=workers.logs)
            if kind == "holding_run_lock":
                run_gate = Gate(RUN_GATE_SQL, [str(run_id)])
                refund_gate.open()
                wait_for(lambda: zombie_waits_on("FOR UPDATE"), timeout=30,
                         what="the fence's lease check to wait on the run gate",
                         detail=workers.logs)
        os.kill(zombie.pid, signal.SIGSTOP)
        stopped = True
        frozen_in_fence = zombie_in_transaction()
        refund_gate.open()
        if run_gate is not None:
            run_gate.open()
            # The stopped worker's lease check gets the lock server-side and keeps it.
            wait_for(lambda: any(s.state.startswith("idle in transaction")
                                 and "FOR UPDATE" in s.query for s in zombie_sessions()),
                     timeout=10, what="the frozen worker to hold the run row lock")

        reaped = wait_for(reap_stale_runs, timeout=LEASE_SECONDS * 3 + 10,
                          what="the reaper to fail the run", detail=workers.logs, interval=0.02)
        assert reaped == 1
        if kind == "holding_run_lock":
            # The reaper could take the row lock only once the server ended the frozen
            # transaction (idle_in_transaction_session_timeout). The ended session leaves
            # pg_stat_activity a moment after it released its locks, hence the short wait.
            wait_for(lambda: not zombie_in_transaction(), timeout=1,
                     what="the frozen transaction to be gone", detail=lambda: str(
                         zombie_sessions()))
        elif kind == "waiting_on_refund_insert":
            # docs/design.md section 3: a worker frozen inside a fenced transaction has it ended by the
            # server about a lease later. Wake it only after that, to see that path.
            wait_for(lambda: not zombie_in_transaction(), timeout=LEASE_SECONDS * 3,
                     what="the server to end the frozen fenced transaction")
        os.kill(zombie.pid, signal.SIGCONT)
        stopped = False
        outcome = task_result(zombie, task_id, "the woken worker to finish", workers)
    finally:
        if stopped:
            os.kill(zombie.pid, signal.SIGCONT)
        refund_gate.open()
        if run_gate is not None:
            run_gate.open()
    trial = Trial(kind=kind, run_id=run_id, frozen_in_fence=frozen_in_fence,
                  log=zombie.log()[mark:], seconds=time.monotonic() - started)

    # The invariants, on the rows.
    assert outcome == "failed", trial.log
    assert not Refund.objects.filter(run_id=run_id).exists(), trial.log
    failed = Run.objects.get(pk=run_id)
    assert failed.status == RunStatus.FAILED
    assert failed.error is not None and failed.error["code"] == "lease_expired"
    assert (failed.attempts, failed.epoch) == (1, 1)
    rows = event_rows(run_id)
    assert [seq for seq, _ in rows] == list(range(1, len(rows) + 1)), rows
    assert [t for _, t in rows] == ["turn.started", "tool.started", "turn.failed"], rows
    # However it woke, the worker ends up finding its lease lost: the fence refuses, or
    # (its fenced transaction failed on the server's disconnect or on the taken seq) the
    # turn's ending does, through the heartbeat or runs.end.
    assert trial.lease_lost_lines >= 1, trial.log
    if kind != "at_tool_started":  # woken only after the server ended its transaction
        assert trial.woke_into == "server ended it", trial.log
    return trial


def test_a_frozen_worker_commits_no_refund_after_the_reaper_failed_its_run(
        tenants: dict[str, Any], celery_workers: Workers) -> None:
    started = time.monotonic()
    zombie = start_zombie(celery_workers)
    trials = [freeze_and_reap(KINDS[n % len(KINDS)], zombie, celery_workers, tenants, n)
              for n in range(TRIALS_PER_KIND * len(KINDS))]

    failed_ids = Run.objects.filter(status=RunStatus.FAILED).values("pk")
    assert Refund.objects.filter(run_id__in=failed_ids).count() == 0
    assert Refund.objects.count() == 0
    per_kind = Counter(t.kind for t in trials)
    assert all(per_kind[kind] == TRIALS_PER_KIND for kind in KINDS)
    in_fence = sum(t.frozen_in_fence for t in trials if t.kind == "at_tool_started")
    kinds = "; ".join(
        f"{kind} {per_kind[kind]} (woke into "
        f"{dict(Counter(t.woke_into for t in trials if t.kind == kind))}, "
        f"{sum(t.seconds for t in trials if t.kind == kind) / per_kind[kind]:.1f}s each)"
        for kind in KINDS)
    print(f"\nzombie worker: {len(trials)} trials: {kinds}; at_tool_started froze "
          f"{per_kind['at_tool_started'] - in_fence} before the fence and {in_fence} inside "
          f"it; refunds for failed runs 0; LeaseLost lines "
          f"{sum(t.lease_lost_lines for t in trials)} in {len(trials)}/{len(trials)} trials; "
          f"events contiguous in all; {time.monotonic() - started:.1f}s")


def test_an_operator_retry_of_a_lease_expired_run_completes_it_exactly_once(
        tenants: dict[str, Any], celery_workers: Workers) -> None:
    zombie = start_zombie(celery_workers)
    frozen = freeze_and_reap("waiting_on_refund_insert", zombie, celery_workers, tenants, 0)
    zombie.kill_group()
    healthy = celery_workers.start("healthy", pool="solo")
    operator = get_user_model().objects.create(username="operator", is_staff=True)

    retried = retry(frozen.run_id, actor=operator, comment="worker froze; no refund recorded")
    assert retried.status == RunStatus.QUEUED and retried.attempts == 2
    # retry() sends the task by name to the default queue; the fixture's workers
    # consume a queue of this test's own, so it is sent there too.
    [task_id] = celery_workers.send(CONTINUATION_TASK, str(frozen.run_id))
    assert task_result(healthy, task_id, "the retried run", celery_workers) == "completed"
    [duplicate] = celery_workers.send(CONTINUATION_TASK, str(frozen.run_id))
    assert task_result(healthy, duplicate, "the duplicate delivery", celery_workers) == "skipped"

    run = Run.objects.get(pk=frozen.run_id)
    assert run.status == RunStatus.COMPLETED and run.error is None
    assert (run.attempts, run.epoch) == (2, 2)
    refund = Refund.objects.get(run_id=run.pk)  # exactly one
    assert Refund.objects.count() == 1 and refund.order_id == "Z-0"
    assert run.output is not None
    assert (run.output["refunded"], run.output["refund_id"]) == (True, refund.pk)
    [audit] = RunRetry.objects.filter(run=run)
    assert (audit.actor, audit.attempt, audit.via) == (operator, 2, "python")
    assert audit.previous_error is not None
    assert audit.previous_error["code"] == "lease_expired"
    rows = event_rows(run.pk)
    assert [seq for seq, _ in rows] == list(range(1, len(rows) + 1)), rows
    types = [t for _, t in rows]
    assert types[:5] == ["turn.started", "tool.started", "turn.failed", "turn.started",
                         "tool.started"], rows
    assert types.count("tool.completed") == 1 and types[-1] == "turn.completed"
