"""Expiring pauses whose time is up: one, a batch, or the sweep that drains a backlog."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from .. import signals
from ..conf import settings
from ..models import Decision, Pause, Run
from .machine import PENDING, Resolution, leave_all
from .settling import settle_locked

#: What an expired pause answers with when ``ON_EXPIRE`` is ``"resume"``.
TIMEOUT_ANSWER = {"timeout": True}
#: The pauses one expiry transaction takes at most (``expire_due``).
EXPIRY_BATCH = 500
#: How long one sweep (``expire_all_due``: the beat's ``expire_pauses``, ``manage.py
#: symfonic_expire``) goes on taking batches: less than the beat's 30 s, so that a sweep
#: draining a backlog has ended when the next one is due.
SWEEP_SECONDS = 20.0


def expire(pause_id: Any, *, now: datetime | None = None) -> Resolution | None:
    """Expire one pause if it is pending and due; ``None`` when it is not (anymore)."""
    try:
        UUID(str(pause_id))
    except ValueError:
        return None
    expired = _expire(Pause.objects.filter(pk=pause_id), now=now or timezone.now())
    return expired[0] if expired else None


def expire_due(*, now: datetime | None = None, limit: int = EXPIRY_BATCH) -> int:
    """Expire pending pauses whose time is up, up to ``limit``, in one transaction; returns
    how many it expired."""
    now = now or timezone.now()
    return len(_expire(Pause.objects.due(now).order_by("expires_at")[:limit], now=now))


def expire_all_due(*, seconds: float = SWEEP_SECONDS, batch: int = EXPIRY_BATCH) -> int:
    """The expiry sweep: ``expire_due`` a batch at a time (each its own transaction, its
    own ``now``) until a batch finds nothing left to expire or ``seconds`` have passed;
    returns how many it expired.

    A backlog (the beat was down, thousands of pauses shared a deadline) drains at
    the sweep's rate, not one batch a beat. Two sweeps at once are harmless: the
    second waits on the first's row locks and finds those pauses expired.
    """
    deadline = time.monotonic() + seconds
    expired = 0
    while done := expire_due(limit=batch):
        expired += done
        if time.monotonic() >= deadline:
            break
    return expired


def _expire(candidates: QuerySet[Pause], *, now: datetime) -> list[Resolution]:
    """Expire those of ``candidates`` still pending and due at ``now``, in one transaction.

    A few queries for the whole batch, plus what settling each run writes:
    the runs are locked first, then their pauses, in the order every answer
    takes them; the pauses found still pending and due under those locks leave
    ``pending`` in one guarded UPDATE, with one ``Decision`` each. Each pause
    sends ``pause_expired`` on commit, and each of their runs is settled.
    """
    answer = TIMEOUT_ANSWER if settings.ON_EXPIRE == "resume" else None
    with transaction.atomic():
        locked, by_run, due = _lock_due(candidates, now)
        if not due:
            return []
        leave_all(due, "expire", action=Decision.Action.EXPIRE, answer=answer, now=now)
        continuations = settle_locked([(locked[run_id], by_run[run_id])
                                       for run_id in dict.fromkeys(p.run_id for p in due)],
                                      dispatch=True, now=now)
        resolutions = [Resolution(pause=pause, continuation=continuations[pause.run_id])
                       for pause in due]
        for resolution in resolutions:
            resolution.pause.continuation = resolution.continuation
        signals.send_each_on_commit(signals.pause_expired, Pause, (
            {"pause": r.pause, "continuation": r.continuation} for r in resolutions))
    return resolutions


def _lock_due(candidates: QuerySet[Pause], now: datetime
              ) -> tuple[dict[Any, Run], dict[Any, list[Pause]], list[Pause]]:
    """Lock the runs of ``candidates``, then all their pauses (oldest first); returns the
    runs, their pauses by run, and those of ``candidates`` still pending and due."""
    chosen = list(candidates.values_list("pk", "run_id"))
    pause_ids, run_ids = {pk for pk, _ in chosen}, sorted({run_id for _, run_id in chosen})
    locked = {run.pk: run for run in
              Run.objects.select_for_update().filter(pk__in=run_ids).order_by("pk")}
    by_run: dict[Any, list[Pause]] = {}
    for pause in (Pause.objects.select_for_update().filter(run_id__in=run_ids)
                  .order_by("created_at")):
        by_run.setdefault(pause.run_id, []).append(pause)
    due = [pause for pauses in by_run.values() for pause in pauses
           if pause.pk in pause_ids and pause.status == PENDING and pause.expires_at <= now]
    return locked, by_run, due
