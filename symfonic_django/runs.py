"""The run state machine, in one place: every write of ``Run.status`` happens here.

::

    queued  --claim-->    running      (a worker; the claim increments the fencing epoch)
    running --complete--> completed
    running --pause-->    paused       (the turn asked people; pauses.settle continues it)
    running --fail-->     failed       (the agent raised, or its stream was closed)
    running --reap-->     failed       (lease_expired: the worker stopped renewing its lease)
    paused  --abandon-->  failed       (a pause was cancelled, or expired with ON_EXPIRE=fail)
    failed  --retry-->    queued       (an operator, audited as a ``RunRetry``; attempts + 1)

Each edge is one conditional UPDATE (``transitions.Machine.move``), so of two
writers racing over a run exactly one moves it. The claim and the reaper take
the run's row lock (``select_for_update``), as does ``hold_lease``, the check
``turns.fenced`` makes right before it commits: a fenced side effect commits
only while its run is still ``running`` under the worker's epoch with an
unexpired lease, and no fenced effect can commit after the reaper failed the
run.

Work for the layers above (a turn to run) is sent to Celery by task name on
commit, never by importing them.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from celery import current_app
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from . import events as ev
from . import hitl, jsontext, signals
from .conf import settings
from .exceptions import InvalidRunInput, RunNotRetryable
from .models import AnsweredVia, Pause, Run, RunRetry, RunStatus
from .pg import set_local_timeout
from .scopes import scope_key
from .transitions import Edge, Machine

log = logging.getLogger(__name__)

QUEUED, RUNNING, PAUSED = RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.PAUSED
COMPLETED, FAILED = RunStatus.COMPLETED, RunStatus.FAILED


#: The allowed edges, by name. Nothing else changes a run's status.
EDGES: dict[str, Edge] = {
    "claim": Edge(QUEUED, RUNNING),
    "complete": Edge(RUNNING, COMPLETED),
    "pause": Edge(RUNNING, PAUSED),
    "fail": Edge(RUNNING, FAILED),
    "reap": Edge(RUNNING, FAILED),
    "abandon": Edge(PAUSED, FAILED),
    "retry": Edge(FAILED, QUEUED),
}
MACHINE = Machine(Run.objects, EDGES)

#: The edge that ends a turn with each terminal event.
ENDING_EDGE = {ev.TurnCompleted.type: "complete", ev.TurnPaused.type: "pause",
               ev.TurnFailed.type: "fail"}

#: Celery task names (the tasks live in ``tasks.py``, above this module).
START_TASK = "symfonic_django.start_run"
CONTINUATION_TASK = "symfonic_django.run_continuation"

#: A queued run nobody claimed this long after its message was sent counts as lost and
#: is sent again; each further send waits twice as long, up to ``RESEND_MAX``.
RESEND_AFTER = timedelta(seconds=10)
RESEND_MAX = timedelta(minutes=10)
#: Runs one ``resend_overdue_runs`` or ``reap_stale_runs`` call looks at, at most.
BATCH = 500


class LeaseLost(Exception):
    """This worker no longer owns the run: the reaper failed it, or it already ended."""


def _send(run_id: Any, *, continuation: bool) -> bool:
    """Send a queued run to the workers by task name; ``False`` (logged) if the broker refused.

    The run row is committed already, so a broker outage must not turn the
    caller's success into an error: ``resend_overdue_runs`` sends it again.
    """
    name = CONTINUATION_TASK if continuation else START_TASK
    try:
        current_app.send_task(name, args=[str(run_id)])
    except Exception:
        log.exception("could not send %s for run %s; it is sent again once overdue", name, run_id)
        return False
    return True


def _send_on_commit(run: Run) -> None:
    continuation = run.parent_id is not None
    transaction.on_commit(lambda: _send(run.pk, continuation=continuation))


# --- creating runs -------------------------------------------------------------------

def start_run(agent: str, input: Any, *, scope: Any, session_id: str = "", thread_id: str = "",
              started_by: Any = None, dispatch: bool = True) -> Run:
    """Queue a top-level turn of ``agent``; a worker runs it once the transaction commits.

    ``started_by`` (a user) never counts toward a quorum of approvers of the
    run's pauses (``APPROVAL_POLICY``).

    Refuses, before writing anything, an unknown agent (``UnknownAgent``) and an
    input that does not fit the ``input_schema`` the agent's registered factory
    declares, if it declares one (``InvalidRunInput``).
    """
    jsontext.refuse_unstorable([input, session_id, thread_id], "The run's input",
                               InvalidRunInput)
    schema = getattr(settings.agent_factory(agent), "input_schema", None)
    if schema is not None:
        violation = hitl.schema_violation(schema, input,
                                          what=f"The input_schema of agent {agent!r}")
        if violation:
            raise InvalidRunInput(
                f"The input does not fit the input_schema of agent {agent!r}: {violation}.")
    now = timezone.now()
    starter = started_by if getattr(started_by, "pk", None) is not None else None
    run = Run(agent=agent, input=input, scope_key=scope_key(scope), session_id=session_id,
              thread_id=thread_id, started_by=starter, created_at=now, sent_at=now, sends=1,
              resend_after=now + RESEND_AFTER)
    run.root_id = run.id
    with transaction.atomic():
        run.save(force_insert=True)
        if dispatch:
            _send_on_commit(run)
    return run


def queue_continuation(paused: Run, *, resumed_from: Pause, answers: dict[str, Any],
                       dispatch: bool = True, now: datetime | None = None) -> Run:
    """Queue the turn that continues ``paused`` with ``answers`` (by pause id).

    Called by ``pauses.settle`` inside its transaction, which holds ``paused``'s row lock.
    """
    now = now or timezone.now()
    run = Run.objects.create(
        root_id=paused.root_id or paused.id, parent=paused, resumed_from=resumed_from,
        agent=paused.agent, scope_key=paused.scope_key, session_id=paused.session_id,
        thread_id=paused.thread_id, started_by_id=paused.started_by_id,
        input={"answers": answers}, created_at=now, sent_at=now,
        sends=1, resend_after=now + RESEND_AFTER)
    if dispatch:
        _send_on_commit(run)
    return run


#: Why ``abandon`` failed a run, by the code it gives: the pause that died is on the run's
#: pause list (``expired`` or ``cancelled``).
ABANDON_MESSAGES = {"pause_expired": "one of its pauses expired",
                    "pause_cancelled": "one of its pauses was cancelled"}


def abandon(dead: list[Run], *, code: str, now: datetime | None = None) -> None:
    """Fail paused runs whose pauses died (cancelled, or expired with ``ON_EXPIRE="fail"``).

    ``code`` is ``pause_expired`` or ``pause_cancelled``; the caller holds the
    runs' row locks and saw them paused. One guarded UPDATE however many (an
    expiry sweep fails a batch): the error is the same for all of them.
    """
    if not dead:
        return
    now = now or timezone.now()
    error = {"code": code, "message": ABANDON_MESSAGES[code]}
    if not MACHINE.move_rows(dead, "abandon", now=now, finished_at=now, error=error):
        raise RuntimeError("a run left 'paused' while its row was locked")
    signals.send_each_on_commit(signals.run_failed, Run, (
        {"run": run, "code": code, "message": error["message"]} for run in dead))


# --- claiming and the lease ------------------------------------------------------------

def claim(run_id: Any, worker: str) -> Run | None:
    """Move a queued run to running with a lease, and record its ``turn.started``.

    Returns ``None`` if someone else has the run or it is done. The run
    returned is as the claim left it: ``epoch`` is this claim's fencing token,
    and the ``turn.started`` row is ``started_event``. One short transaction:
    the row lock is held for the claim, never for the turn.
    """
    now = timezone.now()
    with transaction.atomic():
        queued = Run.objects.filter(pk=run_id, status=QUEUED)
        if connection.features.has_select_for_update_skip_locked:
            queued = queued.select_for_update(skip_locked=True)
        run = queued.first()
        if run is None:
            return None
        lease_until = now + timedelta(seconds=settings.LEASE_SECONDS)
        # The epoch in the guard makes the claim exact where there are no row locks.
        if not MACHINE.move_rows([run], "claim", now=now, guard=Q(epoch=run.epoch),
                                 epoch=run.epoch + 1, worker=worker, started_at=now,
                                 lease_until=lease_until, resend_after=None):
            return None
        resumed = str(run.resumed_from_id) if run.resumed_from_id else None
        # Only a claim starts a run's events, so on its first claim (epoch 1) a run has
        # none; a retried run continues its stream after the turn.failed it ended with.
        seq = ev.next_seq(run.pk) if run.epoch > 1 else 1
        run.started_event = ev.append(  # type: ignore[attr-defined]
            run, seq, ev.TurnStarted(agent=run.agent, resumed_from_pause=resumed))
        signals.send_on_commit(signals.run_claimed, Run, run=run, worker=worker,
                               epoch=run.epoch)
    return run


def extend_lease(run_id: Any, epoch: int) -> bool:
    """Renew the lease of the claim ``epoch``; False once the run is no longer that claim's."""
    until = timezone.now() + timedelta(seconds=settings.LEASE_SECONDS)
    return bool(Run.objects.filter(pk=run_id, status=RUNNING, epoch=epoch)
                .update(lease_until=until))


def bound_fenced_transaction() -> None:
    """On PostgreSQL, let the server end a fenced transaction whose worker froze inside it.

    A worker stopped between two statements of a fenced effect would hold the
    effect's row locks for ever; about a lease later the server closes its
    session, and its late commit fails. Call it first in the fenced transaction.
    """
    set_local_timeout("idle_in_transaction_session_timeout", _lease_ms())


def hold_lease(run_id: Any, epoch: int) -> None:
    """Lock the run row for a fenced commit; raise ``LeaseLost`` unless the claim still holds.

    Call it last inside the fenced ``transaction.atomic()``, right before it
    commits: the lock is held from here to the commit, so the reaper (which
    takes the same lock) either reaped before, and this refuses, or waits
    until the effect committed. On PostgreSQL the wait for the lock is bounded
    by about a lease.
    """
    set_local_timeout("lock_timeout", _lease_ms())
    held = (Run.objects.select_for_update()
            .filter(pk=run_id, status=RUNNING, epoch=epoch, lease_until__gt=timezone.now())
            .values_list("pk", flat=True))
    if not list(held):
        raise LeaseLost(f"run {run_id} is no longer held by claim {epoch}")


def still_held(run_id: Any, epoch: int) -> bool:
    """Whether claim ``epoch`` still holds the run (a read, no lock): to fail fast."""
    return Run.objects.filter(pk=run_id, status=RUNNING, epoch=epoch,
                              lease_until__gt=timezone.now()).exists()


def _lease_ms() -> int:
    return max(int(settings.LEASE_SECONDS * 1000), 1)


# --- ending a turn ----------------------------------------------------------------------

def end(run: Run, epoch: int, seq: int, event: ev.Event, *, now: datetime | None = None
        ) -> str:
    """Write a turn's terminal ``event`` as ``seq`` and its status, if claim ``epoch`` holds.

    Raises ``LeaseLost`` (writing nothing) when the run is no longer running
    under that claim. The UPDATE takes the row lock until the caller's
    transaction commits; the doorbell is the caller's (``turns``) to ring.
    """
    now = now or timezone.now()
    changes: dict[str, Any] = {"finished_at": now, "lease_until": None}
    if isinstance(event, ev.TurnCompleted):
        changes["output"] = event.output
    elif isinstance(event, ev.TurnFailed):
        changes["error"] = {"code": event.code, "message": event.message}
    edge = ENDING_EDGE[event.type]
    # Inside the caller's transaction when there is one (a paused turn settles in it),
    # without a savepoint; the refusal is raised after the block, which wrote nothing.
    with transaction.atomic(savepoint=False):
        moved = MACHINE.move([run.pk], edge, now=now, guard=Q(epoch=epoch), **changes)
        if moved:
            ev.append(run, seq, event)
    if not moved:
        raise LeaseLost(f"run {run.pk} is no longer held by claim {epoch}")
    run.status = EDGES[edge].target
    for name, value in changes.items():
        setattr(run, name, value)
    if isinstance(event, ev.TurnCompleted):
        signals.send_on_commit(signals.run_completed, Run, run=run, output=event.output)
    elif isinstance(event, ev.TurnPaused):
        signals.send_on_commit(signals.run_paused, Run, run=run, pause_ids=event.pause_ids)
    elif isinstance(event, ev.TurnFailed):
        signals.send_on_commit(signals.run_failed, Run, run=run, code=event.code,
                               message=event.message)
    return str(run.status)


# --- the reaper, lost messages and retries ------------------------------------------------

def reap_stale_runs(*, now: datetime | None = None) -> int:
    """Fail running runs whose lease lapsed (their worker died or froze): ``lease_expired``.

    A run is never silently re-run: an operator may ``retry`` it. Each run is
    reaped under its row lock, the lock ``hold_lease`` takes, so a fenced side
    effect either committed before the reap or never commits.
    """
    now = now or timezone.now()
    reaped = 0
    for run_id in list(Run.objects.lease_lapsed(now).values_list("pk", flat=True)[:BATCH]):
        try:
            reaped += _reap(run_id, now)
        except IntegrityError:
            # A dying worker's last event took the seq between our read and our insert:
            # nothing was written, and the next sweep reaps the run.
            log.warning("run %s: its worker stored an event while it was being reaped; "
                        "it is reaped on the next sweep", run_id)
    return reaped


def _reap(run_id: Any, now: datetime) -> bool:
    """Fail one lapsed run under its row lock; False if it is not (any longer) lapsed."""
    with transaction.atomic():
        lapsed = Run.objects.lease_lapsed(now).filter(pk=run_id)
        if connection.features.has_select_for_update_skip_locked:
            lapsed = lapsed.select_for_update(skip_locked=True)
        run = lapsed.first()
        if run is None:
            return False  # renewed, ended, or held by a fenced write right now
        message = f"worker {run.worker or '?'} stopped renewing its lease"
        error = {"code": "lease_expired", "message": message}
        if not MACHINE.move_rows([run], "reap", now=now, finished_at=now, lease_until=None,
                                 error=error):
            return False
        seq = ev.next_seq(run.pk)
        ev.append(run, seq, ev.TurnFailed(code="lease_expired", message=message))
        transaction.on_commit(partial(ev.ring, run.pk, seq))
        signals.send_on_commit(signals.run_failed, Run, run=run, code="lease_expired",
                               message=message)
    return True


def resend_delay(sends: int) -> timedelta:
    """How long after its ``sends``-th send a still-queued run counts as lost."""
    doublings = max(sends - 1, 0)
    return min(RESEND_AFTER * int(2 ** min(doublings, 32)), RESEND_MAX)


def resend_overdue_runs(*, now: datetime | None = None) -> int:
    """Send again each queued run whose message is overdue (a broker lost or refused it).

    Only overdue runs are sent, each with exponential backoff (``resend_delay``)
    and at most ``BATCH`` per call, and every send is recorded on the run.
    Sending twice is harmless: only one delivery can claim a queued run.
    """
    now = now or timezone.now()
    overdue = list(Run.objects.send_overdue(now).order_by("resend_after")
                   .values_list("pk", "parent_id", "sends")[:BATCH])
    sent = 0
    for pk, parent_id, sends in overdue:
        recorded = Run.objects.filter(pk=pk, status=QUEUED, sends=sends).update(
            sent_at=now, sends=sends + 1, resend_after=now + resend_delay(sends + 1))
        if recorded:  # else another resender, or a claim, got there first
            sent += _send(pk, continuation=parent_id is not None)
    return sent


def retry(run_id: Any, *, actor: Any = None, via: str = AnsweredVia.PYTHON,
          comment: str = "") -> Run:
    """Send a failed run back to the queue (an operator's decision, audited).

    The run keeps its id, input and events: its next claim appends a new
    ``turn.started`` after the ``turn.failed`` it ended with. Raises
    ``RunNotRetryable`` (changing nothing) unless the run is ``failed``.
    """
    now = timezone.now()
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.status != FAILED:
            state = "unknown" if run is None else run.status
            raise RunNotRetryable(f"Only a failed run can be retried; this one is {state}.")
        previous = run.error
        if not MACHINE.move([run.pk], "retry", now=now, attempts=F("attempts") + 1, error=None,
                            finished_at=None, lease_until=None, worker="", sent_at=now,
                            sends=F("sends") + 1, resend_after=now + RESEND_AFTER):
            raise RunNotRetryable("The run changed while it was being retried.")
        run.refresh_from_db()
        user = actor if getattr(actor, "pk", None) is not None else None
        label = actor.get_username() if hasattr(actor, "get_username") else str(actor or "")
        RunRetry.objects.create(run=run, actor=user, actor_label=label or via, via=via,
                                attempt=run.attempts, previous_error=previous, comment=comment,
                                created_at=now)
        _send_on_commit(run)
        signals.send_on_commit(signals.run_retried, Run, run=run, actor=user,
                               attempt=run.attempts)
    return run
