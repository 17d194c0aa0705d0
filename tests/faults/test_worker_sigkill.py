"""A worker SIGKILLed at four points of a turn: no refund twice, no turn re-run, no event lost.

Each batch runs one trial of every kind side by side, each in a lane of its own (one
queue), and kills in one of two ways, batch by batch (SIGKILL: no shutdown, no
acknowledgement):

``worker``
    The lane has two solo workers; the one that took the task is killed and a new one
    started in its place. The broker gives the killed worker's message to the other
    worker once it is a second old (``acks_late``, ``redelivery_settings``).
``pool_process``
    The lane has one prefork worker with one pool process; that process is killed. The
    worker requeues the message at once (``reject_on_worker_lost``) and its new pool
    process takes it.

The kinds, and what each must leave in the rows:

``before_claim``
    The task was received and the claim is under way, not committed: its insert of
    ``turn.started`` waits behind a gate (an uncommitted event with seq 1). After the
    kill the run is still ``queued`` with no event and epoch 0 (no half-claimed run),
    and the redelivery claims it and completes it: exactly one turn, one refund. (A
    redelivery that comes while the dead claim's session still holds the run row,
    possible only with ``pool_process``, finds nothing to claim; the overdue sweep
    then sends the run again. Counted.)
``after_claim``
    The claim committed (``turn.started`` stored) and the agent has produced nothing
    (it waits for a file that never comes). The run stays ``running`` until its lease
    lapses, the reaper fails it ``lease_expired``, and the redelivery is ``skipped``:
    never re-run silently.
``mid_stream``
    Killed after a random number of streamed deltas: the same as ``after_claim``, with
    every delta stored before the kill still there, in order, before ``turn.failed``.
``after_effect``
    The refund's fenced transaction committed (the refund row and ``tool.completed``
    together) and the turn is held before its next event (a gate at seq 4). Exactly one
    refund, the run reaped ``lease_expired``, the redelivery ``skipped``.

Every trial then passes ``assert_sound``: events contiguous with one terminal event
per turn, the status final, at most one refund (and only with its ``tool.completed``),
the approval audited once.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from symfonic_django.models import Run, RunStatus, TurnEvent
from symfonic_django.runs import reap_stale_runs, resend_overdue_runs
from tests.testapp.models import Refund

from ..e2e.stack import wait_for
from ..integration.conftest import Gate
from .conftest import (
    EVENT_INSERT,
    Lane,
    Lanes,
    Process,
    act_on_each_when_held,
    approved_refund,
    approved_stream,
    assert_sound,
    assert_stream,
    elapsed,
    event_gate,
    event_rows,
    wait_backends_gone,
    wait_lease_lapsed,
)

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

KINDS = ("before_claim", "after_claim", "mid_stream", "after_effect")
MODES = ("worker", "pool_process")
TRIALS_PER_KIND = 20  # half of them in each mode
LEASE_SECONDS = 2
REDELIVERING = "tests.integration.redelivery_settings"
#: The mid-stream kill comes after this many stored deltas (drawn per trial).
MID_STREAM_DELTAS = (1, 40)


@dataclass
class Trial:
    mode: str
    kind: str
    number: int
    lane: Lane
    run_id: Any
    gates: list[Gate] = field(default_factory=list)
    target: int = 0  # mid_stream: deltas stored before the kill
    task_id: str = ""
    backends: list[int] = field(default_factory=list)  # the killed process's sessions
    at_kill: list[tuple[int, str]] = field(default_factory=list)  # rows once they ended
    outcomes: list[str] = field(default_factory=list)
    swept: bool = False  # before_claim: sent again by the overdue sweep

    def holder(self) -> Process | None:
        """The process to kill, once it reached the point this kind kills it at."""
        if self.kind == "before_claim":
            return self.lane.waiting_on(EVENT_INSERT)
        events = TurnEvent.objects.filter(run_id=self.run_id)
        if self.kind == "after_claim":
            return self.lane.running(self.run_id) if events.exists() else None
        if self.kind == "mid_stream":
            deltas = events.filter(type="message.delta").count()
            return self.lane.running(self.run_id) if deltas >= self.target else None
        if Refund.objects.filter(run_id=self.run_id).exists():
            return self.lane.waiting_on(EVENT_INSERT)
        return None

    def open_gates(self) -> None:
        for gate in self.gates:
            gate.open()


def prepare(mode: str, kind: str, number: int, lane: Lane, tenants: dict[str, Any],
            rng: random.Random, tmp_path: Path) -> Trial:
    if kind == "before_claim":
        run = approved_refund(tenants["acme"], f"K-{number}")
        return Trial(mode, kind, number, lane, run.pk, gates=[event_gate(run.pk, 1)])
    if kind == "after_claim":  # the agent waits for a file nobody makes
        run = approved_stream(5, 0, gate=str(tmp_path / f"never-{number}"))
        return Trial(mode, kind, number, lane, run.pk)
    if kind == "mid_stream":
        run = approved_stream(400, 0.01)
        return Trial(mode, kind, number, lane, run.pk, target=rng.randint(*MID_STREAM_DELTAS))
    run = approved_refund(tenants["acme"], f"K-{number}")
    # turn.started 1, tool.started 2, tool.completed 3 (with the refund): hold seq 4.
    return Trial(mode, kind, number, lane, run.pk, gates=[event_gate(run.pk, 4)])


def kill_each_when_held(trials: list[Trial]) -> None:
    """SIGKILL a trial's process the moment it reaches its point, and open its gates."""
    def kill(trial: Trial) -> bool:
        process = trial.holder()
        if process is None:
            return False
        trial.backends = trial.lane.kill(process)
        # At once: a gate only stands for the moment the process was in, and a killed
        # process's session must not keep holding what the gate made it wait in.
        trial.open_gates()
        return True

    act_on_each_when_held(trials, kill)


def check_at_kill(trial: Trial) -> None:
    """What the kill left, before the reaper (and, but for pool_process before_claim,
    before any redelivery could claim the run)."""
    run = Run.objects.get(pk=trial.run_id)
    rows = trial.at_kill
    if trial.kind == "before_claim":
        # No half-claimed run: the claim is one transaction, and it never committed.
        assert (run.status, run.epoch, run.worker, rows) == (RunStatus.QUEUED, 0, "", []), (
            run.status, run.epoch, run.worker, rows)
        return
    assert run.status == RunStatus.RUNNING and run.epoch == 1, run.status
    types = assert_stream(trial.run_id, final=False)
    assert types[0] == "turn.started" and types.count("turn.started") == 1, types
    if trial.kind == "after_claim":
        assert types == ["turn.started"], types
    elif trial.kind == "mid_stream":
        assert types[1:] == ["message.delta"] * (len(types) - 1), types
        assert len(types) - 1 >= trial.target
    else:
        assert Refund.objects.filter(run_id=trial.run_id).count() == 1
        # The dead process's session may still have stored the delta it was sending (seq 4):
        # its insert was in flight at the kill and commits on its own once the gate opens.
        assert types[:3] == ["turn.started", "tool.started", "tool.completed"], types
        assert types[3:] in ([], ["message.delta"]), types


def redeliver_before_claim(trial: Trial) -> None:
    """Wait for the redelivery of a killed claim to complete the run; if it found the row
    still held by the dead claim (and so nothing to claim), run the overdue sweep."""
    trial.outcomes = trial.lane.wait_outcome(trial.task_id)
    run = Run.objects.get(pk=trial.run_id)
    if trial.outcomes == ["skipped"] and run.status == RunStatus.QUEUED:
        assert trial.mode == "pool_process", trial.outcomes
        trial.swept = True
        assert resend_overdue_runs(now=run.resend_after) == 1
        # The sweep sent it through this process's broker; the lane has a queue of its
        # own, so it is sent there as well, as the sweep would have.
        trial.task_id = trial.lane.send(trial.run_id)
        trial.outcomes += trial.lane.wait_outcome(trial.task_id)
    wait_for(lambda: Run.objects.get(pk=trial.run_id).status == RunStatus.COMPLETED,
             timeout=30, what="the redelivered turn to complete", detail=trial.lane.logs)


def check_final(trial: Trial) -> None:
    run = assert_sound(trial.run_id)
    types = [t for _, t in event_rows(trial.run_id)]
    assert run.attempts == 1 and run.epoch == 1, (run.attempts, run.epoch)
    assert types.count("turn.started") == 1, types  # one claim, never a second turn
    if trial.kind == "before_claim":
        assert run.status == RunStatus.COMPLETED, (run.status, run.error)
        assert trial.outcomes.count("completed") == 1, trial.outcomes
        assert set(trial.outcomes) <= {"completed", "skipped"}, trial.outcomes
        assert run.output is not None and run.output["refunded"] is True
        assert Refund.objects.get(run_id=trial.run_id).order_id == f"K-{trial.number}"
        return
    assert run.status == RunStatus.FAILED, run.status
    assert run.error is not None and run.error["code"] == "lease_expired", run.error
    assert set(trial.outcomes) == {"skipped"}, trial.outcomes
    assert types[:len(trial.at_kill)] == [t for _, t in trial.at_kill]
    assert len(types) == len(trial.at_kill) + 1, types  # only the reaper's turn.failed since
    if trial.kind == "after_effect":
        assert Refund.objects.filter(run_id=trial.run_id).count() == 1


def any_ready(lane: Lane) -> bool:
    return any(" ready." in worker.log() for worker in lane.alive)


def run_batch(mode: str, lanes: dict[str, Lane], first: int, tenants: dict[str, Any],
              rng: random.Random, tmp_path: Path) -> list[Trial]:
    for lane in lanes.values():  # a ready worker to take each task
        wait_for(partial(any_ready, lane), timeout=60, what=f"a ready worker in lane "
                 f"{lane.name}", detail=lane.logs)
    trials = [prepare(mode, kind, first + i, lanes[kind], tenants, rng, tmp_path)
              for i, kind in enumerate(KINDS)]
    try:
        for trial in trials:
            trial.task_id = trial.lane.send(trial.run_id)
        kill_each_when_held(trials)
    finally:
        for trial in trials:
            trial.open_gates()
    if mode == "worker":  # each killed worker's successor, started in the background
        for lane in lanes.values():
            lane.start(wait=False)
    for trial in trials:
        wait_backends_gone(trial.backends)
        trial.at_kill = event_rows(trial.run_id)
        if not (mode == "pool_process" and trial.kind == "before_claim"):
            check_at_kill(trial)

    running = [t.run_id for t in trials if t.kind != "before_claim"]
    wait_lease_lapsed(running, timeout=LEASE_SECONDS + 10)
    assert reap_stale_runs() >= len(running)
    assert Run.objects.filter(pk__in=running, status=RunStatus.FAILED).count() == len(running)

    for trial in trials:
        if trial.kind == "before_claim":  # the redelivery runs the whole turn
            redeliver_before_claim(trial)
        else:
            trial.outcomes = trial.lane.wait_outcome(trial.task_id)
        check_final(trial)
    return trials


def test_a_worker_sigkilled_before_or_after_its_claim_mid_stream_or_after_its_refund(
        tenants: dict[str, Any], lanes: Lanes, tmp_path: Path) -> None:
    started = time.monotonic()
    rng = random.Random(20261210)
    by_mode = {
        "worker": {kind: lanes.make(f"w-{kind}", settings=REDELIVERING,
                                    lease_seconds=LEASE_SECONDS) for kind in KINDS},
        "pool_process": {kind: lanes.make(f"p-{kind}", lease_seconds=LEASE_SECONDS,
                                          pool="prefork")
                         for kind in KINDS},
    }
    for lane in by_mode["worker"].values():
        lane.start(wait=False)  # each solo lane has two workers: see the module docstring
    lanes.start_all()
    done: list[Trial] = []
    for batch in range(TRIALS_PER_KIND):
        mode = MODES[batch % len(MODES)]
        done += run_batch(mode, by_mode[mode], len(done), tenants, rng, tmp_path)

    refund_runs = [t.run_id for t in done if t.kind in ("before_claim", "after_effect")]
    assert Refund.objects.count() == len(refund_runs)
    assert set(Refund.objects.values_list("run_id", flat=True)) == set(refund_runs)
    per_kind = Counter(t.kind for t in done)
    assert all(per_kind[kind] == TRIALS_PER_KIND for kind in KINDS)
    deltas = [len(t.at_kill) - 1 for t in done if t.kind == "mid_stream"]
    notes = {
        "before_claim": f"queued with no event and epoch 0 after the kill in every "
                        f"solo-worker trial; completed once by the redelivery, "
                        f"{sum(t.swept for t in done)} of them only after the overdue sweep",
        "after_claim": "events [turn.started, turn.failed]: never re-run",
        "mid_stream": f"killed after {min(deltas)}..{max(deltas)} deltas, every stored delta "
                      f"kept before turn.failed: never re-run",
        "after_effect": f"the dead process's in-flight delta committed in "
                        f"{sum(len(t.at_kill) == 4 for t in done if t.kind == 'after_effect')}"
                        f"/{per_kind['after_effect']}: never re-run",
    }
    print()
    for kind in KINDS:
        mine = [t for t in done if t.kind == kind]
        modes = Counter(t.mode for t in mine)
        runs = Run.objects.filter(pk__in=[t.run_id for t in mine])
        statuses = Counter(f"{r.status} {r.error['code']}" if r.error else str(r.status)
                           for r in runs)
        refunds = Refund.objects.filter(run_id__in=[t.run_id for t in mine]).count()
        print(f"SIGKILL {kind}: {len(mine)} trials ({modes['worker']} killing the solo worker,"
              f" {modes['pool_process']} its prefork pool process): runs {dict(statuses)}; "
              f"deliveries after the kill {dict(Counter(o for t in mine for o in t.outcomes))};"
              f" refunds {refunds}, none twice; {notes[kind]}")
    print(f"SIGKILL: {len(done)} trials in {elapsed(started)}: events contiguous, one terminal "
          f"event per turn, final statuses, approvals audited once, in all")
