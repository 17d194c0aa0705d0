"""``DjangoSaver``: reads and writes of checkpoints on the models, and their async twins.

The three calls a graph makes on every step (``put``, ``put_writes``,
``get_tuple``) are plain statements (``pg.insert``, and one ``raw`` read); the
rest is ORM. Deleting, copying and pruning threads are ``maintenance``'s.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import nullcontext
from typing import Any

from django.db import connections, transaction
from django.db.models import Model, Q, QuerySet
from django.db.models.fields.json import KeyTransform
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from ..models import GraphCheckpoint, GraphCheckpointWrite
from ..pg import insert
from . import maintenance
from .keys import (
    CHECKPOINT_KEY,
    WRITE_KEY,
    CheckpointKey,
    any_checkpoint,
    config_of,
    key_of,
    namespace_of,
)
from .sync import in_sync_thread, iterated_in_sync_thread, leaves_connection_as_found

__all__ = ["DjangoSaver"]

# Named here: inside the saver, ``list`` is its method.
Tuples = Sequence[CheckpointTuple]
WriteRows = list[GraphCheckpointWrite]


class DjangoSaver(BaseCheckpointSaver[str]):
    """Checkpoints and pending writes in the app's models, on the ``using`` database.

    Channel versions are strings (``get_next_version``); ``pending_writes`` come
    in ``writes_sort_key`` order (task path, task id, index). A special write
    (error, scheduled, interrupt, resume) replaces the one stored under its
    index; a normal write is stored once and never replaced.
    """

    def __init__(self, *, using: str = "default", serde: SerializerProtocol | None = None):
        super().__init__(serde=serde)
        self.using = using

    # -- reads -------------------------------------------------------------------------

    @leaves_connection_as_found
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, or its namespace's latest, with its writes."""
        params: list[str] = [*namespace_of(config)]
        which = "WHERE thread_id = %s AND checkpoint_ns = %s"
        if checkpoint_id := get_checkpoint_id(config):
            which, params = f"{which} AND checkpoint_id = %s", [*params, checkpoint_id]
        else:
            which = f"{which} ORDER BY checkpoint_id DESC LIMIT 1"
        # One statement: the checkpoint once per write of its (a checkpoint has few
        # pending writes; none once its step has finished), or once with NULLs.
        # Each row is a GraphCheckpoint with the write_* columns as extra attributes.
        rows: list[Any] = [*self._checkpoints().raw(
            "SELECT c.*, w.task_id AS write_task_id, w.task_path AS write_task_path,"
            " w.idx AS write_idx, w.channel AS write_channel,"
            " w.value_type AS write_value_type, w.value AS write_value"
            f" FROM (SELECT * FROM {self._table(GraphCheckpoint)} {which}) c"
            f" LEFT JOIN {self._table(GraphCheckpointWrite)} w"
            " ON w.thread_id = c.thread_id AND w.checkpoint_ns = c.checkpoint_ns"
            " AND w.checkpoint_id = c.checkpoint_id",
            params,
        )]
        if not rows:
            return None
        writes = [
            GraphCheckpointWrite(
                task_id=row.write_task_id, task_path=row.write_task_path, idx=row.write_idx,
                channel=row.write_channel, value_type=row.write_value_type,
                value=row.write_value,
            )
            for row in rows
            if row.write_task_id is not None
        ]
        return self._tuple(rows[0], _in_order(writes))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first: of ``config``'s thread (and namespace, if it names one).

        ``filter`` keeps those whose metadata has each key equal to its value (a
        missing key equals ``None``), as ``InMemorySaver`` compares them;
        ``before`` keeps those older than the checkpoint it names.
        """
        yield from self._search(config, filter, before, limit)

    @leaves_connection_as_found
    def _search(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> Tuples:
        rows = self._checkpoints()
        if config:
            configurable = config["configurable"]
            rows = rows.filter(thread_id=str(configurable["thread_id"]))
            if (checkpoint_ns := configurable.get("checkpoint_ns")) is not None:
                rows = rows.filter(checkpoint_ns=checkpoint_ns)
            if checkpoint_id := get_checkpoint_id(config):
                rows = rows.filter(checkpoint_id=checkpoint_id)
        for n, (key, value) in enumerate((filter or {}).items()):
            # Aliased whole: a key with "__" in it is one key, not a path.
            name = f"metadata_filter_{n}"
            rows = rows.alias(**{name: KeyTransform(key, "metadata")})
            matches = Q(**{name: value})
            if value is None:
                matches |= Q(**{f"{name}__isnull": True})  # the key is missing
            rows = rows.filter(matches)
        if before is not None and (before_id := get_checkpoint_id(before)):
            rows = rows.filter(checkpoint_id__lt=before_id)
        rows = rows.order_by("-checkpoint_id")
        return self._tuples(rows if limit is None else rows[: max(limit, 0)])

    def _tuples(self, rows: Iterable[GraphCheckpoint]) -> Tuples:
        """Checkpoint tuples of ``rows``, in their order, with their writes (one more query)."""
        checkpoints = [*rows]
        if not checkpoints:
            return []
        writes: defaultdict[CheckpointKey, WriteRows] = defaultdict(list)
        for write in self._writes().filter(any_checkpoint(key_of(row) for row in checkpoints)):
            writes[(write.thread_id, write.checkpoint_ns, write.checkpoint_id)].append(write)
        return [self._tuple(row, _in_order(writes[key_of(row)])) for row in checkpoints]

    def _tuple(self, row: GraphCheckpoint, writes: WriteRows) -> CheckpointTuple:
        checkpoint: Checkpoint = self.serde.loads_typed(
            (row.checkpoint_type, bytes(row.checkpoint))
        )
        parent = (
            config_of(row.thread_id, row.checkpoint_ns, row.parent_checkpoint_id)
            if row.parent_checkpoint_id
            else None
        )
        return CheckpointTuple(
            config=config_of(row.thread_id, row.checkpoint_ns, row.checkpoint_id),
            checkpoint=checkpoint,
            metadata=row.metadata,
            parent_config=parent,
            pending_writes=[
                (w.task_id, w.channel, self.serde.loads_typed((w.value_type, bytes(w.value))))
                for w in writes
            ],
        )

    # -- writes ------------------------------------------------------------------------

    @leaves_connection_as_found
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store ``checkpoint`` as the child of the one ``config`` names; one statement.

        Storing a checkpoint id again replaces its content and metadata.
        """
        thread_id, checkpoint_ns = namespace_of(config)
        stored_metadata = get_serializable_checkpoint_metadata(config, metadata)
        checkpoint_type, blob = self.serde.dumps_typed(checkpoint)
        row = GraphCheckpoint(
            thread_id=thread_id,
            checkpoint_ns=checkpoint_ns,
            checkpoint_id=checkpoint["id"],
            parent_checkpoint_id=get_checkpoint_id(config) or "",
            run_id=str(stored_metadata.get("run_id") or ""),
            checkpoint_type=checkpoint_type,
            checkpoint=blob,
            metadata=stored_metadata,
        )
        insert(self.using, [row], key=CHECKPOINT_KEY,
               replace=["run_id", "checkpoint_type", "checkpoint", "metadata"])
        return config_of(thread_id, checkpoint_ns, checkpoint["id"])

    @leaves_connection_as_found
    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes after the checkpoint ``config`` names.

        A normal write goes under its position in ``writes`` and is kept if one
        is already there (a re-run task's first writes win); a special write
        goes under its channel's negative index and replaces what is there.
        """
        if not writes:
            return
        thread_id, checkpoint_ns = namespace_of(config)
        checkpoint_id = config["configurable"]["checkpoint_id"]
        normal: dict[int, GraphCheckpointWrite] = {}
        special: dict[int, GraphCheckpointWrite] = {}
        for position, (channel, value) in enumerate(writes):
            value_type, blob = self.serde.dumps_typed(value)
            idx = WRITES_IDX_MAP.get(channel, position)
            (special if channel in WRITES_IDX_MAP else normal)[idx] = GraphCheckpointWrite(
                thread_id=thread_id, checkpoint_ns=checkpoint_ns, checkpoint_id=checkpoint_id,
                task_id=task_id, task_path=task_path, idx=idx, channel=channel,
                value_type=value_type, value=blob,
            )
        # One statement is atomic on its own; two are made one transaction.
        with transaction.atomic(using=self.using) if normal and special else nullcontext():
            if normal:
                insert(self.using, [*normal.values()], key=WRITE_KEY)
            if special:
                insert(self.using, [*special.values()], key=WRITE_KEY,
                       replace=["task_path", "channel", "value_type", "value"])

    def get_next_version(self, current: str | None, channel: None) -> str:
        """The next version of a channel: a zero-padded counter and a random tie-breaker.

        Strings, so versions sort as text; the counter goes first, so a later
        version always sorts after an earlier one.
        """
        if current is None:
            counter = 0
        elif isinstance(current, int):
            counter = current
        else:
            counter = int(current.split(".", 1)[0])
        return f"{counter + 1:032}.{random.random():016}"

    # -- deletes, copies and pruning (maintenance.py) ------------------------------------

    @leaves_connection_as_found
    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of the thread, in every namespace."""
        maintenance.delete_thread(self.using, thread_id)

    @leaves_connection_as_found
    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints the runs made (their ``metadata["run_id"]``), with their writes.

        A surviving checkpoint whose parent is deleted is left with no parent.
        """
        maintenance.delete_for_runs(self.using, run_ids)

    @leaves_connection_as_found
    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of one thread to a thread that has none.

        Raises ``ValueError`` when the target thread already has checkpoints or
        writes, and changes nothing then. Copying a thread that has nothing
        copies nothing.
        """
        maintenance.copy_thread(self.using, source_thread_id, target_thread_id)

    @leaves_connection_as_found
    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune the threads' checkpoints: ``"keep_latest"`` or ``"delete"``.

        ``"delete"`` deletes every checkpoint and write of the threads, in one
        transaction. ``"keep_latest"`` keeps each namespace's latest checkpoint
        (the one ``get_tuple`` loads) with its writes, and leaves it with no
        parent; it deletes a subgraph call's namespace (one with a ``:``, whose
        checkpoints name the root checkpoint the call started from) whole, once
        that root checkpoint is saved and not the one kept. Each thread is
        pruned in its own transaction and only below the latest checkpoint it
        read, so a run saving new checkpoints meanwhile loses nothing.

        Raises ``TypeError`` for a single string, ``ValueError`` for an unknown
        strategy, and ``NotImplementedError`` for ``"keep_latest"`` on threads
        that use a ``DeltaChannel`` (their latest value is rebuilt from older
        checkpoints), pruning nothing then.
        """
        maintenance.prune(self.using, thread_ids, strategy=strategy)

    # -- async twins: each runs its sync method in Django's sync thread ------------------

    aget_tuple = in_sync_thread(get_tuple)
    alist = iterated_in_sync_thread(list)
    aput = in_sync_thread(put)
    aput_writes = in_sync_thread(put_writes)
    adelete_thread = in_sync_thread(delete_thread)
    adelete_for_runs = in_sync_thread(delete_for_runs)
    acopy_thread = in_sync_thread(copy_thread)
    aprune = in_sync_thread(prune)

    # -- helpers -----------------------------------------------------------------------

    def _checkpoints(self) -> QuerySet[GraphCheckpoint]:
        return GraphCheckpoint.objects.using(self.using)

    def _writes(self) -> QuerySet[GraphCheckpointWrite]:
        return GraphCheckpointWrite.objects.using(self.using)

    def _table(self, model: type[Model]) -> str:
        return connections[self.using].ops.quote_name(model._meta.db_table)


def _in_order(writes: Iterable[GraphCheckpointWrite]) -> WriteRows:
    """``writes`` in ``writes_sort_key`` order, the order a live run applies them.

    Sorted here rather than by the database: its collation may order the
    punctuation of task paths differently.
    """
    return sorted(writes, key=lambda w: writes_sort_key(w.task_path, w.task_id, w.idx))
