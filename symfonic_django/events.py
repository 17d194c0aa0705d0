"""Typed turn events, their JSON form, and publishing (persist, then announce).

The database is the stream; the channel layer is the doorbell. ``persist``
commits a ``TurnEvent`` with the next ``seq``; ``ring`` then tells the run's
group that something new is there. A lost doorbell costs latency, never data.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone

from .models import TurnEvent

log = logging.getLogger(__name__)

#: Seconds a doorbell may take: a layer that hangs (a pooled connection to a
#: restarted Redis) must not hold up a turn or a watcher; the rows are there.
LAYER_TIMEOUT = 2.0


def group_name(run_id: Any) -> str:
    """The channel-layer group of one run's watchers."""
    return f"symfonic.run.{run_id}"


@dataclass(frozen=True)
class Event:
    """Base of typed events; ``type`` is the pinned wire name."""

    type: ClassVar[str] = ""
    terminal: ClassVar[bool] = False

    def data(self) -> dict[str, Any]:
        """The event's fields as a dict (shallow: values are shared, not copied)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class TurnStarted(Event):
    type: ClassVar[str] = "turn.started"
    agent: str
    resumed_from_pause: str | None = None


@dataclass(frozen=True)
class MessageDelta(Event):
    type: ClassVar[str] = "message.delta"
    text: str


@dataclass(frozen=True)
class MessageCompleted(Event):
    type: ClassVar[str] = "message.completed"
    text: str


@dataclass(frozen=True)
class ToolStarted(Event):
    type: ClassVar[str] = "tool.started"
    tool_call_id: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolCompleted(Event):
    type: ClassVar[str] = "tool.completed"
    tool_call_id: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)
    result: Any = None


@dataclass(frozen=True)
class PauseRequested(Event):
    """Stored without a token; a watcher gets one minted when it is sent."""

    type: ClassVar[str] = "pause.requested"
    pause_id: str
    kind: str
    prompt: Any
    expires_at: str


@dataclass(frozen=True)
class TurnPaused(Event):
    type: ClassVar[str] = "turn.paused"
    terminal: ClassVar[bool] = True
    pause_ids: list[str]


@dataclass(frozen=True)
class TurnCompleted(Event):
    type: ClassVar[str] = "turn.completed"
    terminal: ClassVar[bool] = True
    output: Any = None


@dataclass(frozen=True)
class TurnFailed(Event):
    type: ClassVar[str] = "turn.failed"
    terminal: ClassVar[bool] = True
    code: str
    message: str = ""


EVENT_TYPES: dict[str, type[Event]] = {
    cls.type: cls
    for cls in (TurnStarted, MessageDelta, MessageCompleted, ToolStarted, ToolCompleted,
                PauseRequested, TurnPaused, TurnCompleted, TurnFailed)
}
TERMINAL_TYPES = frozenset(t for t, cls in EVENT_TYPES.items() if cls.terminal)


def next_seq(run_id: Any) -> int:
    return (TurnEvent.objects.filter(run_id=run_id).aggregate(m=Max("seq"))["m"] or 0) + 1


#: On PostgreSQL an event is one raw INSERT: a turn persists every event it streams,
#: and the ORM's per-row cost (model save, signals, SQL compilation) was most of it.
PG_INSERT = (f"INSERT INTO {TurnEvent._meta.db_table} (run_id, seq, type, data, created_at) "
             "VALUES (%s, %s, %s, %s, %s) RETURNING id")


def persist(run_id: Any, seq: int, event: Event) -> TurnEvent:
    """Insert one event. ``(run, seq)`` is unique: a second writer fails loudly."""
    row = TurnEvent(run_id=run_id, seq=seq, type=event.type, data=event.data(),
                    created_at=timezone.now())
    if connection.vendor != "postgresql":
        row.save(force_insert=True)
        return row
    run = TurnEvent._meta.get_field("run").get_db_prep_save(row.run_id, connection)
    data = connection.ops.adapt_json_value(row.data, None)
    with connection.cursor() as cursor:
        cursor.execute(PG_INSERT, [run, seq, row.type, data, row.created_at])
        row.pk = cursor.fetchone()[0]
    row._state.adding, row._state.db = False, connection.alias
    return row


async def aring(run_id: Any, seq: int, message: dict[str, Any] | None = None) -> None:
    """Announce ``seq`` to the run's watchers; never raises (it is only a doorbell).

    ``message`` is the event's wire form, so a watcher that is exactly one
    behind can send it without a query; any gap is filled from the database.
    """
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async with asyncio.timeout(LAYER_TIMEOUT):  # no task of its own, unlike wait_for
            await layer.group_send(
                group_name(run_id), {"type": "symfonic.event", "seq": seq, "event": message})
    except Exception:  # a full, unreachable or hanging layer must not fail the turn
        log.warning("channel layer send failed for run %s seq %s", run_id, seq, exc_info=True)


def ring(run_id: Any, seq: int) -> None:
    from asgiref.sync import async_to_sync

    async_to_sync(aring)(run_id, seq)


def publish(run_id: Any, event: Event, seq: int | None = None) -> TurnEvent:
    """Sync publish: persist now, ring the doorbell once the transaction commits."""
    row = persist(run_id, seq if seq is not None else next_seq(run_id), event)
    transaction.on_commit(lambda: ring(run_id, row.seq))
    return row


def wire(row: TurnEvent, root_run_id: str) -> dict[str, Any]:
    """The pinned websocket shape of a stored event (without any token)."""
    ts = row.created_at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return {"seq": row.seq, "type": row.type, "run_id": str(row.run_id),
            "root_run_id": root_run_id, "ts": ts, "data": row.data}


def wire_rows(rows: list[TurnEvent], root_run_id: str) -> list[dict[str, Any]]:
    """Stored events in wire form; ``pause.requested`` gets a freshly minted token."""
    from .models import Pause
    from .pauses import token_for

    pause_ids = [r.data.get("pause_id") for r in rows if r.type == PauseRequested.type]
    pauses = {str(p.pk): p for p in Pause.objects.filter(pk__in=pause_ids)} if pause_ids else {}
    out = []
    for row in rows:
        message = wire(row, root_run_id)
        if row.type == PauseRequested.type and row.data.get("pause_id") in pauses:
            message["data"] = {**row.data, "token": token_for(pauses[row.data["pause_id"]])}
        out.append(message)
    return out
