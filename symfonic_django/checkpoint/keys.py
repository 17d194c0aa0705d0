"""How the saver names a checkpoint: its key as rows hold it, and as LangGraph's config gives it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from django.db.models import Q
from langchain_core.runnables import RunnableConfig

from ..models import GraphCheckpoint

#: The unique keys of the two models (their constraints), and one checkpoint's key.
CHECKPOINT_KEY = ("thread_id", "checkpoint_ns", "checkpoint_id")
WRITE_KEY = (*CHECKPOINT_KEY, "task_id", "idx")
CheckpointKey = tuple[str, str, str]


def namespace_of(config: RunnableConfig) -> tuple[str, str]:
    """The thread id and checkpoint namespace ``config`` names, as the rows store them."""
    configurable = config["configurable"]
    return str(configurable["thread_id"]), configurable.get("checkpoint_ns", "")


def config_of(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> RunnableConfig:
    """The config that names one checkpoint."""
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def key_of(row: GraphCheckpoint) -> CheckpointKey:
    return (row.thread_id, row.checkpoint_ns, row.checkpoint_id)


def any_checkpoint(keys: Iterable[CheckpointKey], *, via: str = "checkpoint_id") -> Q:
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
