"""``pg.insert`` (the saver's ``INSERT ... ON CONFLICT``) stores what the ORM's portable path stores.

The ORM's own way to write rows that may collide is ``bulk_create`` with
``ignore_conflicts`` (``insert`` without ``replace``) or ``update_conflicts``
(``insert`` with ``replace``). Each test writes the same rows both ways, to two
threads, in two rounds whose second collides with the first, and reads back
the same rows: every column as the ORM reads it, the binary and JSON values
included, over more rows than one statement takes (``insert`` batches them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from django.db.models import Model

from symfonic_django.checkpoint.keys import CHECKPOINT_KEY, WRITE_KEY
from symfonic_django.models import GraphCheckpoint, GraphCheckpointWrite
from symfonic_django.pg import insert

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

ROWS = 300  # more than one statement's worth of either model (999 parameters a statement)


def checkpoints(thread_id: str, round: int) -> list[GraphCheckpoint]:
    # The second round keeps the first's ids 150-299 and adds 300-449.
    first = 0 if round == 1 else ROWS // 2
    return [GraphCheckpoint(
        thread_id=thread_id, checkpoint_ns="" if n % 3 else "tool:1", checkpoint_id=f"{n:05}",
        parent_checkpoint_id=f"{n - 1:05}" if n else "", run_id=f"run-{round}",
        checkpoint_type="msgpack", checkpoint=bytes([round, n % 256, 0]) + b"\xff",
        metadata={"round": round, "step": n, "note": "caf\u00e9", "none": None},
    ) for n in range(first, first + ROWS)]


def writes(thread_id: str, round: int) -> list[GraphCheckpointWrite]:
    first = 0 if round == 1 else ROWS // 2
    return [GraphCheckpointWrite(
        thread_id=thread_id, checkpoint_ns="", checkpoint_id=f"{n // 4:05}",
        task_id=f"task-{n % 4}", task_path=f"~path, {round}", idx=n % 7 - 3,
        channel=f"channel-{round}", value_type="msgpack", value=bytes([round, n % 256]),
    ) for n in range(first, first + ROWS)]


def stored(model: type[Model], thread_id: str) -> list[dict[str, Any]]:
    fields = [f.name for f in model._meta.concrete_fields if not f.primary_key]
    rows = model._default_manager.filter(thread_id=thread_id).order_by(*fields).values(*fields)
    return [{**row, "thread_id": "T",
             **{name: bytes(value) for name, value in row.items()
                if isinstance(value, memoryview)}} for row in rows]


@pytest.mark.parametrize(("model", "make", "key", "replace"), [
    (GraphCheckpoint, checkpoints, CHECKPOINT_KEY, ()),
    (GraphCheckpoint, checkpoints, CHECKPOINT_KEY,
     ("run_id", "checkpoint_type", "checkpoint", "metadata")),
    (GraphCheckpointWrite, writes, WRITE_KEY, ()),
    (GraphCheckpointWrite, writes, WRITE_KEY, ("task_path", "channel", "value_type", "value")),
], ids=["checkpoints-kept", "checkpoints-replaced", "writes-kept", "writes-replaced"])
def test_insert_stores_what_bulk_create_stores(
        model: type[Model], make: Callable[[str, int], Sequence[Model]],
        key: Sequence[str], replace: Sequence[str]) -> None:
    for round in (1, 2):
        insert("default", make("by-insert", round), key=key, replace=replace)
        if replace:
            model._default_manager.bulk_create(
                make("by-orm", round), update_conflicts=True, unique_fields=key,
                update_fields=replace)
        else:
            model._default_manager.bulk_create(make("by-orm", round), ignore_conflicts=True)
        assert stored(model, "by-insert") == stored(model, "by-orm")
    rows = stored(model, "by-insert")
    # The second round's first half collided with the first round's second half: those
    # rows took the second round's values only where asked; its second half went in.
    assert len(rows) == ROWS + ROWS // 2
    second_round = [row for row in rows
                    if row.get("run_id") == "run-2" or row.get("channel") == "channel-2"]
    assert len(second_round) == (ROWS if replace else ROWS // 2)
