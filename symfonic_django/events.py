"""Typed turn events, their JSON form, and publishing (persist, then announce).

The database is the stream; the channel layer is the doorbell. ``append``
stores a ``TurnEvent`` with its ``seq``; once committed, ``ring`` tells the
run's group that something new is there. A lost doorbell costs latency, never
data. Events carry no credentials: whether a watcher gets a pause token with
``pause.requested`` is decided by the surface that delivers it.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db.models import Max
from django.utils import timezone

from .models import Run, TurnEvent

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
    """A tool call's end. ``status`` is "error" when the agent got an error in place of a
    result (a call the reviewer rejected, or a tool that raised), else "success"."""

    type: ClassVar[str] = "tool.completed"
    tool_call_id: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)
    result: Any = None
    status: str = "success"


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
    """The ``seq`` the run's next event takes (1 for a run with none)."""
    return int(TurnEvent.objects.filter(run_id=run_id).aggregate(m=Max("seq"))["m"] or 0) + 1


def rows_after(run_id: Any, after: int, limit: int) -> list[TurnEvent]:
    """The run's next ``limit`` stored events after ``after``, in order: the replay read.

    A run's ``seq`` is contiguous, so they are the ones up to ``after + limit``.
    Saying so bounds the index range read to one batch whatever the planner
    estimates (a long run skews them), instead of every row after ``after``.
    """
    return list(TurnEvent.objects.filter(run_id=run_id, seq__gt=after, seq__lte=after + limit)
                .order_by("seq")[:limit])


def append(run: Run, seq: int, event: Event) -> TurnEvent:
    """Store one event of ``run`` as ``seq``. ``(run, seq)`` is unique: a second writer
    fails loudly."""
    return TurnEvent.objects.create(run_id=run.pk, seq=seq, type=event.type, data=event.data(),
                                    scope_key=run.scope_key, created_at=timezone.now())


async def aring(run_id: Any, seq: int, message: dict[str, Any] | None = None) -> None:
    """Announce ``seq`` to the run's watchers; never raises (it is only a doorbell).

    ``message`` is the event's wire form, so a watcher that is exactly one
    behind can send it without a query; any gap is filled from the database.
    """
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
    """``aring`` from sync code (after a commit, outside a turn's event loop)."""
    async_to_sync(aring)(run_id, seq)


def wire(row: TurnEvent, root_run_id: str) -> dict[str, Any]:
    """The pinned websocket shape of a stored event (without any token)."""
    ts = row.created_at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return {"seq": row.seq, "type": row.type, "run_id": str(row.run_id),
            "root_run_id": root_run_id, "ts": ts, "data": row.data}
