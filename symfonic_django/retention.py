"""Retention: delete idempotency records, and old events and graph checkpoints of finished runs.

Two settings decide what goes (``SYMFONIC``, see ``conf.py``):

- ``IDEMPOTENCY_RETENTION`` (seconds): an ``IdempotentResponse`` older than
  this, by ``created_at``, is deleted. A client that repeats its request with
  the same ``Idempotency-Key`` after that gets a fresh answer, not the replay.
- ``EVENT_RETENTION`` (seconds, or ``None`` to keep events for ever): the
  ``TurnEvent`` rows of a *finished* run (``completed`` or ``failed``) whose
  ``finished_at`` is older than this are deleted. The run row itself stays.
  The same retention applies to LangGraph threads: the checkpoints and
  pending writes (``GraphCheckpoint``, ``GraphCheckpointWrite``) of a thread
  whose every run finished longer ago than this are deleted, as
  ``DjangoSaver.delete_thread`` deletes them.

``manage.py symfonic_prune`` and the periodic Celery task both call
:func:`prune`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from django.core.exceptions import ImproperlyConfigured
from django.db import models
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from .conf import settings
from .models import (
    GraphCheckpoint,
    GraphCheckpointWrite,
    IdempotentResponse,
    Run,
    RunStatus,
    TurnEvent,
    is_uuid,
)
from .threads import checkpoint_thread_id, split_checkpoint_thread_id

#: Runs whose events nobody will append to or wait for. A ``paused`` run is not
#: one of them: its answer starts a new run, but its own events are what a
#: watcher of the paused turn replays, so they stay.
FINISHED = (RunStatus.COMPLETED, RunStatus.FAILED)

_Model = TypeVar("_Model", bound=models.Model)

#: Graph threads looked up at a time: their runs are read with three ``IN`` lists of
#: this many ids, well within SQLite's limit on a statement's parameters.
THREADS_PER_LOOKUP = 300


@dataclass(frozen=True)
class PruneResult:
    """What one :func:`prune` call deleted (or, in a dry run, would delete).

    ``events`` is ``None`` when events were not considered at all (no
    ``EVENT_RETENTION``, or ``events=False``), and a count otherwise.
    ``checkpoints`` counts the graph checkpoint and pending write rows of idle
    threads; it is 0 when events were not considered (checkpoints go with them).
    """

    idempotency_records: int
    events: int | None
    dry_run: bool = False
    checkpoints: int = 0


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
    - With events, the LangGraph checkpoints and pending writes of each idle
      thread go too (``idle_graph_threads``): every run on the thread finished
      before that same cutoff, or paused and was continued. A thread with a
      queued or running run, a paused run not yet continued, or a run that
      finished since, keeps every row; so does a thread no run of the app
      names (a graph driven outside the app).
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
    if not events:
        if dry_run:
            return PruneResult(records.count(), None, dry_run=True)
        return PruneResult(delete_in_batches(records, batch), None)

    cutoff = now - timedelta(seconds=event_retention)
    old_events = TurnEvent.objects.filter(run__status__in=FINISHED, run__finished_at__lt=cutoff)
    if dry_run:
        return PruneResult(records.count(), old_events.count(), dry_run=True,
                           checkpoints=prune_idle_graph_threads(cutoff, batch, dry_run=True))
    return PruneResult(delete_in_batches(records, batch), delete_in_batches(old_events, batch),
                       checkpoints=prune_idle_graph_threads(cutoff, batch))


def prune_idle_graph_threads(cutoff: datetime, batch: int, *, dry_run: bool = False) -> int:
    """Delete every checkpoint and pending write of the threads idle since ``cutoff``.

    Returns how many rows went (or, with ``dry_run``, would go). The stored
    threads are walked in order, ``THREADS_PER_LOOKUP`` at a time, so a call
    reads each stored thread id once however many there are; each idle
    thread's rows go as ``DjangoSaver.delete_thread`` deletes them (its writes,
    then its checkpoints, in every namespace), at most ``batch`` rows a statement.
    Idleness is read just before a thread's rows go, not in the same statement:
    a run started on it in between finds the thread partly deleted, which only
    a thread nobody used for the whole retention can meet.
    """
    rows = 0
    after = ""
    while threads := list(
            GraphCheckpoint.objects.filter(thread_id__gt=after).order_by("thread_id")
            .values_list("thread_id", flat=True).distinct()[:THREADS_PER_LOOKUP]):
        after = threads[-1]
        idle = idle_graph_threads(threads, cutoff)
        writes = GraphCheckpointWrite.objects.filter(thread_id__in=idle)
        checkpoints = GraphCheckpoint.objects.filter(thread_id__in=idle)
        if dry_run:
            rows += writes.count() + checkpoints.count()
        else:
            rows += delete_in_batches(writes, batch) + delete_in_batches(checkpoints, batch)
    return rows


def idle_graph_threads(thread_ids: Sequence[str], cutoff: datetime) -> list[str]:
    """Those of ``thread_ids`` whose every run is done with the thread since before ``cutoff``.

    ``thread_ids`` are checkpointer keys (``threads.checkpoint_thread_id``). A
    run's thread is the one the LangGraph adapter drives it on: its
    ``thread_id``, or its root run's id when it has none, inside its scope. A
    run is done with it when it finished (completed or failed) before
    ``cutoff``, or paused and was continued: a paused run stays ``paused``
    once answered, and its continuation, a run on the same thread, says
    whether the thread is idle. A thread no run names is not idle: the app
    cannot tell who uses it.
    """
    named = [split for key in thread_ids if (split := split_checkpoint_thread_id(key))]
    callers = sorted({thread_id for _digest, thread_id in named})
    run_ids = [thread_id for thread_id in callers if is_uuid(thread_id)]
    runs = Run.objects.filter(
        Q(thread_id__in=callers)
        | Q(thread_id="", root_id__in=run_ids)
        | Q(thread_id="", root__isnull=True, pk__in=run_ids),
    ).annotate(
        continued=Exists(Run.objects.filter(parent=OuterRef("pk"))),
    ).values_list("scope_key", "thread_id", "root_id", "pk", "status", "finished_at",
                  "continued")
    idle: dict[str, bool] = defaultdict(lambda: True)
    for scope_key, thread_id, root_id, pk, status, finished_at, continued in runs:
        finished = status in FINISHED and finished_at is not None and finished_at < cutoff
        key = checkpoint_thread_id(scope_key, thread_id or str(root_id or pk))
        idle[key] &= finished or (status == RunStatus.PAUSED and continued)
    return [thread for thread in thread_ids if idle.get(thread, False)]


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
