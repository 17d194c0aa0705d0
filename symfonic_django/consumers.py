"""The websocket that streams one run: ``/ws/symfonic/runs/<run_id>/`` (DESIGN section 7).

The database is the stream; the channel layer is the doorbell. The consumer
remembers the last ``seq`` it sent and always sends what the database holds
after it. A doorbell that carries the very next event is sent as is; any gap
(a dropped doorbell, a reconnect with ``?after=N``, a process whose layer
never hears the worker) is filled from ``TurnEvent`` rows, and a short poll
covers a layer that never rings at all. So no event is lost, duplicated or
reordered, whatever the layer does.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from .events import TERMINAL_TYPES, group_name, wire_rows
from .models import Run, TurnEvent
from .scopes import may_review, reviewer_scope_keys
from .tokens import verify_watch_ticket

#: How often a watcher looks at the database when no doorbell rings (seconds).
POLL_INTERVAL = 0.5
#: Rows read per database round trip.
BATCH = 500

CLOSE_NORMAL = 1000
CLOSE_NOT_AUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404


def _load_run(run_id: str) -> Run | None:
    try:
        return Run.objects.filter(pk=run_id).only("id", "root_id", "scope_key").first()
    except Exception:  # not a UUID
        return None


def _authorize(user: Any, run: Run) -> int | None:
    """A close code refusing ``user``, or ``None`` when they may watch ``run``."""
    if user is None or not user.is_authenticated:
        return CLOSE_NOT_AUTHENTICATED
    if not reviewer_scope_keys(user):
        return CLOSE_FORBIDDEN
    if not may_review(user, run.scope_key):
        return CLOSE_NOT_FOUND  # no existence leak: same as an unknown run
    return None


def _rows_after(run_id: Any, after: int, root_run_id: str) -> list[dict[str, Any]]:
    rows = list(TurnEvent.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")[:BATCH])
    return wire_rows(rows, root_run_id)


def _ended_before(run_id: Any, after: int) -> bool:
    return TurnEvent.objects.filter(run_id=run_id, seq__lte=after,
                                    type__in=TERMINAL_TYPES).exists()


class RunStreamConsumer(AsyncJsonWebsocketConsumer):
    run: Run | None = None
    last_seq = 0
    closed = False

    async def connect(self) -> None:
        # Accept first, then refuse with a code: a close before accept reaches a
        # browser as a bare HTTP 403 (daphne), which tells it nothing.
        await self.accept()
        run_id = self.scope["url_route"]["kwargs"]["run_id"]
        query = parse_qs(self.scope.get("query_string", b"").decode())
        ticket = (query.get("ticket") or [""])[0]
        after = (query.get("after") or ["0"])[0]
        if not after.isdigit():
            await self.refuse(CLOSE_NOT_FOUND)
            return
        self.run = await database_sync_to_async(_load_run)(run_id)
        if ticket:
            if not verify_watch_ticket(ticket, run_id):
                await self.refuse(CLOSE_NOT_AUTHENTICATED)
                return
            if self.run is None:
                await self.refuse(CLOSE_NOT_FOUND)
                return
        else:
            user = self.scope.get("user")
            if user is None or not user.is_authenticated:
                await self.refuse(CLOSE_NOT_AUTHENTICATED)
                return
            if self.run is None:
                await self.refuse(CLOSE_NOT_FOUND)
                return
            code = await database_sync_to_async(_authorize)(user, self.run)
            if code is not None:
                await self.refuse(code)
                return
        self.last_seq = int(after)
        self.lock = asyncio.Lock()
        self.group = group_name(self.run.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        if await database_sync_to_async(_ended_before)(self.run.pk, self.last_seq):
            await self.finish()
            return
        await self.pump()
        if not self.closed:
            self.poller = asyncio.ensure_future(self.poll())

    async def refuse(self, code: int) -> None:
        self.closed = True
        await self.close(code=code)

    async def finish(self) -> None:
        if not self.closed:
            self.closed = True
            await self.close(code=CLOSE_NORMAL)

    async def send_events(self, events: list[dict[str, Any]]) -> None:
        for event in events:
            if event["seq"] != self.last_seq + 1 or self.closed:
                return
            await self.send_json(event)
            self.last_seq = event["seq"]
            if event["type"] in TERMINAL_TYPES:
                await self.finish()
                return

    async def pump(self) -> None:
        """Send everything the database holds after ``last_seq``."""
        async with self.lock:
            while not self.closed:
                events = await database_sync_to_async(_rows_after)(
                    self.run.pk, self.last_seq, self.run.root_run_id)
                await self.send_events(events)
                if len(events) < BATCH:
                    return

    async def poll(self) -> None:
        while not self.closed:
            await asyncio.sleep(POLL_INTERVAL)
            await self.pump()

    async def symfonic_event(self, message: dict[str, Any]) -> None:
        """The doorbell. The next event in line is sent as it came; anything else reads rows."""
        if self.closed or message["seq"] <= self.last_seq:
            return
        event = message.get("event")
        if event is not None and message["seq"] == self.last_seq + 1 and not self.lock.locked():
            async with self.lock:
                await self.send_events([event])
            return
        await self.pump()

    async def disconnect(self, code: int) -> None:
        self.closed = True
        poller = getattr(self, "poller", None)
        if poller is not None:
            poller.cancel()
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """Clients only listen; anything they send is ignored."""
