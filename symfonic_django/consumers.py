"""The websocket that streams one run: ``/ws/symfonic/runs/<run_id>/`` (docs/design.md section 6).

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
import json
import logging
import re
import time
import uuid
import weakref
from typing import Any
from urllib.parse import parse_qsl

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer, AsyncWebsocketConsumer
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

from .delivery import may_hold_tokens, wire_events
from .events import LAYER_TIMEOUT, TERMINAL_TYPES, group_name, rows_after
from .models import Pause, Run, RunStatus, TurnEvent
from .scopes import is_active_user, may_read_run, reads_anything
from .tokens import MAX_TOKEN_LENGTH, WatchTicket, read_watch_ticket

#: How often a watcher looks at the database when no doorbell rings (seconds)...
POLL_INTERVAL = 0.5
#: ...backing off to this while the run stays quiet: each look is a query per watcher.
MAX_POLL_INTERVAL = 5.0
#: Rows read per database round trip.
BATCH = 500

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

log = logging.getLogger(__name__)

#: Statuses in which a run's stream has ended (until an operator retries a failed run).
ENDED = frozenset({RunStatus.PAUSED, RunStatus.COMPLETED, RunStatus.FAILED})

#: How often an open socket looks at its watcher's access again (seconds), whether the
#: watcher came with a session or with a ticket issued to them.
ACCESS_RECHECK_SECONDS = 1.0

CLOSE_NORMAL = 1000
CLOSE_BAD_REQUEST = 4400
CLOSE_NOT_AUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
CLOSE_TOO_FAR_BEHIND = 4408

#: Group operations (join, leave) in flight at once per event loop. channels_redis takes a
#: connection from redis-py's asyncio pool for each, and that pool raises
#: ``MaxConnectionsError`` rather than wait once 100 (its default) are in use: 300 sockets
#: closing at once left up to 280 members in the group. Taking turns keeps a burst well
#: inside the pool, beside the layer's own receive and the doorbells it sends.
GROUP_OPERATIONS = 20
#: Attempts at leaving a group (a quarter, then half a second apart): a failure (a Redis
#: restart) must not leave a member behind when a second try would have removed it.
LEAVE_ATTEMPTS = 3


#: ``after`` is a ``seq``, a positive 32-bit integer column: ASCII digits, at most this.
MAX_AFTER = 2**31 - 1
#: A watch ticket is ``<claims>:<timestamp>:<signature>`` in URL-safe base64.
TICKET = re.compile(r"[A-Za-z0-9_:-]+")
QUERY_KEYS = frozenset({"after", "ticket"})


class BadQuery(ValueError):
    """A websocket query this consumer cannot read; its message is the close reason."""


def read_query(raw: bytes) -> tuple[int, str]:
    """``(after, ticket)`` from a query string; ``BadQuery`` says why it cannot be read.

    Strict, since a query is typed by hand or by an attacker: ASCII only, each
    known parameter at most once, ``after`` ASCII digits within a ``seq``, and a
    ticket made of the characters a ticket is made of. Unknown parameters are
    ignored, as a URL's tracking junk would be.
    """
    try:
        text = raw.decode("ascii")
        pairs = parse_qsl(text, keep_blank_values=True, strict_parsing=False,
                          max_num_fields=20, errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise BadQuery("The query string is not ASCII and URL-encoded.") from None
    seen: dict[str, str] = {}
    for key, value in pairs:
        if key in QUERY_KEYS and key in seen:
            raise BadQuery(f"The query gives {key} more than once.")
        seen[key] = value
    after = seen.get("after", "0")
    if not (after.isascii() and after.isdigit() and len(after) <= 10 and int(after) <= MAX_AFTER):
        raise BadQuery(f"after must be a whole number from 0 to {MAX_AFTER}.")
    ticket = seen.get("ticket", "")
    if ticket and (len(ticket) > MAX_TOKEN_LENGTH or not TICKET.fullmatch(ticket)):
        raise BadQuery("The ticket is malformed.")
    return int(after), ticket


def _authorize(user: Any, run: Run | None) -> int | None:
    """A close code refusing ``user``, or ``None`` when they may watch ``run``.

    The read rule is ``scopes.may_read_run``. A run the user may not read is
    4404, exactly as an unknown one (no existence leak); a user who may read no
    run at all is 4403, whatever run they ask for.
    """
    if not is_active_user(user):
        return CLOSE_NOT_AUTHENTICATED
    if run is not None and may_read_run(user, run):
        return None
    return CLOSE_NOT_FOUND if reads_anything(user) else CLOSE_FORBIDDEN


def _active_user(user_pk: Any) -> Any:
    """The active user of primary key ``user_pk`` (as a ticket names it), or ``None``."""
    try:
        return get_user_model().objects.filter(pk=user_pk, is_active=True).first()
    except (ValueError, ValidationError):  # not a key of this user model
        return None


def _access(user_pk: Any, run: Run) -> tuple[int | None, bool]:
    """A watcher's access now: a close code refusing them (or ``None``), and whether they
    are still sent tokens. Read afresh: a user removed from the scope, deactivated or
    stripped of a permission loses it at once, whether they watch with their session or
    with a ticket issued to them."""
    user = _active_user(user_pk)
    if user is None:
        return CLOSE_NOT_AUTHENTICATED, False
    code = _authorize(user, run)
    return code, code is None and may_hold_tokens(user, run)


def _ticket_opens(ticket: WatchTicket, run_id: uuid.UUID, run: Run | None) -> bool:
    """Whether ``ticket`` opens ``run_id``: the run it was issued for, or (for a user's
    ticket) a run of the same tree; a spent pause's ticket opens only its continuation."""
    if str(run_id) == ticket.run_id:
        return True
    if run is None or ticket.user_pk is None:
        return False
    return str(run.root_id) == ticket.root_run_id


def _watcher(run: Run | None, run_id: uuid.UUID, user: Any,
             ticket: WatchTicket | None) -> tuple[int | None, Any]:
    """Who watches: a close code refusing them (or ``None``), and the user to judge
    (``None`` for the holder of a spent pause's ticket, who is sent no token)."""
    if ticket is None:
        return _authorize(user, run), user
    if not _ticket_opens(ticket, run_id, run):
        return CLOSE_NOT_AUTHENTICATED, None  # the ticket is not for this run
    if ticket.pause_id is None:
        holder = _active_user(ticket.user_pk)
        return (_authorize(holder, run) if holder is not None else CLOSE_NOT_AUTHENTICATED,
                holder)
    if run is None:
        return CLOSE_NOT_FOUND, None
    spent = Pause.objects.filter(pk=ticket.pause_id, continuation_id=run.pk).exists()
    return (None if spent else CLOSE_FORBIDDEN), None


def _rows_after(run: Run, after: int, with_tokens: bool) -> list[dict[str, Any]]:
    """The run's first ``BATCH`` events after ``after``, in wire form."""
    return wire_events(rows_after(run.pk, after, BATCH), run, with_tokens=with_tokens)


def _open(run_id: uuid.UUID, user: Any, ticket: WatchTicket | None, after: int,
          ) -> tuple[Run | None, int | None, Any, bool, list[dict[str, Any]], bool]:
    """Everything a new watcher needs: the run, a refusal, the user whose access is
    rechecked (``None``: nobody to recheck), tokens or not, the first events, and
    whether the turn had already ended.

    A session watcher is ``user``; a ticket holder is the user the ticket was
    issued to, looked up afresh (or, for a spent pause's ticket, nobody: it is
    sent no token). The turn had ended by ``after`` when the run is in a final
    status and nothing is stored after ``after`` (a run an operator retried is
    queued again, and its stream goes on).
    """
    run = Run.objects.filter(pk=run_id).only(
        "id", "root_id", "scope_key", "status", "started_by_id").first()
    code, watcher = _watcher(run, run_id, user, ticket)
    if code is not None or run is None:
        return run, code if code is not None else CLOSE_NOT_FOUND, None, False, [], False
    with_tokens = may_hold_tokens(watcher, run)
    events = _rows_after(run, after, with_tokens)
    return (run, None, watcher.pk if watcher is not None else None, with_tokens, events,
            not events and run.status in ENDED)


def _ended_by(run: Run, seq: int) -> bool:
    """Whether the run's turn has ended with nothing stored after ``seq``: its terminal
    event (written in the same transaction as its final status) is at or before ``seq``."""
    return (Run.objects.filter(pk=run.pk, status__in=ENDED).exists()
            and not TurnEvent.objects.filter(run_id=run.pk, seq__gt=seq).exists())


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


_group_turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary())


def group_turn() -> asyncio.Semaphore:
    """The running loop's turn at a group operation (``GROUP_OPERATIONS`` at once)."""
    loop = asyncio.get_running_loop()
    turn = _group_turns.get(loop)
    if turn is None:
        turn = _group_turns[loop] = asyncio.Semaphore(GROUP_OPERATIONS)
    return turn


_reads: dict[tuple[Any, ...], asyncio.Future[tuple[list[dict[str, Any]], list[str]]]] = {}


async def read_rows(run: Run, after: int, with_tokens: bool,
                    ) -> tuple[list[dict[str, Any]], list[str]]:
    """The events after ``after`` and their JSON text, read once for every watcher that asks.

    When a doorbell is lost, every watcher of the run in this process asks at
    once for the same rows; one query (and one encoding) answers them all,
    instead of one each queued on the single thread database calls share.
    """
    key = (id(asyncio.get_running_loop()), str(run.pk), after, with_tokens)
    pending = _reads.get(key)
    if pending is None:
        async def read() -> tuple[list[dict[str, Any]], list[str]]:
            events = await database_sync_to_async(_rows_after)(run, after, with_tokens)
            return events, [json.dumps(event) for event in events]

        pending = _reads[key] = asyncio.ensure_future(read())
        pending.add_done_callback(lambda _: _reads.pop(key, None))
    return await asyncio.shield(pending)  # one watcher leaving must not cancel the others' read


class UnknownStreamConsumer(AsyncWebsocketConsumer):
    """A websocket to a path no route serves: accepted, then closed 4404, as an unknown run.

    Without a route Channels raises, and the server answers the handshake with a 500
    and logs a traceback for every such request anyone sends.
    """

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=CLOSE_NOT_FOUND)


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
            self.join(), database_sync_to_async(_open)(run_uuid, user, claims, self.last_seq))
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
        code, self.with_tokens = await database_sync_to_async(_access)(self.user_pk, self.run)
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
                _ended_by)(self.run, self.last_seq):
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
        """Join the run's group; a layer that fails or hangs costs only the doorbell.

        Right after a Redis restart a pooled connection can fail or hang; the
        watcher then reads the rows by polling, and joins again once they move.
        """
        try:
            async with group_turn():
                await asyncio.wait_for(
                    self.channel_layer.group_add(self.group, self.channel_name), LAYER_TIMEOUT)
        except Exception:
            log.warning("could not join %s; polling the database instead", self.group,
                        exc_info=True)

    async def disconnect(self, code: int) -> None:
        self.stop_polling()
        if getattr(self, "group", None):
            await self.leave()

    async def leave(self) -> None:
        """Leave the run's group, taking turns with the other sockets of this process.

        A member left behind costs every later doorbell of the run a message to a
        channel nobody reads (until ``group_expiry``, a day by default), so a failed
        attempt is tried again, a little later each time.
        """
        for attempt in range(1, LEAVE_ATTEMPTS + 1):
            try:
                async with group_turn():
                    await asyncio.wait_for(
                        self.channel_layer.group_discard(self.group, self.channel_name),
                        LAYER_TIMEOUT)
                return
            except Exception:
                if attempt == LEAVE_ATTEMPTS:  # the group forgets it after group_expiry
                    log.warning("could not leave %s", self.group, exc_info=True)
                    return
                await asyncio.sleep(0.25 * attempt)

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
