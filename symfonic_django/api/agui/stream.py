"""Following one turn in the database, as an AG-UI event stream.

The database is the stream, as for the websocket: the turn's ``TurnEvent`` rows
are read after the last one sent, every ``POLL_INTERVAL`` while the turn is
quiet (backing off to ``MAX_POLL_INTERVAL``), mapped by ``mapping.Translator``,
and sent with the SSE ``id:`` ``<app run id>:<seq>`` of their row. Each read goes
through ``read``, which gives the connection back after it (to the pool, or
closed): a stream holds no database connection while it waits, so open streams
cannot starve the process's other requests. The turn's
terminal row ends the stream (a failed run's end that a retry followed does not:
the retried turn's rows come next, translated afresh): ``turn.paused`` with ``RUN_FINISHED`` and the
interrupts of every pause of the turn, ``turn.completed`` with ``RUN_FINISHED``
success and the turn's output as ``result``, ``turn.failed`` with ``RUN_ERROR``
and its code. A quiet turn is kept open with SSE comments.

A client that reconnects with ``after`` (``inputs.read_after``) is sent
``RUN_STARTED``, then what the rows after ``after`` give, then the end: the
rows up to ``after`` are translated again but not sent, so a message or a call
open at ``after`` goes on where it was, without a gap or a duplicate.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from ag_ui.core import (
    BaseEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
)
from asgiref.sync import sync_to_async
from django.db import connection

from ...events import TERMINAL_TYPES, TurnCompleted, TurnFailed, TurnPaused, rows_after
from ...models import Run, TurnEvent
from .interrupts import own_calls_resumed_by, paused_turn
from .mapping import Translator, call_events
from .wire import KEEPALIVE, encode, meta, run_error

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Seconds between two reads of a quiet turn, at first and at most.
POLL_INTERVAL = 0.25
MAX_POLL_INTERVAL = 2.0
#: Seconds of silence after which an SSE comment keeps the response open.
KEEPALIVE_SECONDS = 15.0
#: Rows read per query.
BATCH = 500


def read(query: Callable[..., T]) -> Callable[..., Awaitable[T]]:
    """``query`` as an awaitable read that gives its database connection back when done.

    A stream waits between reads for as long as its turn runs (minutes, for a model);
    holding a connection meanwhile, a few open streams would take the whole pool and
    starve every other request of the process. So each read closes the connection
    after it (back to the pool, or closed without one), unless it runs inside a
    transaction it must not end (a test's). The websocket's reads do the same through
    Channels' ``database_sync_to_async``.
    """
    def and_give_back(*args: Any, **kwargs: Any) -> T:
        try:
            return query(*args, **kwargs)
        finally:
            if not connection.in_atomic_block:
                connection.close()

    return sync_to_async(and_give_back)


def superseded(row: TurnEvent) -> bool:
    """Whether the terminal ``row`` was followed by more rows of its run (the run was
    retried after it failed, and ran again)."""
    return TurnEvent.objects.filter(run_id=row.run_id, seq__gt=row.seq).exists()


async def wait_for_more(run_id: Any, seconds: float) -> None:
    """Wait before reading a quiet turn again (tests run the turn here instead)."""
    await asyncio.sleep(seconds)


def ending(run: Run, row: TurnEvent, *, thread_id: str, run_id: str) -> list[BaseEvent]:
    """The events that end the stream at the turn's terminal ``row``."""
    data: dict[str, Any] = row.data or {}
    metadata = meta(appRunId=str(run.pk), seq=row.seq)
    if row.type == TurnFailed.type:
        return [run_error(str(data.get("code") or "turn_failed"), str(data.get("message", "")),
                          run_id=run_id, app_run_id=str(run.pk))]
    if row.type == TurnPaused.type:
        return interrupted(run, thread_id=thread_id, run_id=run_id, metadata=metadata)
    assert row.type == TurnCompleted.type
    return [RunFinishedEvent(thread_id=thread_id, run_id=run_id, result=data.get("output"),
                             outcome=RunFinishedSuccessOutcome(), metadata=metadata)]


def interrupted(run: Run, *, thread_id: str, run_id: str, metadata: dict[str, Any],
                pending_only: bool = False) -> list[BaseEvent]:
    """``RUN_FINISHED`` with the interrupts of the paused ``run``, after the app-named
    calls they hold back (``interrupts``' module docstring)."""
    _, calls, interrupts = paused_turn(run, pending_only=pending_only)
    shown = {i.id for i in interrupts}
    events: list[BaseEvent] = []
    for key, call in calls.items():
        if call.own and key in shown:
            events += call_events(call.id, call.name, call.args)
    if not interrupts:  # nothing left to answer: the pauses were answered meanwhile
        return events + [RunErrorEvent(
            message="This run's pauses were answered, cancelled or expired meanwhile.",
            code="already_answered", metadata=metadata)]
    return events + [RunFinishedEvent(
        thread_id=thread_id, run_id=run_id, metadata=metadata,
        outcome=RunFinishedInterruptOutcome(interrupts=interrupts))]


def run_started(thread_id: str, run_id: str, app_run_id: str | None) -> str:
    return encode([RunStartedEvent(thread_id=thread_id, run_id=run_id,
                                   metadata=meta(appRunId=app_run_id))])


async def follow(app_run_id: Any, *, thread_id: str, run_id: str, after: int = 0
                 ) -> AsyncIterator[str]:
    """The AG-UI stream of the app's run ``app_run_id`` (module docstring).

    A failure while streaming (the database gone) is not a silent end of the response:
    it ends with ``RUN_ERROR`` ``server_error``, and the client may reconnect with the
    last id it saw. (A client that leaves cancels the stream; nothing is sent then.)
    """
    yield run_started(thread_id, run_id, str(app_run_id))
    try:
        async for chunk in translated(app_run_id, thread_id=thread_id, run_id=run_id,
                                      after=after):
            yield chunk
    except Exception:
        log.exception("the AG-UI stream of run %s failed", app_run_id)
        yield encode([run_error("server_error", "The stream failed; reconnect with the last "
                                "id you saw (forwardedProps.after).", status=500,
                                run_id=run_id, app_run_id=str(app_run_id))])


async def translated(app_run_id: Any, *, thread_id: str, run_id: str, after: int
                     ) -> AsyncIterator[str]:
    """The run's stored rows after ``after``, translated, to the end of the turn."""
    run = await read(Run.objects.get)(pk=app_run_id)
    translator = Translator(str(run.pk), await read(own_calls_resumed_by)(run))
    last, interval, quiet_since = 0, POLL_INTERVAL, time.monotonic()
    while True:
        rows = await read(rows_after)(run.pk, last, BATCH)
        for row in rows:
            if row.type in TERMINAL_TYPES and await read(superseded)(row):
                # A run retried after it failed: its old end is not the end of the stream,
                # the retried turn that follows is (from its turn.started on, afresh).
                translator = Translator(str(run.pk), await read(
                    own_calls_resumed_by)(run))
                last = row.seq
                continue
            events = translator.events(row)
            terminal = row.type in TERMINAL_TYPES
            if terminal:
                events += translator.close() + await read(ending)(
                    run, row, thread_id=thread_id, run_id=run_id)
            last = row.seq
            if events and (row.seq > after or terminal):
                yield encode(events, event_id=f"{run.pk}:{row.seq}")
            if terminal:
                return
        if rows:
            interval, quiet_since = POLL_INTERVAL, time.monotonic()
            continue
        if time.monotonic() - quiet_since >= KEEPALIVE_SECONDS:
            quiet_since = time.monotonic()
            yield KEEPALIVE
        await wait_for_more(run.pk, interval)
        interval = min(interval * 2, MAX_POLL_INTERVAL)


async def still_interrupted(run: Run, *, thread_id: str, run_id: str) -> AsyncIterator[str]:
    """The stream of a resume that left the run paused (an approval counted toward a
    quorum that needs more): ``RUN_STARTED``, then the interrupts still pending."""
    yield run_started(thread_id, run_id, str(run.pk))
    yield encode(await read(interrupted)(
        run, thread_id=thread_id, run_id=run_id, metadata=meta(appRunId=str(run.pk)),
        pending_only=True))


async def refused(event: BaseEvent) -> AsyncIterator[str]:
    yield encode([event])
