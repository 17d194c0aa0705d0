"""Settling a paused run: what it does once its pauses have moved.

When the last pending pause of a paused run leaves ``pending``, ``settle`` asks the
run state machine (``runs``) to queue the continuation, or to fail the run.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone

from .. import runs, signals
from ..models import Decision, Pause, PauseStatus, Run, RunStatus
from .machine import PENDING, leave_all


def _is_dead(pause: Pause) -> bool:
    return pause.status == PauseStatus.CANCELLED or (
        pause.status == PauseStatus.EXPIRED and pause.answer is None
    )


def settle(run: Run, *, dispatch: bool = True, now: datetime | None = None) -> Run | None:
    """Decide what a paused run does now; the caller holds ``run``'s row lock.

    A cancelled pause (or one expired with ``ON_EXPIRE="fail"``) fails the run
    and cancels its still-pending siblings. Once no pause is pending, the
    continuation run is queued (once) and, if ``dispatch``, sent to a worker
    when the transaction commits. Returns the continuation, if there is one.
    """
    pauses = list(Pause.objects.select_for_update().filter(run=run).order_by("created_at"))
    return settle_locked([(run, pauses)], dispatch=dispatch, now=now or timezone.now())[run.pk]


def settle_locked(paused: list[tuple[Run, list[Pause]]], *, dispatch: bool, now: datetime,
                  ) -> dict[Any, Run | None]:
    """``settle`` for runs whose rows and pauses (oldest first) the caller has locked.

    The siblings that die with their runs are cancelled together, in one
    guarded UPDATE with one ``bulk_create`` of their decisions, however many
    runs there are (the expiry sweep settles a whole batch).
    """
    outcome: dict[Any, Run | None] = {}
    dying: list[tuple[Run, Pause]] = []
    orphans: list[Pause] = []
    for run, pauses in paused:
        outcome[run.pk] = None
        if run.status != RunStatus.PAUSED:
            continue  # still running: the turn settles itself when it ends
        dead = next((p for p in pauses if _is_dead(p)), None)
        if dead is not None:
            dying.append((run, dead))
            orphans += [p for p in pauses if p.status == PENDING]
        elif not any(p.status == PENDING for p in pauses):
            outcome[run.pk] = _continuation(run, pauses, dispatch=dispatch, now=now)
    if orphans:
        _cancel_orphans(orphans, now=now)
    for code, status in (("pause_expired", PauseStatus.EXPIRED),
                         ("pause_cancelled", PauseStatus.CANCELLED)):
        runs.abandon([run for run, dead in dying if dead.status == status], code=code, now=now)
    return outcome


def _continuation(run: Run, pauses: list[Pause], *, dispatch: bool, now: datetime) -> Run:
    """The continuation of ``run``, none of whose ``pauses`` is pending any longer: the one
    queued already, else one queued now with all their answers."""
    existing = next((p.continuation for p in pauses if p.continuation_id), None)
    if existing is not None:
        return existing
    last = max(pauses, key=lambda p: p.answered_at or now)
    continuation = runs.queue_continuation(
        run, resumed_from=last, answers={str(p.pk): p.answer for p in pauses},
        dispatch=dispatch, now=now)
    Pause.objects.filter(run=run).update(continuation=continuation)
    return continuation


def _cancel_orphans(orphans: list[Pause], *, now: datetime) -> None:
    """Cancel the pending siblings of pauses that died, as the system."""
    decisions = leave_all(orphans, "cancel", action=Decision.Action.CANCEL, now=now,
                          comment="a sibling pause was cancelled or expired")
    signals.send_each_on_commit(signals.pause_cancelled, Pause, (
        {"pause": sibling, "decision": decision}
        for sibling, decision in zip(orphans, decisions, strict=True)))
