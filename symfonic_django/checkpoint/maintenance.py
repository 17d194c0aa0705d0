"""Deleting, copying and pruning a thread's checkpoints: the saver's maintenance operations.

Each is a function of the database alias; ``DjangoSaver``'s methods of the
same names call them, and document them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.db.models import Max, Q, QuerySet

from ..models import GraphCheckpoint, GraphCheckpointWrite
from .keys import CHECKPOINT_KEY, CheckpointKey, any_checkpoint

PRUNE_STRATEGIES = ("keep_latest", "delete")

#: Metadata keys that mark a thread using a ``DeltaChannel``: its latest value is
#: rebuilt from older checkpoints' writes, so ``keep_latest`` must not drop them.
#: (``delta_writes_versioned`` is what LangGraph.js writes.)
DELTA_METADATA_KEYS = ("counters_since_delta_snapshot", "delta_writes_versioned")

#: How many rows ``copy_thread`` reads and inserts at a time.
COPY_BATCH = 500


def delete_thread(using: str, thread_id: str) -> None:
    thread_id = str(thread_id)
    with transaction.atomic(using=using):
        _writes(using).filter(thread_id=thread_id).delete()
        _checkpoints(using).filter(thread_id=thread_id).delete()


def delete_for_runs(using: str, run_ids: Sequence[str]) -> None:
    run_ids = [str(run_id) for run_id in run_ids]
    if not run_ids:
        return
    with transaction.atomic(using=using):
        doomed: Sequence[CheckpointKey] = [
            *_checkpoints(using).filter(run_id__in=run_ids).values_list(*CHECKPOINT_KEY)
        ]
        if not doomed:
            return
        _writes(using).filter(any_checkpoint(doomed)).delete()
        _checkpoints(using).filter(any_checkpoint(doomed)).delete()
        _checkpoints(using).filter(any_checkpoint(doomed, via="parent_checkpoint_id")).update(
            parent_checkpoint_id=""
        )


def copy_thread(using: str, source_thread_id: str, target_thread_id: str) -> None:
    source, target = str(source_thread_id), str(target_thread_id)
    with transaction.atomic(using=using):
        if (
            _checkpoints(using).filter(thread_id=target).exists()
            or _writes(using).filter(thread_id=target).exists()
        ):
            raise ValueError(
                f"Thread {target!r} already has checkpoints: copy_thread copies into "
                "an empty thread."
            )
        for model in (GraphCheckpoint, GraphCheckpointWrite):
            rows = model.objects.using(using).filter(thread_id=source).order_by("pk")
            batch: list[Any] = []
            for row in rows.iterator(chunk_size=COPY_BATCH):
                row.pk = None
                row.thread_id = target
                batch.append(row)
                if len(batch) == COPY_BATCH:
                    model.objects.using(using).bulk_create(batch)
                    batch = []
            model.objects.using(using).bulk_create(batch)


def prune(using: str, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
    if isinstance(thread_ids, str):
        raise TypeError("thread_ids must be a sequence of thread ids, not a str")
    if strategy not in PRUNE_STRATEGIES:
        raise ValueError(f"Unknown prune strategy: {strategy!r}")
    thread_ids = [str(thread_id) for thread_id in thread_ids]
    if not thread_ids:
        return
    if strategy == "delete":
        with transaction.atomic(using=using):
            _writes(using).filter(thread_id__in=thread_ids).delete()
            _checkpoints(using).filter(thread_id__in=thread_ids).delete()
        return
    uses_delta = Q()
    for key in DELTA_METADATA_KEYS:
        uses_delta |= Q(metadata__has_key=key)
    if refused := sorted(
        set(
            _checkpoints(using)
            .filter(uses_delta, thread_id__in=thread_ids)
            .values_list("thread_id", flat=True)
        )
    ):
        raise NotImplementedError(
            f"keep_latest can't prune threads that use a DeltaChannel: {', '.join(refused)}"
        )
    for thread_id in thread_ids:
        _keep_latest(using, thread_id)


def _keep_latest(using: str, thread_id: str) -> None:
    with transaction.atomic(using=using):
        thread = _checkpoints(using).filter(thread_id=thread_id)
        heads: dict[str, str] = dict(
            thread.values("checkpoint_ns")
            .annotate(head=Max("checkpoint_id"))
            .values_list("checkpoint_ns", "head")
        )
        if not heads:
            return
        # The root checkpoint each subgraph call's latest checkpoint started from.
        call_roots = {
            checkpoint_ns: metadata.get("parents", {}).get("")
            for checkpoint_ns, metadata in thread.filter(
                any_checkpoint(
                    (thread_id, ns, head) for ns, head in heads.items() if ":" in ns
                )
            ).values_list("checkpoint_ns", "metadata")
        }
        saved_roots = set(
            thread.filter(
                checkpoint_ns="",
                checkpoint_id__in=[root for root in call_roots.values() if root],
            ).values_list("checkpoint_id", flat=True)
        )
        finished_calls = [
            ns for ns, root in call_roots.items()
            if root in saved_roots and root != heads.get("")
        ]
        older = Q(checkpoint_ns__in=finished_calls)
        for checkpoint_ns, head in heads.items():
            if checkpoint_ns not in finished_calls:
                older |= Q(checkpoint_ns=checkpoint_ns, checkpoint_id__lt=head)
        # Writes go by namespace and id, not by the checkpoints deleted: a run
        # saves a step's writes in the background, maybe before its checkpoint.
        _writes(using).filter(older, thread_id=thread_id).delete()
        thread.filter(older).delete()
        thread.filter(
            any_checkpoint((thread_id, ns, head) for ns, head in heads.items())
        ).exclude(parent_checkpoint_id="").update(parent_checkpoint_id="")


def _checkpoints(using: str) -> QuerySet[GraphCheckpoint]:
    return GraphCheckpoint.objects.using(using)


def _writes(using: str) -> QuerySet[GraphCheckpointWrite]:
    return GraphCheckpointWrite.objects.using(using)
