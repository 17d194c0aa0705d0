"""The database ends a worker's connection (``pg_terminate_backend``) during a claim or a stream.

Each batch runs trials of both kinds side by side, each in a lane of its own (one
queue, one solo worker whose sessions carry the lane's ``application_name``). Only
the session doing the work is ended (the one whose statement is the event insert),
not the idle ones of the worker's pool. The worker process lives on.

``during_claim``
    The claim is under way: its insert of ``turn.started`` waits behind a gate (an
    uncommitted event with seq 1); the worker's sessions are ended. The claim is one
    transaction, so the run is still ``queued`` with epoch 0 and no event: never
    ``running`` without its ``turn.started``. The task fails; the message is gone, and
    the overdue sweep (``resend_overdue_runs``) sends the run again: the same worker
    then completes it, with one turn and one refund.
``during_stream``
    The turn has streamed a random number of deltas when its session is ended. The
    turn cannot store another event, nor its end: the run stays ``running`` until its
    lease lapses and the reaper fails it ``lease_expired``. Every delta stored before is
    still there, in order, before ``turn.failed``. The worker then closes the broken
    connection before its next task (``test_..._serves_its_next_task`` below); each of
    these trials still gets a new worker, to keep the trials independent.

Every trial then passes ``assert_sound``: events contiguous with one terminal event
per turn, the status final, at most one refund (and only with its ``tool.completed``),
the approval audited once.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest

from symfonic_django.models import Run, RunStatus, TurnEvent
from symfonic_django.runs import reap_stale_runs, resend_overdue_runs
from tests.testapp.models import Refund

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
    wait_lease_lapsed,
)

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

KINDS = ("during_claim", "during_stream")
TRIALS_PER_KIND = 20
LANES_PER_KIND = 2
LEASE_SECONDS = 2
STREAM_DELTAS = (1, 40)


@dataclass
class Trial:
    kind: str
    number: int
    lane: Lane
    run_id: Any
    gate: Gate | None = None
    target: int = 0
    task_id: str = ""
    ended_sessions: int = 0
    at_end: list[tuple[int, str]] = field(default_factory=list)
    failure: str = ""  # how the task of the cut-off turn ended
    outcomes: list[str] = field(default_factory=list)

    def held(self) -> bool:
        if self.kind == "during_claim":
            return self.lane.waiting_on(EVENT_INSERT) is not None
        return TurnEvent.objects.filter(run_id=self.run_id,
                                        type="message.delta").count() >= self.target


def prepare(kind: str, number: int, lane: Lane, tenants: dict[str, Any],
            rng: random.Random) -> Trial:
    if kind == "during_claim":
        run = approved_refund(tenants["acme"], f"T-{number}")
        return Trial(kind, number, lane, run.pk, gate=event_gate(run.pk, 1))
    run = approved_stream(400, 0.01)
    return Trial(kind, number, lane, run.pk, target=rng.randint(*STREAM_DELTAS))


def cut_each_when_held(trials: list[Trial]) -> None:
    """End a trial's worker sessions the moment it reaches its point."""
    def cut(trial: Trial) -> bool:
        if not trial.held():
            return False
        trial.ended_sessions = trial.lane.terminate(EVENT_INSERT)
        return True

    act_on_each_when_held(trials, cut)


def test_a_worker_whose_connection_is_ended_during_a_claim_or_a_stream(
        tenants: dict[str, Any], lanes: Lanes) -> None:
    started = time.monotonic()
    rng = random.Random(20261211)
    by_kind = {kind: [lanes.make(f"{kind}-{i}", lease_seconds=LEASE_SECONDS)
                      for i in range(LANES_PER_KIND)] for kind in KINDS}
    lanes.start_all()
    done: list[Trial] = []
    while len(done) < TRIALS_PER_KIND * len(KINDS):
        trials = [prepare(kind, len(done) + i, lane, tenants, rng)
                  for i, (kind, lane) in enumerate((k, lane) for k in KINDS
                                                   for lane in by_kind[k])]
        try:
            for trial in trials:
                trial.task_id = trial.lane.send(trial.run_id)
            cut_each_when_held(trials)
        finally:
            for trial in trials:
                if trial.gate is not None:
                    trial.gate.open()

        for trial in trials:  # the cut-off task fails: its worker saw the connection go
            assert trial.ended_sessions == 1, trial.ended_sessions
            [trial.failure] = trial.lane.wait_outcome(trial.task_id)
            trial.at_end = event_rows(trial.run_id)
            run = Run.objects.get(pk=trial.run_id)
            if trial.kind == "during_claim":  # no half-claimed run
                assert (run.status, run.epoch, trial.at_end) == (RunStatus.QUEUED, 0, []), (
                    run.status, run.epoch, trial.at_end)
            else:
                assert run.status == RunStatus.RUNNING, (run.status, trial.at_end)
                types = assert_stream(trial.run_id, final=False)
                assert types[0] == "turn.started" and set(types[1:]) == {"message.delta"}

        claims = [t for t in trials if t.kind == "during_claim"]
        overdue = [Run.objects.get(pk=t.run_id).resend_after for t in claims]
        assert resend_overdue_runs(now=max(filter(None, overdue))) == len(claims)
        # The sweep sent them through this process's broker; the lanes have queues of
        # their own, so each is sent there as well, as the sweep would have.
        for trial in claims:
            trial.task_id = trial.lane.send(trial.run_id)

        for trial in trials:
            if trial.kind == "during_stream":  # see the module docstring: a new worker
                worker = trial.lane.current  # idle, its task failed: no fault of the trial
                trial.lane.kill(Process(worker, worker.pid))
                trial.lane.start(wait=False)
        streams = [t.run_id for t in trials if t.kind == "during_stream"]
        wait_lease_lapsed(streams, timeout=LEASE_SECONDS + 10)
        assert reap_stale_runs() >= len(streams)

        for trial in trials:
            if trial.kind == "during_claim":
                trial.outcomes = trial.lane.wait_outcome(trial.task_id)
            run = assert_sound(trial.run_id)
            types = [t for _, t in event_rows(trial.run_id)]
            assert types.count("turn.started") == 1 and run.epoch == 1, types
            if trial.kind == "during_claim":
                assert trial.outcomes == ["completed"], (trial.outcomes, trial.lane.logs())
                assert run.status == RunStatus.COMPLETED and run.sends == 2
                assert Refund.objects.get(run_id=run.pk).order_id == f"T-{trial.number}"
            else:
                assert run.status == RunStatus.FAILED, run.status
                assert run.error is not None and run.error["code"] == "lease_expired"
                assert types[:-1] == [t for _, t in trial.at_end], types
        done += trials
        for trial in trials:
            trial.lane.current.wait_ready()

    per_kind = Counter(t.kind for t in done)
    assert all(per_kind[kind] == TRIALS_PER_KIND for kind in KINDS)
    assert Refund.objects.count() == per_kind["during_claim"]
    deltas = [len(t.at_end) - 1 for t in done if t.kind == "during_stream"]
    notes = {
        "during_claim": "queued with no event and epoch 0 after the cut in every trial, sent "
                        "again by the overdue sweep and completed once by the same worker",
        "during_stream": f"cut after {min(deltas)}..{max(deltas)} deltas, every stored delta "
                         f"kept before turn.failed",
    }
    print()
    for kind in KINDS:
        mine = [t for t in done if t.kind == kind]
        runs = Run.objects.filter(pk__in=[t.run_id for t in mine])
        statuses = Counter(f"{r.status} {r.error['code']}" if r.error else str(r.status)
                           for r in runs)
        refunds = Refund.objects.filter(run_id__in=[t.run_id for t in mine]).count()
        print(f"pg_terminate_backend {kind}: {len(mine)} trials, {sum(t.ended_sessions for t in mine)}"
              f" sessions ended; the cut-off tasks {dict(Counter(t.failure for t in mine))}; "
              f"runs {dict(statuses)}; refunds {refunds}, none twice; {notes[kind]}")
    print(f"pg_terminate_backend: {len(done)} trials in {elapsed(started)}: events contiguous, "
          f"one terminal event per turn, final statuses, approvals audited once, in all")


def test_a_worker_serves_its_next_task_after_its_connection_was_ended_mid_stream(
        tenants: dict[str, Any], lanes: Lanes) -> None:
    """A database restart, a failover or an operator ending a session must cost the turn
    that was using it, not every later turn of the worker."""
    lane = lanes.make("next-task", lease_seconds=LEASE_SECONDS)
    lanes.start_all()
    cut = prepare("during_stream", 0, lane, tenants, random.Random(1))
    cut.task_id = lane.send(cut.run_id)
    cut_each_when_held([cut])
    assert cut.ended_sessions == 1
    assert lane.wait_outcome(cut.task_id)[0].startswith("raised:")

    later = [approved_refund(tenants["acme"], f"N-{i}") for i in range(3)]
    outcomes = [lane.wait_outcome(lane.send(run.pk)) for run in later]
    assert outcomes == [["completed"]] * 3, outcomes
    for run in later:
        assert_sound(run.pk)
