"""The consumer that streams one run to one watcher, a page per connection.

``__init__`` says how the stream stays whole whatever the channel layer does;
who may watch is ``access``, what is read is ``reads``, the doorbell's group is
``groups``. The timing and page constants below are read here, where tests
patch them (``consumers.stream.POLL_INTERVAL`` ...).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from ..events import TERMINAL_TYPES, group_name
from ..models import Run
from ..scopes import is_active_user
from ..tokens import read_watch_ticket
from . import groups
from .access import (
    CLOSE_BAD_REQUEST,
    CLOSE_NORMAL,
    CLOSE_NOT_AUTHENTICATED,
    CLOSE_NOT_FOUND,
    CLOSE_TOO_FAR_BEHIND,
    BadQuery,
    access,
    read_query,
)
from .reads import BATCH, ended_by, open_stream, read_rows

#: How often a watcher looks at the database when no doorbell rings (seconds)...
POLL_INTERVAL = 0.5
#: ...backing off to this while the run stays quiet: each look is a query per watcher.
MAX_POLL_INTERVAL = 5.0

#: The most one connection is handed: a page, at most ``PAGE_EVENTS`` events and
#: ``PAGE_BYTES`` of JSON (at least one event, however large). A watcher with more to
#: come, replayed or live, is then closed 4408 and resumes with ``?after=``. Why a page
#: per connection and not "whatever the client has not read yet": under daphne the ASGI
#: ``send`` tells the application nothing, as daphne writes every message into Twisted's
#: transport buffer at once, read or not (no backpressure: django/daphne#170). A socket
#: that never reads held the whole stream in the server (20,000 events of 1 KB on 20
#: sockets took daphne from 195 to 610 MB). The application cannot see what was read,
#: so it bounds what it hands over. 512 KiB: a thousand stalled sockets hold at most half
#: a gigabyte, and a reader that keeps up reconnects once per 512 KiB of events (the
#: viewer does so at once). The count bounds what small events cost beside their bytes
#: (each is a message of its own in the server's buffer).
PAGE_BYTES = 512 * 1024
PAGE_EVENTS = 4 * BATCH

#: How often an open socket looks at its watcher's access again (seconds), whether the
#: watcher came with a session or with a ticket issued to them.
ACCESS_RECHECK_SECONDS = 1.0

log = logging.getLogger(__name__)


class Page:
    """What one connection may be handed: ``PAGE_EVENTS`` events, ``PAGE_BYTES`` of JSON."""

    def __init__(self) -> None:
        self.events = 0
        self.size = 0

    def take(self, text: str) -> bool:
        """Count ``text`` in, or say (False) that it no longer fits."""
        size = len(text)
        if self.events and (self.events >= PAGE_EVENTS or self.size + size > PAGE_BYTES):
            return False
        self.events += 1
        self.size += size
        return True


class RunStreamConsumer(AsyncJsonWebsocketConsumer):
    run: Run | None = None
    with_tokens = False
    last_seq = 0
    closed = False
    rang = False  # a doorbell arrived since the poller last looked
    #: Nothing has been sent since the socket opened, so its ``after`` may be past the
    #: end of the stream: the terminal event may be one it will never be sent.
    waiting_past = False
    page: Page  # what this connection has been handed
    #: The watcher's user, from its session or its ticket (``None`` for the holder of a
    #: spent pause's ticket), and when their access is next read afresh before more
    #: events go out.
    user_pk: Any = None
    recheck_at = 0.0

    async def connect(self) -> None:
        # Accept first, then refuse with a code: a close before accept reaches a
        # browser as a bare HTTP 403 (daphne), which tells it nothing.
        await self.accept()
        run_id = self.scope["url_route"]["kwargs"]["run_id"]
        try:
            after, ticket = read_query(self.scope.get("query_string", b""))
        except BadQuery as exc:
            await self.refuse(CLOSE_BAD_REQUEST, str(exc))
            return
        # A ticket speaks for the user it was issued to (or a spent pause), whoever's
        # session the socket carries; without one, the session is the watcher.
        claims = read_watch_ticket(ticket) if ticket else None
        user = None if ticket else self.scope.get("user")
        if not (claims is not None if ticket else is_active_user(user)):
            await self.refuse(CLOSE_NOT_AUTHENTICATED)
            return
        try:
            run_uuid = uuid.UUID(run_id)
        except ValueError:
            await self.refuse(CLOSE_NOT_FOUND)
            return
        self.last_seq = after
        self.lock = asyncio.Lock()
        # Join the group and read the rows at once (one database round trip), then read
        # once more after the first events are out: an event stored while the join was
        # under way may have rung before this watcher was in the group, and the second
        # read picks it up; every later one rings. A refused socket leaves the group
        # again when it disconnects.
        self.group = group_name(run_uuid)
        _, (self.run, code, self.user_pk, self.with_tokens, events, ended) = await asyncio.gather(
            self.join(), database_sync_to_async(open_stream)(run_uuid, user, claims, self.last_seq))
        if code is not None:
            await self.refuse(code)
            return
        self.recheck_at = time.monotonic() + ACCESS_RECHECK_SECONDS
        if ended:
            await self.finish()
            return
        self.waiting_past = not events
        self.page = Page()
        async with self.lock:
            await self.send_events(events, [json.dumps(event) for event in events])
        if not self.closed:
            await self.pump()
        if not self.closed:
            self.poller = asyncio.ensure_future(self.poll())

    async def refuse(self, code: int, reason: str | None = None) -> None:
        self.closed = True
        await self.close(code=code, reason=reason)

    async def finish(self) -> None:
        if not self.closed:
            self.closed = True
            await self.close(code=CLOSE_NORMAL)

    async def still_allowed(self) -> bool:
        """Whether this watcher may be sent more events; closes the socket when not.

        A watcher's access is read afresh at most every ``ACCESS_RECHECK_SECONDS``,
        before the next events go out: revoking it (deactivating the user, taking
        the scope or a permission away) takes effect on open sockets at the next
        event after that, for a session and a ticket issued to the user alike. The
        holder of a spent pause's ticket names nobody to revoke and is sent no token.
        """
        if self.user_pk is None or self.run is None or time.monotonic() < self.recheck_at:
            return True
        self.recheck_at = time.monotonic() + ACCESS_RECHECK_SECONDS
        code, self.with_tokens = await database_sync_to_async(access)(self.user_pk, self.run)
        if code is not None:
            await self.refuse(code, "access to this run was revoked")
            return False
        return True

    async def too_far_behind(self) -> None:
        await self.refuse(CLOSE_TOO_FAR_BEHIND,
                          f"too far behind: reconnect with ?after={self.last_seq}")

    async def finish_if_ended(self) -> None:
        """Close 1000 when the turn has ended at or before ``last_seq`` (``after`` was past it)."""
        if self.waiting_past and self.run is not None and await database_sync_to_async(
                ended_by)(self.run, self.last_seq):
            await self.finish()

    async def send_events(self, events: list[dict[str, Any]], texts: list[str]) -> None:
        """Send ``events`` (already encoded as ``texts``) that continue ``last_seq``, as far
        as this connection's page goes; then close it 4408."""
        if events and not self.closed and not await self.still_allowed():
            return
        for event, text in zip(events, texts, strict=True):
            if event["seq"] != self.last_seq + 1 or self.closed:
                return
            if not self.page.take(text):
                await self.too_far_behind()
                return
            await self.send(text_data=text)
            self.last_seq = event["seq"]
            self.waiting_past = False
            if event["type"] in TERMINAL_TYPES:
                await self.finish()
                return

    async def pump(self) -> None:
        """Send everything the database holds after ``last_seq`` (as far as the page goes)."""
        async with self.lock:
            while not self.closed and self.run is not None:
                if not await self.still_allowed():  # before the read: it mints tokens or not
                    return
                events, texts = await read_rows(self.run, self.last_seq, self.with_tokens)
                await self.send_events(events, texts)
                if len(events) < BATCH:
                    return

    async def poll(self) -> None:
        """The fallback for a layer that does not ring: read the rows when it is quiet.

        Nothing is read while doorbells arrive; a quiet run is looked at less
        and less often. Rows that moved with no doorbell mean the layer lost
        this watcher (a restarted Redis forgets its groups), so it joins again.
        """
        interval = POLL_INTERVAL
        while not self.closed:
            await asyncio.sleep(interval)
            if self.rang:
                self.rang, interval = False, POLL_INTERVAL
                continue
            before = self.last_seq
            try:
                await self.pump()
                if self.last_seq == before:  # the lost doorbell may be a terminal event's
                    await self.finish_if_ended()
            except Exception:  # a database hiccup must not end the fallback: look again later
                log.warning("polling %s failed", self.group, exc_info=True)
            if self.last_seq == before:
                interval = min(interval * 2, MAX_POLL_INTERVAL)
                continue
            interval = POLL_INTERVAL
            await self.join()

    async def symfonic_event(self, message: dict[str, Any]) -> None:
        """The doorbell. The next event in line is sent as it came; anything else reads rows."""
        self.rang = True
        if self.closed:
            return
        if message["seq"] <= self.last_seq:
            # A socket opened past the end of the stream is never sent the terminal event
            # (its seq is not after ``after``) but closes 1000 on it all the same. A rung
            # terminal event carries no data: one that does cannot be terminal.
            if message.get("event") is None:
                await self.finish_if_ended()
            return
        event = message.get("event")
        if event is not None and message["seq"] == self.last_seq + 1 and not self.lock.locked():
            # channels_redis hands one message object to every watcher in this
            # process: the first one to send it encodes it for all of them.
            text = message.get("text") or message.setdefault("text", json.dumps(event))
            async with self.lock:
                await self.send_events([event], [text])
            return
        await self.pump()

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Channels closes stale database connections before every handler: a hop
        # to the one thread all database calls share, where a doorbell would wait
        # behind every other watcher's queries. A doorbell touches the database
        # only through database_sync_to_async, which closes them itself.
        if message["type"] == "symfonic.event":
            await self.symfonic_event(message)
        else:
            await super().dispatch(message)

    async def join(self) -> None:
        """Join the run's group; a layer that fails or hangs costs only the doorbell."""
        await groups.join(self.channel_layer, self.group, self.channel_name)

    async def disconnect(self, code: int) -> None:
        self.stop_polling()
        if getattr(self, "group", None):
            await self.leave()

    async def leave(self) -> None:
        """Leave the run's group, taking turns with the other sockets of this process."""
        await groups.leave(self.channel_layer, self.group, self.channel_name)

    def stop_polling(self) -> None:
        self.closed = True
        poller = getattr(self, "poller", None)
        if poller is not None:
            poller.cancel()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        # A channel layer that fails while receiving (Redis restarted) ends the
        # consumer with an exception and no disconnect(): stop the poller anyway.
        # The client sees 1011 and reconnects with ?after=N.
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.stop_polling()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None,
                      **kwargs: Any) -> None:
        """Clients only listen; anything they send is ignored, unread.

        Not decoded either: the JSON consumer's own ``receive`` decodes every
        frame first, and a binary frame, text that is not JSON or JSON nested
        past Python's recursion limit ended the stream with 1011 and a traceback.
        """
