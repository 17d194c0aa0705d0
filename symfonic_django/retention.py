"""Retention: delete idempotency records and old events of finished runs.

Two settings decide what goes (``SYMFONIC``, see ``conf.py``):

- ``IDEMPOTENCY_RETENTION`` (seconds): an ``IdempotentResponse`` older than
  this, by ``created_at``, is deleted. A client that repeats its request with
  the same ``Idempotency-Key`` after that gets a fresh answer, not the replay.
- ``EVENT_RETENTION`` (seconds, or ``None`` to keep events for ever): the
  ``TurnEvent`` rows of a *finished* run (``completed`` or ``failed``) whose
  ``finished_at`` is older than this are deleted. The run row itself stays.

``manage.py symfonic_prune`` and the periodic Celery task both call
:func:`prune`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from django.core.exceptions import ImproperlyConfigured
from django.db import models
from django.utils import timezone

from .conf import settings
from .models import IdempotentResponse, RunStatus, TurnEvent

#: Runs whose events nobody will append to or wait for. A ``paused`` run is not
#: one of them: its answer starts a new run, but its own events are what a
#: watcher of the paused turn replays, so they stay.
FINISHED = (RunStatus.COMPLETED, RunStatus.FAILED)

_Model = TypeVar("_Model", bound=models.Model)


@dataclass(frozen=True)
class PruneResult:
    """What one :func:`prune` call deleted (or, in a dry run, would delete).

    ``events`` is ``None`` when events were not considered at all (no
    ``EVENT_RETENTION``, or ``events=False``), and a count otherwise.
    """

    idempotency_records: int
    events: int | None
    dry_run: bool = False


def prune(*, now: datetime | None = None, events: bool | None = None, batch: int = 5000,
          dry_run: bool = False) -> PruneResult:
    """Delete idempotency records and, if asked for, events older than their retention.

    What a caller may rely on:

    - Idempotency records whose ``created_at`` is older than ``now`` minus
      ``IDEMPOTENCY_RETENTION`` are deleted; newer ones are untouched.
    - Events are considered when ``events`` is ``True``, or ``None`` (the
      default) and ``EVENT_RETENTION`` is set; ``events=False`` keeps them.
      ``events=True`` without ``EVENT_RETENTION`` raises
      ``ImproperlyConfigured`` before anything is deleted.
    - Only events of ``completed`` and ``failed`` runs whose ``finished_at`` is
      older than ``now`` minus ``EVENT_RETENTION`` are deleted. Events of
      queued, running and paused runs, and of runs with no ``finished_at``,
      are never deleted. The status is checked again in each delete statement,
      so a run put back in the queue by a retry while this runs loses at most
      the old events it had when it was retried, never a new one.
    - Rows go in batches of at most ``batch`` primary keys, one statement each.
      Called outside a transaction (as the command and the task do), each
      batch commits on its own, so no call holds a long lock on either table.
    - With ``dry_run=True`` nothing is deleted; the counts are what would go.
    - Calling it again at once deletes nothing more: it is safe to repeat.
    """
    if batch < 1:
        raise ValueError(f"batch must be at least 1, not {batch}")
    now = now or timezone.now()
    event_retention = settings.EVENT_RETENTION
    if events and event_retention is None:
        raise ImproperlyConfigured(
            "Pruning events needs SYMFONIC['EVENT_RETENTION'] (seconds to keep the events "
            "of a finished run).")
    if events is None:
        events = event_retention is not None

    records = IdempotentResponse.objects.filter(
        created_at__lt=now - timedelta(seconds=settings.IDEMPOTENCY_RETENTION))
    old_events = None
    if events:
        old_events = TurnEvent.objects.filter(
            run__status__in=FINISHED,
            run__finished_at__lt=now - timedelta(seconds=event_retention))

    if dry_run:
        return PruneResult(records.count(), None if old_events is None else old_events.count(),
                           dry_run=True)
    return PruneResult(
        delete_in_batches(records, batch),
        None if old_events is None else delete_in_batches(old_events, batch),
    )


def delete_in_batches(rows: models.QuerySet[_Model], batch: int) -> int:
    """Delete every row of ``rows``, at most ``batch`` primary keys per statement.

    Each delete repeats the filter of ``rows`` beside the keys, so a row that
    stopped matching since its key was read stays.
    """
    deleted = 0
    # No ORDER BY: the models' default ordering would sort every matching row for each batch.
    while ids := list(rows.order_by().values_list("pk", flat=True)[:batch]):
        count, _ = rows.filter(pk__in=ids).delete()
        deleted += count
    return deleted
