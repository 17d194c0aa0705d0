"""A LangGraph checkpoint saver on the Django ORM: graph state in the project's database.

``DjangoSaver`` keeps a graph's checkpoints in ``GraphCheckpoint`` rows and the
writes its tasks leave after each checkpoint in ``GraphCheckpointWrite`` rows,
in the database the pauses live in, so a pause and the graph state that
explains it are committed, backed up and restored together::

    graph = builder.compile(checkpointer=DjangoSaver())

It needs the ``[langgraph]`` extra; nothing else in the package imports this
module unconditionally, and the models do not need LangGraph. Any other
checkpointer (``langgraph-checkpoint-postgres``, say) may be passed instead.

Every operation is one sync method; its async twin runs that method through
``sync_to_async``, because Django's ORM is sync and a transaction must never
span an ``await``. The three calls a graph makes on every step (``put``,
``put_writes``, ``get_tuple``) are plain statements that PostgreSQL and
SQLite both run (``insert``, and one ``raw`` read): the ORM's query building
costs more than the round trip, and ``bulk_create`` adds a transaction to
every insert (``bench/bench_checkpoint.py`` measured both); the rest is ORM.
Values are stored as the saver's serializer makes them (``dumps_typed``: a
type name and bytes), so a custom or encrypting ``serde`` applies to
everything but the metadata, which is JSON because ``list(filter=...)``
searches it.
"""

from __future__ import annotations

import functools
import random
from collections import defaultdict
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import nullcontext
from typing import Any, Concatenate, ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import connections, transaction
from django.db.models import Field, Max, Model, Q, QuerySet
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

from .models import GraphCheckpoint, GraphCheckpointWrite

__all__ = ["DjangoSaver"]

PRUNE_STRATEGIES = ("keep_latest", "delete")

#: Metadata keys that mark a thread using a ``DeltaChannel``: its latest value is
#: rebuilt from older checkpoints' writes, so ``keep_latest`` must not drop them.
#: (``delta_writes_versioned`` is what LangGraph.js writes.)
DELTA_METADATA_KEYS = ("counters_since_delta_snapshot", "delta_writes_versioned")

#: How many rows ``copy_thread`` reads and inserts at a time.
COPY_BATCH = 500

#: The unique keys of the two models (their constraints), and one checkpoint's key.
CHECKPOINT_KEY = ("thread_id", "checkpoint_ns", "checkpoint_id")
WRITE_KEY = (*CHECKPOINT_KEY, "task_id", "idx")
CheckpointKey = tuple[str, str, str]

# Named here: inside the saver, ``list`` is its method.
Tuples = Sequence[CheckpointTuple]
WriteRows = list[GraphCheckpointWrite]


P = ParamSpec("P")
R = TypeVar("R")


def leaves_connection_as_found(
    operation: Callable[Concatenate[DjangoSaver, P], R],
) -> Callable[Concatenate[DjangoSaver, P], R]:
    """Run ``operation``, then close the database connection if the operation opened it.

    A sync graph saves its checkpoints from LangGraph's own worker threads,
    which Django's request and task hygiene never reaches: a connection they
    opened would stay open, or stay taken from the pool, after the thread is
    gone. A thread that already had a connection (a request, a turn, a test)
    keeps it; with a pool, closing hands the connection back.
    """

    @functools.wraps(operation)
    def run(saver: DjangoSaver, /, *args: P.args, **kwargs: P.kwargs) -> R:
        connection = connections[saver.using]
        opened_here = connection.connection is None
        try:
            return operation(saver, *args, **kwargs)
        finally:
            if opened_here and not connection.in_atomic_block:
                connection.close()

    return run


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
        configurable = config["configurable"]
        params = [str(configurable["thread_id"]), configurable.get("checkpoint_ns", "")]
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
            f" FROM (SELECT * FROM {_table(GraphCheckpoint, self.using)} {which}) c"
            f" LEFT JOIN {_table(GraphCheckpointWrite, self.using)} w"
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
        for write in self._writes().filter(_any_checkpoint(_key(row) for row in checkpoints)):
            writes[(write.thread_id, write.checkpoint_ns, write.checkpoint_id)].append(write)
        return [self._tuple(row, _in_order(writes[_key(row)])) for row in checkpoints]

    def _tuple(self, row: GraphCheckpoint, writes: WriteRows) -> CheckpointTuple:
        checkpoint: Checkpoint = self.serde.loads_typed(
            (row.checkpoint_type, bytes(row.checkpoint))
        )
        parent = (
            _config(row.thread_id, row.checkpoint_ns, row.parent_checkpoint_id)
            if row.parent_checkpoint_id
            else None
        )
        return CheckpointTuple(
            config=_config(row.thread_id, row.checkpoint_ns, row.checkpoint_id),
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
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        checkpoint_ns = configurable.get("checkpoint_ns", "")
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
        return _config(thread_id, checkpoint_ns, checkpoint["id"])

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
        configurable = config["configurable"]
        normal: dict[int, GraphCheckpointWrite] = {}
        special: dict[int, GraphCheckpointWrite] = {}
        for position, (channel, value) in enumerate(writes):
            value_type, blob = self.serde.dumps_typed(value)
            idx = WRITES_IDX_MAP.get(channel, position)
            (special if channel in WRITES_IDX_MAP else normal)[idx] = GraphCheckpointWrite(
                thread_id=str(configurable["thread_id"]),
                checkpoint_ns=configurable.get("checkpoint_ns", ""),
                checkpoint_id=configurable["checkpoint_id"],
                task_id=task_id,
                task_path=task_path,
                idx=idx,
                channel=channel,
                value_type=value_type,
                value=blob,
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

    # -- deletes and copies ------------------------------------------------------------

    @leaves_connection_as_found
    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of the thread, in every namespace."""
        thread_id = str(thread_id)
        with transaction.atomic(using=self.using):
            self._writes().filter(thread_id=thread_id).delete()
            self._checkpoints().filter(thread_id=thread_id).delete()

    @leaves_connection_as_found
    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints the runs made (their ``metadata["run_id"]``), with their writes.

        A surviving checkpoint whose parent is deleted is left with no parent.
        """
        run_ids = [str(run_id) for run_id in run_ids]
        if not run_ids:
            return
        with transaction.atomic(using=self.using):
            doomed: Sequence[CheckpointKey] = [
                *self._checkpoints().filter(run_id__in=run_ids).values_list(*CHECKPOINT_KEY)
            ]
            if not doomed:
                return
            self._writes().filter(_any_checkpoint(doomed)).delete()
            self._checkpoints().filter(_any_checkpoint(doomed)).delete()
            self._checkpoints().filter(_any_checkpoint(doomed, via="parent_checkpoint_id")).update(
                parent_checkpoint_id=""
            )

    @leaves_connection_as_found
    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of one thread to a thread that has none.

        Raises ``ValueError`` when the target thread already has checkpoints or
        writes, and changes nothing then. Copying a thread that has nothing
        copies nothing.
        """
        source, target = str(source_thread_id), str(target_thread_id)
        with transaction.atomic(using=self.using):
            if (
                self._checkpoints().filter(thread_id=target).exists()
                or self._writes().filter(thread_id=target).exists()
            ):
                raise ValueError(
                    f"Thread {target!r} already has checkpoints: copy_thread copies into "
                    "an empty thread."
                )
            for model in (GraphCheckpoint, GraphCheckpointWrite):
                rows = model.objects.using(self.using).filter(thread_id=source).order_by("pk")
                batch: list[Any] = []
                for row in rows.iterator(chunk_size=COPY_BATCH):
                    row.pk = None
                    row.thread_id = target
                    batch.append(row)
                    if len(batch) == COPY_BATCH:
                        model.objects.using(self.using).bulk_create(batch)
                        batch = []
                model.objects.using(self.using).bulk_create(batch)

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
        if isinstance(thread_ids, str):
            raise TypeError("thread_ids must be a sequence of thread ids, not a str")
        if strategy not in PRUNE_STRATEGIES:
            raise ValueError(f"Unknown prune strategy: {strategy!r}")
        thread_ids = [str(thread_id) for thread_id in thread_ids]
        if not thread_ids:
            return
        if strategy == "delete":
            with transaction.atomic(using=self.using):
                self._writes().filter(thread_id__in=thread_ids).delete()
                self._checkpoints().filter(thread_id__in=thread_ids).delete()
            return
        uses_delta = Q()
        for key in DELTA_METADATA_KEYS:
            uses_delta |= Q(metadata__has_key=key)
        if refused := sorted(
            set(
                self._checkpoints()
                .filter(uses_delta, thread_id__in=thread_ids)
                .values_list("thread_id", flat=True)
            )
        ):
            raise NotImplementedError(
                f"keep_latest can't prune threads that use a DeltaChannel: {', '.join(refused)}"
            )
        for thread_id in thread_ids:
            self._keep_latest(thread_id)

    def _keep_latest(self, thread_id: str) -> None:
        with transaction.atomic(using=self.using):
            thread = self._checkpoints().filter(thread_id=thread_id)
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
                    _any_checkpoint(
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
            self._writes().filter(older, thread_id=thread_id).delete()
            thread.filter(older).delete()
            thread.filter(
                _any_checkpoint((thread_id, ns, head) for ns, head in heads.items())
            ).exclude(parent_checkpoint_id="").update(parent_checkpoint_id="")

    # -- async twins: each runs its sync method in Django's sync thread ------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await sync_to_async(self.get_tuple)(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        for checkpoint_tuple in await sync_to_async(self._search)(config, filter, before, limit):
            yield checkpoint_tuple

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await sync_to_async(self.put)(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await sync_to_async(self.put_writes)(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await sync_to_async(self.delete_thread)(thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await sync_to_async(self.delete_for_runs)(run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await sync_to_async(self.copy_thread)(source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await sync_to_async(self.prune)(thread_ids, strategy=strategy)

    # -- helpers -----------------------------------------------------------------------

    def _checkpoints(self) -> QuerySet[GraphCheckpoint]:
        return GraphCheckpoint.objects.using(self.using)

    def _writes(self) -> QuerySet[GraphCheckpointWrite]:
        return GraphCheckpointWrite.objects.using(self.using)


def _config(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def _key(row: GraphCheckpoint) -> CheckpointKey:
    return (row.thread_id, row.checkpoint_ns, row.checkpoint_id)


def _any_checkpoint(keys: Iterable[CheckpointKey], *, via: str = "checkpoint_id") -> Q:
    """Rows naming any of these checkpoints: one ``IN`` per thread and namespace.

    ``via`` is the column that holds the checkpoint id (``parent_checkpoint_id``
    finds the children). No keys match nothing.
    """
    by_namespace: defaultdict[tuple[str, str], list[str]] = defaultdict(list)
    for thread_id, checkpoint_ns, checkpoint_id in keys:
        by_namespace[(thread_id, checkpoint_ns)].append(checkpoint_id)
    if not by_namespace:
        return Q(pk__in=[])
    matches = Q()
    for (thread_id, checkpoint_ns), ids in by_namespace.items():
        matches |= Q(thread_id=thread_id, checkpoint_ns=checkpoint_ns, **{f"{via}__in": ids})
    return matches


def _in_order(writes: Iterable[GraphCheckpointWrite]) -> WriteRows:
    """``writes`` in ``writes_sort_key`` order, the order a live run applies them.

    Sorted here rather than by the database: its collation may order the
    punctuation of task paths differently.
    """
    return sorted(writes, key=lambda w: writes_sort_key(w.task_path, w.task_id, w.idx))


def _table(model: type[Model], using: str) -> str:
    return connections[using].ops.quote_name(model._meta.db_table)


def insert(using: str, rows: Sequence[Model], *, key: Sequence[str],
           replace: Sequence[str] = ()) -> None:
    """Insert ``rows`` (of one model) with ``INSERT ... ON CONFLICT``, one statement a batch.

    A row whose ``key`` columns match a stored row's replaces that row's
    ``replace`` columns or, with none given, is dropped. A statement is atomic
    on its own, so this takes one round trip where ``bulk_create`` takes three
    (it wraps every call in a transaction: BEGIN, INSERT, COMMIT), and skips
    the ORM's query building, which costs more than the round trip here
    (``bench/bench_checkpoint.py``). PostgreSQL and SQLite (3.24+) run the same
    statement; each value is prepared by its field's ``get_db_prep_save``, as
    Django prepares it for an insert.
    """
    model = type(rows[0])
    connection = connections[using]
    quote = connection.ops.quote_name
    fields = [
        field for field in model._meta.get_fields()
        if isinstance(field, Field) and field.concrete and not field.primary_key
    ]
    values = "(" + ", ".join(["%s"] * len(fields)) + ")"
    columns = [quote(_column(model, field.name)) for field in fields]
    on_conflict = ", ".join(quote(_column(model, name)) for name in key)
    if replace:
        replaced = [quote(_column(model, name)) for name in replace]
        action = "DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in replaced)
    else:
        action = "DO NOTHING"

    def sql(count: int) -> str:
        return (
            f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(columns)})"
            f" VALUES {', '.join([values] * count)} ON CONFLICT ({on_conflict}) {action}"
        )

    # Rows go in batches within SQLite's 999 parameters a statement; more than one
    # batch is made one transaction.
    per_statement = max(1, 999 // len(fields))
    batches = [rows[i:i + per_statement] for i in range(0, len(rows), per_statement)]
    with transaction.atomic(using=using) if len(batches) > 1 else nullcontext():
        for batch in batches:
            params = [
                field.get_db_prep_save(getattr(row, field.attname), connection)
                for row in batch for field in fields
            ]
            with connection.cursor() as cursor:
                cursor.execute(sql(len(batch)), params)


def _column(model: type[Model], name: str) -> str:
    field = model._meta.get_field(name)
    assert isinstance(field, Field) and field.column is not None
    return field.column
