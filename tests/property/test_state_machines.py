"""Hypothesis stateful tests of both state machines (``runs.EDGES`` and ``pauses.EDGES``).

One ``RuleBasedStateMachine`` drives the real functions against the database in
random interleavings: answers of every kind, cancels, expiry, claims,
heartbeats, the reaper, operator retries, ends of turns and fenced effects,
each with the current or a stale fencing epoch, across the three sibling pauses
of each paused run (one or two at the start, another whenever all settled), the
continuations they create, and a run whose agent raises. A small model
predicts every outcome (which call is refused and with what, which edge each
row takes, how many events a run has); after every step the invariants are
checked against the rows:

- at most one answer per pause (one ``Decision`` once it left ``pending``);
- at most one continuation per paused run, at most one running run per lineage;
- only allowed edges (each observed status change is a chain of ``EDGES``);
- contiguous ``seq`` per run, each claim's turn closed by one terminal event;
- no fenced effect after a lease is lost (a marker only for a fence that held,
  stored inside its own claim's turn, before that turn's end);
- no refusal changes a row.

A failure prints the shrunk steps as Python (``state.approve(pause=0)``,
``state.frozen_fenced_effect(run=0)``) and a blob: decorate
``RunsAndPauses`` with the printed ``@reproduce_failure(...)`` to replay it.
``SYMFONIC_PROPERTY_EXAMPLES`` and ``SYMFONIC_PROPERTY_STEPS`` select a longer run.

The machine runs inside one pytest test marked ``django_db(transaction=True)``:
the functions commit, take row locks and run their on-commit hooks as in a
deployment, which one test-wide transaction would hide. Each machine starts by
deleting the rows of the one before (a few rows), rather than a flush of every
table per example. (``RunsAndPauses.TestCase`` on Django's
``TransactionTestCase`` would work too, without pytest-django's fixtures.)

Single-threaded on purpose: the model must know the one right outcome of each
step. Races between processes are the fault suite's (real workers, SIGSTOP,
``pg_terminate_backend``).
"""

from __future__ import annotations

import os
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from functools import wraps
from itertools import pairwise
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.db import transaction
from django.db.models import QuerySet
from django.test import override_settings
from django.utils import timezone
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from symfonic_django import events as ev
from symfonic_django import pauses, runs
from symfonic_django.exceptions import (
    AlreadyAnswered,
    InvalidAnswer,
    PauseCancelled,
    PauseExpired,
    RunNotRetryable,
)
from symfonic_django.models import Decision, Pause, PauseStatus, Run, RunRetry, RunStatus, TurnEvent
from symfonic_django.runs import LeaseLost
from symfonic_django.turns import execute_run
from tests.testapp.models import Refund

#: Examples (machines) and steps per example. The defaults keep this file well under a
#: minute on SQLite and PostgreSQL; the long CI leg raises them through the environment.
EXAMPLES = int(os.environ.get("SYMFONIC_PROPERTY_EXAMPLES") or 40)
STEPS = int(os.environ.get("SYMFONIC_PROPERTY_STEPS") or 40)

#: Rounds run again when the first did not take every edge of both machines.
EXTRA_ROUNDS = 2

PROFILE = settings(
    max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None, print_blob=True,
    # Steps run while Hypothesis generates them: database round trips, whole turns.
    suppress_health_check=[HealthCheck.too_slow],
)

PENDING, ANSWERED = PauseStatus.PENDING, PauseStatus.ANSWERED
EXPIRED, CANCELLED = PauseStatus.EXPIRED, PauseStatus.CANCELLED
QUEUED, RUNNING, PAUSED = RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.PAUSED
FAILED = RunStatus.FAILED
RUN_EDGES = {(source, edge.target) for edge in runs.EDGES.values() for source in edge.sources}
PAUSE_EDGES = {(source, edge.target) for edge in pauses.EDGES.values() for source in edge.sources}
#: Which pause a rule picks, and which run (see ``pause_at`` and ``run_at``).
PAUSE = st.integers(min_value=0, max_value=5)
RUN = st.integers(min_value=0, max_value=3)
#: How far behind the run's epoch a caller is: 0 is the current claim, -1 one never issued.
STALENESS = st.one_of(st.just(0), st.integers(min_value=-1, max_value=2))
SIBLINGS = 3

Rows = dict[str, list[dict[str, Any]]]
Step = Callable[..., None]
#: What the machines did: steps, each edge, each refusal, each committed fence (printed at
#: the end; "machines" counts every machine run, generated, dropped or shrunk).
TALLY: Counter[str] = Counter()


def rows() -> Rows:
    """Every row of every table a transition writes, and of the fenced effect's table."""
    tables: dict[str, QuerySet[Any]] = {
        "run": Run.objects.all(), "pause": Pause.objects.all(),
        "decision": Decision.objects.all(), "retry": RunRetry.objects.all(),
        "event": TurnEvent.objects.all(), "refund": Refund.objects.all()}
    return {name: list(table.order_by("pk").values()) for name, table in tables.items()}


def transition(**strategies: st.SearchStrategy[Any]) -> Callable[[Step], Step]:
    """``@rule(**strategies)``; the invariants read the rows again after each such step."""
    # mypy cannot tell these keywords from rule()'s own `target` and `targets`.
    as_rule: Callable[[Step], Step] = rule(**strategies)  # type: ignore[call-overload]

    def decorate(step: Step) -> Step:
        @wraps(step)
        def run(machine: RunsAndPauses, **arguments: Any) -> None:
            machine.after = None
            TALLY["steps"] += 1
            step(machine, **arguments)
        return as_rule(run)
    return decorate


@dataclass
class RunModel:
    """What the model expects of one run row."""

    pk: str
    root: str
    status: str
    epoch: int
    events: int
    #: How a whole turn of its agent ends, and the events it stores (turn.started, one
    #: message.delta, the end).
    turn: tuple[str, int]
    attempts: int = 1
    lapsed: bool = False
    #: Statuses since the last observation: path[0] was observed, each next one is an edge.
    path: list[str] = field(default_factory=list)


@dataclass
class PauseModel:
    """What the model expects of one pause row."""

    pk: str
    run: str
    status: str = PENDING
    due: bool = False
    path: list[str] = field(default_factory=lambda: [PENDING])


class RunsAndPauses(RuleBasedStateMachine):
    """Random interleavings of every transition of both machines, against the rows."""

    def __init__(self) -> None:
        super().__init__()
        self.runs: dict[str, RunModel] = {}
        self.pauses: dict[str, PauseModel] = {}
        #: The fence markers that must exist: order_id -> (run, epoch of the claim that held).
        self.markers: dict[str, tuple[str, int]] = {}
        self.fences = 0
        self.refused: tuple[str, Rows] | None = None
        self.after: Rows | None = None
        self.on_expire = "fail"
        self.overridden: override_settings | None = None

    # --- setup -------------------------------------------------------------------------

    @initialize(on_expire=st.sampled_from(["fail", "resume"]),
                roots=st.integers(min_value=1, max_value=2))
    def start(self, on_expire: str, roots: int) -> None:
        self.on_expire = on_expire
        # A long lease: only the machine lets one run out, so the model knows exactly
        # which leases lapsed, whatever SYMFONIC_LEASE_SECONDS the environment sets.
        self.overridden = override_settings(SYMFONIC={
            **django_settings.SYMFONIC, "ON_EXPIRE": on_expire, "LEASE_SECONDS": 3600})
        self.overridden.enable()
        # One test database serves every example: start from none of the earlier rows.
        Refund.objects.all().delete()
        Run.objects.all().delete()
        for _ in range(roots):
            self.pause_a_run()
        # And a run that has not started, so the run machine is in play from the first step
        # too, not only once every pause of a paused run is answered. Its agent raises: a
        # whole turn of it fails, to be retried.
        queued = runs.start_run("boom", {}, scope="acme", dispatch=False)
        pk = str(queued.pk)
        self.runs[pk] = RunModel(pk=pk, root=pk, status=QUEUED, epoch=0, events=0,
                                 turn=("fail", 3), path=[QUEUED])

    def pause_a_run(self) -> None:
        """A real turn of the siblings agent: it pauses with three pending pauses."""
        run = runs.start_run("siblings", {"n": SIBLINGS}, scope="acme", dispatch=False)
        pk = str(run.pk)
        # Once retried, a whole turn of it gets its pauses back and ends paused on them
        # (turn.started, message.delta, turn.paused): ``execute`` settles it again.
        model = RunModel(pk=pk, root=pk, status=QUEUED, epoch=0, events=0,
                         turn=("pause", 3), path=[QUEUED])
        self.runs[pk] = model
        assert execute_run(run.pk, worker="setup") == PAUSED
        self.move_run(model, "claim")
        self.move_run(model, "pause")
        model.epoch = 1
        # turn.started, one pause.requested per sibling, message.delta, turn.paused
        model.events = SIBLINGS + 3
        for pause_pk in Pause.objects.filter(run=run).values_list("pk", flat=True):
            self.pauses[str(pause_pk)] = PauseModel(pk=str(pause_pk), run=pk)

    def teardown(self) -> None:
        TALLY["machines"] += 1
        if self.overridden is not None:
            self.overridden.disable()

    # --- the model -------------------------------------------------------------------------

    def any_run(self, status: str) -> bool:
        return any(r.status == status for r in self.runs.values())

    def any_pending(self) -> bool:
        return any(p.status == PENDING for p in self.pauses.values())

    def settled_down(self) -> bool:
        """Nothing left to move but retries: no pending pause, no queued or running run."""
        return not (self.any_pending() or self.any_run(QUEUED) or self.any_run(RUNNING))

    def run_at(self, index: int, status: str) -> RunModel:
        """The ``index``-th run, counting those in ``status`` (the rule's source) first.

        Half or more of the picks reach a run the rule can move; the others, one
        it must refuse. Either way the model, not the pick, predicts the outcome.
        """
        ordered = sorted(self.runs.values(), key=lambda r: r.status != status)
        return ordered[index % len(ordered)]

    def pause_at(self, index: int) -> PauseModel:
        """The ``index``-th pause, counting the pending ones first."""
        ordered = sorted(self.pauses.values(), key=lambda p: p.status != PENDING)
        return ordered[index % len(ordered)]

    def move_run(self, run: RunModel, edge: str) -> None:
        TALLY[f"run {edge}"] += 1
        step = runs.EDGES[edge]
        assert run.status in step.sources, f"model error: {edge} from {run.status}"
        run.status = step.target
        run.path.append(step.target)

    def move_pause(self, pause: PauseModel, edge: str) -> None:
        TALLY[f"pause {edge}"] += 1
        step = pauses.EDGES[edge]
        assert pause.status in step.sources, f"model error: {edge} from {pause.status}"
        pause.status = step.target
        pause.path.append(step.target)

    def siblings(self, pause: PauseModel) -> list[PauseModel]:
        return [p for p in self.pauses.values() if p.run == pause.run]

    def expect_refusal(self, what: str) -> None:
        """The next call is expected to change nothing: keep the rows to compare after."""
        TALLY[f"refused: {what.split(',')[0]}"] += 1
        self.refused = (what, rows())

    def closed(self, pause: PauseModel) -> type[Exception] | None:
        """The refusal an answer or a cancel of ``pause`` meets, if any (``refuse_closed``)."""
        if pause.status == ANSWERED:
            return AlreadyAnswered
        if pause.status == CANCELLED:
            return PauseCancelled
        if pause.status == EXPIRED or pause.due:
            return PauseExpired
        return None

    def settled(self, pause: PauseModel, continuation: Run | None) -> None:
        """``pauses.settle`` after ``pause`` left pending alive: continue once none is pending."""
        paused = self.runs[pause.run]
        assert paused.status == PAUSED
        if any(p.status == PENDING for p in self.siblings(pause)):
            assert continuation is None
            return
        assert continuation is not None, "the last answer must queue the continuation"
        assert continuation.status == QUEUED and str(continuation.parent_id) == paused.pk
        pk = str(continuation.pk)
        assert pk not in self.runs, "settle queued a second continuation"
        self.runs[pk] = RunModel(pk=pk, root=paused.root, status=QUEUED, epoch=0, events=0,
                                 turn=("complete", 3), path=[QUEUED])

    def died(self, pause: PauseModel) -> None:
        """``pauses.settle`` after ``pause`` died: pending siblings cancelled, the run failed."""
        for sibling in self.siblings(pause):
            if sibling.status == PENDING:
                self.move_pause(sibling, "cancel")
        self.move_run(self.runs[pause.run], "abandon")

    # --- the pause machine -----------------------------------------------------------------

    @precondition(lambda self: self.settled_down())
    @transition()
    def pause_another_run(self) -> None:
        """All settled: another run pauses with its siblings.

        Where Hypothesis' swarm testing turned this rule off for the example and
        nothing is left to retry, no rule can run: Hypothesis drops the example
        there (its steps were checked) and generates another.
        """
        self.pause_a_run()

    def answer_with(self, index: int, how: str, call: Callable[[str], pauses.Resolution],
                    refusal: type[Exception] | None = None) -> None:
        """Answer a pause through ``call``; ``refusal`` if the answer itself is invalid."""
        target = self.pause_at(index)
        # The answer is validated before the pause's state is looked at.
        refusal = refusal or self.closed(target)
        if refusal is not None:
            self.expect_refusal(f"{how} of a {target.status} pause (due: {target.due})")
            with pytest.raises(refusal):
                call(target.pk)
            return
        resolution = call(target.pk)
        assert resolution.pause.status == ANSWERED
        self.move_pause(target, "answer")
        self.settled(target, resolution.continuation)

    # One rule per way to answer, so that answers outnumber cancels (each kills a run).

    @precondition(lambda self: self.any_pending())
    @transition(pause=PAUSE)
    def approve(self, pause: int) -> None:
        self.answer_with(pause, "approve", lambda pk: pauses.approve(pk, comment="fine"))

    @precondition(lambda self: self.any_pending())
    @transition(pause=PAUSE)
    def edit(self, pause: int) -> None:
        self.answer_with(pause, "edit", lambda pk: pauses.approve(pk, edited_args={"i": 99}))

    @precondition(lambda self: self.any_pending())
    @transition(pause=PAUSE)
    def reject(self, pause: int) -> None:
        self.answer_with(pause, "reject", lambda pk: pauses.reject(pk, comment="no"))

    @precondition(lambda self: self.any_pending())
    @transition(pause=PAUSE)
    def respond(self, pause: int) -> None:
        self.answer_with(pause, "respond", lambda pk: pauses.respond(pk, "use the other card"))

    @precondition(lambda self: self.any_pending())
    @transition(pause=PAUSE, valid=st.booleans())
    def answer(self, pause: int, valid: bool) -> None:
        """``answer_pause`` with a ``HITLResponse``, or one no approval accepts."""
        decision = {"type": "approve" if valid else "bogus"}
        self.answer_with(
            pause, "answer" if valid else "invalid answer",
            lambda pk: pauses.answer_pause(pk, {"decisions": [decision]}, dispatch=False),
            refusal=None if valid else InvalidAnswer)

    @precondition(lambda self: self.any_pending())
    @transition(pause=PAUSE)
    def cancel(self, pause: int) -> None:
        target = self.pause_at(pause)
        refusal = self.closed(target)
        if refusal is not None:
            self.expect_refusal(f"cancel of a {target.status} pause (due: {target.due})")
            with pytest.raises(refusal):
                pauses.cancel(target.pk, comment="withdrawn")
            return
        resolution = pauses.cancel(target.pk, comment="withdrawn")
        assert resolution.continuation is None
        self.move_pause(target, "cancel")
        self.died(target)

    def overdue(self, pause: PauseModel) -> None:
        """Time passes for ``pause``: its deadline moves into the past (not a transition)."""
        Pause.objects.filter(pk=pause.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
        pause.due = True

    @precondition(lambda self: self.any_pending())
    @transition(pause=PAUSE)
    def make_due(self, pause: int) -> None:
        """A pause falls due but the expiry sweep has not come yet: answers are refused."""
        self.overdue(self.pause_at(pause))

    @precondition(lambda self: self.any_pending())
    @transition(pause=PAUSE, overdue=st.booleans())
    def expire(self, pause: int, overdue: bool) -> None:
        """The expiry sweep reaches a pause; ``overdue`` makes it due first."""
        target = self.pause_at(pause)
        if overdue:
            self.overdue(target)
        if target.status != PENDING or not target.due:
            self.expect_refusal(f"expiry of a {target.status} pause (due: {target.due})")
            assert pauses.expire(target.pk) is None
            return
        resolution = pauses.expire(target.pk)
        assert resolution is not None and resolution.pause.status == EXPIRED
        self.move_pause(target, "expire")
        if self.on_expire == "fail":
            assert resolution.continuation is None
            self.died(target)
        else:
            self.settled(target, resolution.continuation)

    # --- the run machine -------------------------------------------------------------------

    @precondition(lambda self: self.any_run(QUEUED))
    @transition(run=RUN)
    def claim(self, run: int) -> None:
        target = self.run_at(run, QUEUED)
        if target.status != QUEUED:
            self.expect_refusal(f"claim of a {target.status} run")
            assert runs.claim(target.pk, "claimer") is None
            return
        claimed = runs.claim(target.pk, "claimer")
        assert claimed is not None
        self.move_run(target, "claim")
        target.epoch += 1
        target.events += 1
        target.lapsed = False
        assert claimed.epoch == target.epoch

    @precondition(lambda self: self.any_run(RUNNING))
    @transition(run=RUN, behind=STALENESS)
    def heartbeat(self, run: int, behind: int) -> None:
        target = self.run_at(run, RUNNING)
        held = target.status == RUNNING and behind == 0
        if not held:
            self.expect_refusal(f"heartbeat of a {target.status} run, {behind} epoch(s) behind")
        assert runs.extend_lease(target.pk, target.epoch - behind) is held
        if held:
            TALLY["lease renewed"] += 1
            target.lapsed = False

    def stop_renewing(self, run: RunModel) -> None:
        """``run``'s worker froze: its lease runs out (not a transition)."""
        if run.status == RUNNING:
            Run.objects.filter(pk=run.pk).update(
                lease_until=timezone.now() - timedelta(seconds=1))
            TALLY["lease lapsed"] += 1
            run.lapsed = True

    @precondition(lambda self: self.any_run(RUNNING))
    @transition(run=RUN, lapse=st.booleans())
    def reap(self, run: int, lapse: bool) -> None:
        """The reaper's sweep; ``lapse`` lets a running run's lease run out first."""
        if lapse:
            self.stop_renewing(self.run_at(run, RUNNING))
        stale = [r for r in self.runs.values() if r.status == RUNNING and r.lapsed]
        if not stale:
            self.expect_refusal("reap with no lapsed lease")
        assert runs.reap_stale_runs() == len(stale)
        for reaped in stale:
            self.move_run(reaped, "reap")
            reaped.events += 1
            reaped.lapsed = False

    @precondition(lambda self: self.any_run(FAILED))
    @transition(run=RUN)
    def retry(self, run: int) -> None:
        target = self.run_at(run, FAILED)
        if target.status != FAILED:
            self.expect_refusal(f"retry of a {target.status} run")
            with pytest.raises(RunNotRetryable):
                runs.retry(target.pk, comment="again")
            return
        retried = runs.retry(target.pk, comment="again")
        self.move_run(target, "retry")
        target.attempts += 1
        assert retried.attempts == target.attempts

    @precondition(lambda self: self.any_run(RUNNING))
    @transition(run=RUN, behind=STALENESS, outcome=st.sampled_from(["complete", "fail"]))
    def end(self, run: int, behind: int, outcome: str) -> None:
        """A worker ends its turn; only the current claim may, lapsed lease or not."""
        target = self.run_at(run, RUNNING)
        epoch = target.epoch - behind
        terminal: ev.Event = (ev.TurnCompleted(output={"epoch": epoch}) if outcome == "complete"
                              else ev.TurnFailed(code="agent_error", message=f"epoch {epoch}"))
        row = Run.objects.get(pk=target.pk)
        if target.status != RUNNING or behind != 0:
            self.expect_refusal(f"end of a {target.status} run, {behind} epoch(s) behind")
            with pytest.raises(LeaseLost):
                runs.end(row, epoch, target.events + 1, terminal)
            return
        runs.end(row, epoch, target.events + 1, terminal)
        self.move_run(target, outcome)
        target.events += 1
        target.lapsed = False

    def fence(self, target: RunModel, epoch: int, *, live: bool) -> None:
        """A side effect fenced as ``turns.fenced`` does: the effect, the lease check, its event.

        The effect is a marker row; a refused fence must leave none. A ``live``
        worker's heartbeat renews its lease first (when its claim still holds).
        """
        current = target.status == RUNNING and epoch == target.epoch
        held = current and (live or not target.lapsed)
        self.fences += 1
        marker = f"fence-{self.fences}"
        if not held:
            lapsed = " whose lease lapsed" if target.lapsed else ""
            self.expect_refusal(f"fence of a {target.status} run{lapsed}, "
                                f"{target.epoch - epoch} epoch(s) behind")

        def effect() -> None:
            if live:
                assert runs.extend_lease(target.pk, epoch) is current
            with transaction.atomic():
                runs.bound_fenced_transaction()
                Refund.objects.create(order_id=marker, amount=1, run_id=uuid.uuid4())
                runs.hold_lease(target.pk, epoch)
                ev.append(Run.objects.get(pk=target.pk), target.events + 1, ev.ToolCompleted(
                    tool_call_id=marker, name="refund", args={"epoch": epoch}))

        if not held:
            with pytest.raises(LeaseLost):
                effect()
            return
        effect()
        TALLY["fenced effect committed"] += 1
        self.markers[marker] = (target.pk, epoch)
        target.events += 1
        target.lapsed = False

    @precondition(lambda self: self.any_run(RUNNING))
    @transition(run=RUN, behind=STALENESS)
    def fenced_effect(self, run: int, behind: int) -> None:
        """A live worker's fenced effect, under its claim's epoch or a stale one."""
        target = self.run_at(run, RUNNING)
        self.fence(target, target.epoch - behind, live=True)

    @precondition(lambda self: self.any_run(RUNNING))
    @transition(run=RUN)
    def frozen_fenced_effect(self, run: int) -> None:
        """A worker froze past its lease and wakes inside its effect, before the reaper came.

        Its epoch is still the run's, but the lease lapsed: the fence refuses. The
        run stays lapsed, so the next steps see that window: a heartbeat renews it,
        an end still ends it, the reaper fails it, a live worker's fence renews it.
        """
        target = self.run_at(run, RUNNING)
        self.stop_renewing(target)
        self.fence(target, target.epoch, live=False)

    @precondition(lambda self: self.any_run(QUEUED))
    @transition(run=RUN)
    def execute(self, run: int) -> None:
        """A whole turn, as a worker runs it: claim, the agent's events, the end."""
        target = self.run_at(run, QUEUED)
        if target.status != QUEUED:
            self.expect_refusal(f"execute of a {target.status} run")
            assert execute_run(target.pk, worker="executor") == "skipped"
            return
        ending, events = target.turn
        assert execute_run(target.pk, worker="executor") == runs.EDGES[ending].target
        self.move_run(target, "claim")
        self.move_run(target, ending)
        target.epoch += 1
        target.events += events
        if ending == "pause":
            self.settle_retried(target)

    def settle_retried(self, run: RunModel) -> None:
        """``pauses.settle`` of a retried turn that ended paused on the pauses it had."""
        own = [p for p in self.pauses.values() if p.run == run.pk]
        dead = [p for p in own if p.status == CANCELLED
                or (p.status == EXPIRED and self.on_expire == "fail")]
        if dead:
            self.died(dead[0])
        elif not any(p.status == PENDING for p in own):
            self.settled(own[0], Run.objects.filter(parent_id=run.pk).first())

    # --- invariants, each against the rows as they are after the step ---------------------

    def seen(self) -> Rows:
        """The rows after this step, read once for every invariant."""
        if self.after is None:
            self.after = rows()
        return self.after

    @invariant()
    def no_refusal_changes_a_row(self) -> None:
        if self.refused is not None:
            what, before = self.refused
            self.refused = None
            assert self.seen() == before, f"the refused {what} changed rows"

    @invariant()
    def at_most_one_answer_per_pause(self) -> None:
        decisions: dict[Any, list[str]] = defaultdict(list)
        for decision in self.seen()["decision"]:
            decisions[decision["pause_id"]].append(decision["action"])
        for pause in self.seen()["pause"]:
            actions, status = decisions[pause["id"]], pause["status"]
            # Left pending once, with one decision: by a person, expiry, or settle's cancel.
            assert len(actions) == (0 if status == PENDING else 1), (pause["id"], actions)
            if status == EXPIRED:
                assert actions == ["expire"]
            elif status == CANCELLED:
                assert actions == ["cancel"]

    @invariant()
    def at_most_one_continuation_per_run(self) -> None:
        children: dict[Any, list[Any]] = defaultdict(list)
        running: Counter[Any] = Counter()
        for run in self.seen()["run"]:
            if run["parent_id"] is not None:
                children[run["parent_id"]].append(run["id"])
            running[run["root_id"]] += run["status"] == RUNNING
        assert all(len(kids) == 1 for kids in children.values()), children
        assert all(n <= 1 for n in running.values()), running
        # Every pause of a continued run points at its one continuation; no other pause does.
        for pause in self.seen()["pause"]:
            kids = children.get(pause["run_id"], [None])
            assert pause["continuation_id"] == kids[0], pause["id"]

    @invariant()
    def only_allowed_edges(self) -> None:
        """Each status seen differs from the one seen a step before by a chain of EDGES.

        The chain is the model's (one edge per step, two for a whole turn); the
        statuses at both ends are read from the rows.
        """
        stored_runs = {str(run["id"]): run["status"] for run in self.seen()["run"]}
        assert set(stored_runs) == set(self.runs), "a run the model did not expect"
        for pk, status in stored_runs.items():
            model = self.runs[pk]
            assert model.path[-1] == status, (pk, model.path, status)
            assert all(change in RUN_EDGES for change in pairwise(model.path)), model.path
            model.path = [status]
        stored_pauses = {str(pause["id"]): pause["status"] for pause in self.seen()["pause"]}
        assert set(stored_pauses) == set(self.pauses), "a pause the model did not expect"
        for pk, status in stored_pauses.items():
            pause = self.pauses[pk]
            assert pause.path[-1] == status, (pk, pause.path, status)
            assert all(change in PAUSE_EDGES for change in pairwise(pause.path)), pause.path
            pause.path = [status]

    @invariant()
    def claims_and_retries_are_counted(self) -> None:
        for run in self.seen()["run"]:
            model = self.runs[str(run["id"])]
            assert (run["epoch"], run["attempts"]) == (model.epoch, model.attempts), run["id"]

    @invariant()
    def contiguous_seq(self) -> None:
        stored: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for event in sorted(self.seen()["event"], key=lambda e: e["seq"]):
            stored[str(event["run_id"])].append(event)
        for pk, model in self.runs.items():
            events = stored[pk]
            assert [e["seq"] for e in events] == list(range(1, len(events) + 1)), pk
            assert len(events) == model.events, (pk, [e["type"] for e in events])
            # Each claim opens a turn, closed by exactly one terminal event before the next.
            open_turn = False
            for event in events:
                if event["type"] == ev.TurnStarted.type:
                    assert not open_turn, (pk, event["seq"])
                    open_turn = True
                else:
                    assert open_turn, (pk, event["seq"], event["type"])
                    open_turn = event["type"] not in ev.TERMINAL_TYPES
            assert open_turn == (model.status == RUNNING), (pk, model.status)

    @invariant()
    def no_fenced_effect_after_lease_lost(self) -> None:
        markers = {refund["order_id"] for refund in self.seen()["refund"]}
        assert markers == set(self.markers), "a marker of a refused fence, or one missing"
        # Each fence's event lies inside the turn of the claim that held it (the k-th
        # turn.started is claim k, epoch k), before that turn's end: none after a reap.
        claims: Counter[Any] = Counter()
        ended: set[Any] = set()
        for event in sorted(self.seen()["event"], key=lambda e: (str(e["run_id"]), e["seq"])):
            run_id = event["run_id"]
            if event["type"] == ev.TurnStarted.type:
                claims[run_id] += 1
                ended.discard(run_id)
            elif event["type"] in ev.TERMINAL_TYPES:
                ended.add(run_id)
            elif event["type"] == ev.ToolCompleted.type:
                marker, epoch = event["data"]["tool_call_id"], event["data"]["args"]["epoch"]
                assert self.markers[marker] == (str(run_id), epoch), marker
                assert claims[run_id] == epoch and run_id not in ended, marker


def untaken() -> set[str]:
    """The edges of both machines no step took yet, and whether a fence held."""
    edges = {f"run {edge}" for edge in runs.EDGES} | {f"pause {edge}" for edge in pauses.EDGES}
    return (edges | {"fenced effect committed"}) - set(TALLY)


@pytest.mark.django_db(transaction=True)
def test_runs_and_pauses_keep_their_invariants_in_any_interleaving(
        tenants: dict[str, Any]) -> None:
    TALLY.clear()
    run_state_machine_as_test(RunsAndPauses, settings=PROFILE)
    rounds = 1
    # Each example may use only a random subset of the rules (Hypothesis' swarm testing), so
    # a short run can miss an edge: explore a bounded number of rounds more until none is.
    while untaken() and rounds <= EXTRA_ROUNDS:
        run_state_machine_as_test(RunsAndPauses, settings=PROFILE)
        rounds += 1
    print(f"{rounds} round(s) of {EXAMPLES} examples of up to {STEPS} steps:",
          ", ".join(f"{name} {n}" for name, n in sorted(TALLY.items())))
    assert not untaken(), f"no interleaving reached {untaken()}: {TALLY}"
    assert any(name.startswith("refused: fence of a running run") for name in TALLY), TALLY
