"""Drives agent turns: the run claim, the lease and its heartbeat, events, the end.

A queued run is claimed in one short transaction (``select_for_update(
skip_locked=True)`` where the database has row locks, a conditional UPDATE
elsewhere) and moved to ``running`` with a lease. The lock is not held for the
turn: a heartbeat extends the lease while it streams, and the reaper fails a
run whose lease lapsed (``lease_expired``) instead of silently re-running it.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import logging
import os
import socket
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from asgiref.sync import SyncToAsync, async_to_sync, sync_to_async
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from . import events as ev
from .binding import RunIdentity, run_context
from .conf import settings
from .exceptions import InteractionConfigurationError
from .models import Pause, Run, RunStatus
from .scopes import load_scope, load_scope_for_turn, scope_key

log = logging.getLogger(__name__)
T = TypeVar("T")


class LeaseLost(Exception):
    """This worker no longer owns the run (the reaper failed it, or it finished)."""


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


# --- starting and claiming ---------------------------------------------------

def start_run(agent: str, input: Any, *, scope: Any, session_id: str = "", thread_id: str = "",
              dispatch: bool = True) -> Run:
    """Queue a top-level turn of ``agent``; a worker runs it once the transaction commits."""
    settings.agent_factory(agent)  # refuse an unknown agent before writing anything
    run = Run(agent=agent, input=input, scope_key=scope_key(scope), session_id=session_id,
              thread_id=thread_id)
    run.root_id = run.id
    with transaction.atomic():
        run.save(force_insert=True)
        if dispatch:
            from .tasks import send_on_commit

            send_on_commit(run.pk, continuation=False)
    return run


astart_run = sync_to_async(start_run)


#: On PostgreSQL the claim is one statement, its own short transaction: the locking
#: read (``FOR UPDATE SKIP LOCKED``), the status check, the move to running with a
#: lease and the turn's ``turn.started`` event, returning the row, in one round trip
#: instead of six (BEGIN, SELECT, UPDATE, COMMIT, then the event's INSERT) and without
#: the ORM's per-query cost on the hot path of every turn. The event's data is
#: ``TurnStarted(agent, resumed_from_pause).data()``, built from the claimed row.
PG_CLAIM = """
    WITH claimed AS (
        UPDATE {run} SET status = '{running}', worker = %s, started_at = %s, lease_until = %s,
                         attempts = attempts + 1, updated_at = %s
         WHERE id = (SELECT id FROM {run} WHERE id = %s AND status = '{queued}'
                     FOR UPDATE SKIP LOCKED)
     RETURNING {columns}
    ), started AS (
        INSERT INTO {event} (run_id, seq, type, data, created_at)
        SELECT id, 1 + COALESCE((SELECT max(seq) FROM {event} WHERE run_id = claimed.id), 0),
               '{started}',
               jsonb_build_object('agent', agent, 'resumed_from_pause', resumed_from_id::text),
               %s
          FROM claimed
     RETURNING id, seq
    )
    SELECT claimed.*, started.id, started.seq FROM claimed, started
"""


def claim_run(run_id: Any, worker: str) -> Run | None:
    """Move a queued run to running with a lease and record its ``turn.started``.

    Returns ``None`` if someone else has the run or it is done. The run
    returned is as the claim left it, with ``started_event``: the stored
    ``turn.started`` row, written in the claim's own transaction (so a claimed
    run always has one, and only a claimant writes a run's events).
    """
    now = timezone.now()
    lease_until = now + timedelta(seconds=settings.LEASE_SECONDS)
    run_id = Run._meta.pk.to_python(run_id)
    if connection.vendor != "postgresql":
        return _claim_with_orm(run_id, worker, now, lease_until)
    sql = _pg_claim_sql(connection.ops.quote_name)
    params = [worker, now, lease_until, now, run_id, now]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    *values, started_id, started_seq = row
    for i, model_field in _converted_fields():
        values[i] = model_field.from_db_value(values[i], None, connection)
    run = Run.from_db(connection.alias, None, values)
    started = ev.TurnStarted(agent=run.agent, resumed_from_pause=(
        str(run.resumed_from_id) if run.resumed_from_id else None))
    run.started_event = ev.TurnEvent(  # type: ignore[attr-defined]
        pk=started_id, run_id=run.pk, seq=started_seq, type=started.type, data=started.data(),
        created_at=now)
    return run


@functools.cache
def _pg_claim_sql(quote: Callable[[str], str]) -> str:
    """``PG_CLAIM`` for this schema: every column of ``Run``, in model order, for ``from_db``.

    The statuses and the event type are the app's own constants, written into
    the statement rather than sent as parameters on every claim.
    """
    columns = ", ".join(quote(f.column) for f in Run._meta.concrete_fields)
    return PG_CLAIM.format(run=quote(Run._meta.db_table),
                           event=quote(ev.TurnEvent._meta.db_table), columns=columns,
                           running=RunStatus.RUNNING.value, queued=RunStatus.QUEUED.value,
                           started=ev.TurnStarted.type)


@functools.cache
def _converted_fields() -> list[tuple[int, Any]]:
    """The fields of ``Run`` whose database value is converted on reading (JSON ones)."""
    return [(i, f) for i, f in enumerate(Run._meta.concrete_fields) if hasattr(f, "from_db_value")]


def _claim_with_orm(run_id: Any, worker: str, now: datetime, lease_until: datetime) -> Run | None:
    """``claim_run`` elsewhere: a locking read where there are row locks, a conditional UPDATE."""
    with transaction.atomic():
        if connection.features.has_select_for_update_skip_locked:
            locked = (Run.objects.select_for_update(skip_locked=True)
                      .filter(pk=run_id, status=RunStatus.QUEUED).values_list("pk", flat=True))
            if not list(locked):
                return None
        if not Run.objects.filter(pk=run_id, status=RunStatus.QUEUED).update(
                status=RunStatus.RUNNING, worker=worker, started_at=now, lease_until=lease_until,
                attempts=F("attempts") + 1, updated_at=now):
            return None
        run = Run.objects.get(pk=run_id)
        resumed = str(run.resumed_from_id) if run.resumed_from_id else None
        run.started_event = ev.persist(  # type: ignore[attr-defined]
            run.pk, ev.next_seq(run.pk), ev.TurnStarted(agent=run.agent, resumed_from_pause=resumed))
        return run


def extend_lease(run_id: Any, worker: str) -> bool:
    until = timezone.now() + timedelta(seconds=settings.LEASE_SECONDS)
    return bool(Run.objects.filter(pk=run_id, status=RunStatus.RUNNING, worker=worker)
                .update(lease_until=until))


#: The run status each terminal event leaves.
TERMINAL_STATUS = {ev.TurnPaused.type: RunStatus.PAUSED,
                   ev.TurnCompleted.type: RunStatus.COMPLETED,
                   ev.TurnFailed.type: RunStatus.FAILED}


def finish(run_id: Any, worker: str, seq: int, event: ev.Event,
           now: datetime | None = None, *, ring: bool = True) -> str:
    """Write the terminal event and state together, if this worker still owns the run.

    Returns the run's new status. For ``turn.paused`` the paused run is settled
    in the same transaction, so pauses answered while the turn was still
    running continue it now. With ``ring=False`` the caller announces the event.
    """
    from .pauses import settle

    now = now or timezone.now()
    status = TERMINAL_STATUS[event.type]
    changes: dict[str, Any] = {"status": status, "finished_at": now, "lease_until": None,
                               "updated_at": timezone.now()}
    if isinstance(event, ev.TurnCompleted):
        changes["output"] = event.output
    elif isinstance(event, ev.TurnFailed):
        changes["error"] = {"code": event.code, "message": event.message}
    # On PostgreSQL the ownership check, the state and the event are one statement, atomic
    # on its own; a pause settles its run in the same transaction, so that one takes a block.
    one_statement = connection.vendor == "postgresql" and status != RunStatus.PAUSED
    with nullcontext() if one_statement else transaction.atomic():
        # The conditional UPDATE is the ownership check and takes the row lock until commit.
        if not _end_if_owned(run_id, worker, changes, seq, event):
            raise LeaseLost(f"run {run_id} is no longer owned by {worker}")
        if status == RunStatus.PAUSED:
            settle(Run.objects.get(pk=run_id), now=now)
        if ring:
            transaction.on_commit(lambda: ev.ring(run_id, seq))
    return status


#: The end of a turn on PostgreSQL: the UPDATE, only if this worker still has the run
#: running, and the terminal event, inserted only when the UPDATE matched.
PG_END = """
    WITH owned AS (UPDATE {run} SET {assignments}
                    WHERE id = %s AND status = '{running}' AND worker = %s RETURNING id)
    INSERT INTO {event} (run_id, seq, type, data, created_at)
    SELECT id, %s, %s, %s, %s FROM owned
"""


def _end_if_owned(run_id: Any, worker: str, changes: dict[str, Any], seq: int,
                  event: ev.Event) -> bool:
    """UPDATE the run and store its terminal event if ``worker`` still has it running.

    On PostgreSQL in one raw statement: once per turn on the hot path, where
    the ORM's UPDATE compilation and the extra round trips were a large share
    of a short turn; values are prepared by the model's fields.
    """
    if connection.vendor != "postgresql":
        owned = Run.objects.filter(pk=run_id, status=RunStatus.RUNNING, worker=worker)
        if not owned.update(**changes):
            return False
        ev.persist(run_id, seq, event)
        return True
    sql, fields = _pg_end_sql(connection.ops.quote_name, tuple(changes))
    values = [f.get_db_prep_save(value, connection)
              for f, value in zip(fields, changes.values(), strict=True)]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*values, Run._meta.pk.to_python(run_id), worker, seq, event.type,
                             connection.ops.adapt_json_value(event.data(), None),
                             changes["updated_at"]])
        return cursor.rowcount == 1


@functools.cache
def _pg_end_sql(quote: Callable[[str], str], names: tuple[str, ...]) -> tuple[str, list[Any]]:
    """``PG_END`` setting ``names``, and their fields: one per kind of ending."""
    fields = [Run._meta.get_field(name) for name in names]
    sql = PG_END.format(run=quote(Run._meta.db_table), event=quote(ev.TurnEvent._meta.db_table),
                        assignments=", ".join(f"{quote(f.column)} = %s" for f in fields),
                        running=RunStatus.RUNNING.value)
    return sql, fields


# --- the turn ----------------------------------------------------------------

@dataclass
class Continuation:
    """What a resumed turn is handed: the answers of the pauses that stopped it."""

    run: Run
    paused_run_id: str
    answers: dict[str, Any]
    scope: Any

    @property
    def answer(self) -> Any:
        """The single answer, for the common one-pause case."""
        if len(self.answers) != 1:
            raise ValueError("this continuation carries several answers; read .answers")
        return next(iter(self.answers.values()))


@dataclass
class TurnContext:
    """The running turn, as agents and ``request_pause`` see it."""

    run: Run
    scope: Any
    worker: str
    seq: int = 0
    lost: bool = False
    requested: list[str] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return str(self.run.pk)

    @property
    def root_run_id(self) -> str:
        return self.run.root_run_id

    async def emit(self, event: ev.Event) -> Any:
        """Persist then announce one non-terminal event; returns the stored row."""
        if self.lost:
            raise LeaseLost(f"run {self.run_id} lost its lease")
        self.seq += 1
        row = await sync_to_async(ev.persist)(self.run.pk, self.seq, event)
        # pause.requested goes out with a freshly minted token, so watchers read it from the rows.
        message = None if event.type == ev.PauseRequested.type else ev.wire(row, self.root_run_id)
        await ev.aring(self.run.pk, self.seq, message)
        return row

    async def pause_requested(self, pause: Pause) -> None:
        self.requested.append(str(pause.pk))
        await self.emit(ev.PauseRequested(
            pause_id=str(pause.pk), kind=pause.kind, prompt=pause.prompt,
            expires_at=pause.expires_at.isoformat().replace("+00:00", "Z")))


_turn: contextvars.ContextVar[TurnContext | None] = contextvars.ContextVar(
    "symfonic_turn", default=None)


def current_turn() -> TurnContext:
    turn = _turn.get()
    if turn is None:
        raise InteractionConfigurationError(
            "request_pause() was called outside an agent turn; call it from the "
            "agent's start_typed() or continue_recovered_typed() while the runner drives it"
        )
    return turn


def _renew_lease(run_id: Any, worker: str) -> bool:
    """``extend_lease`` from a pool thread, closing that thread's own connection after."""
    try:
        return extend_lease(run_id, worker)
    finally:
        connection.close()


async def _heartbeat(turn: TurnContext, interval: float) -> None:
    while True:
        # Not on the turn's thread-sensitive sync thread: an agent blocked there (a tool
        # waiting on a lock or a slow call) would starve the renewal, and the reaper
        # would fail a turn that is still alive.
        renew = sync_to_async(_renew_lease, thread_sensitive=False)
        if not await renew(turn.run.pk, turn.worker):
            turn.lost = True
            return
        await asyncio.sleep(interval)


class Heartbeat:
    """Renews the turn's lease every third of ``LEASE_SECONDS`` until stopped.

    A timer, not a task, until the first renewal is due: most turns end
    before it, and they then cost the loop nothing.
    """

    def __init__(self, turn: TurnContext) -> None:
        interval = max(settings.LEASE_SECONDS / 3, 0.05)
        loop = asyncio.get_running_loop()
        self.task: asyncio.Task[None] | None = None
        self.timer = loop.call_later(interval, self._start, loop, turn, interval)

    def _start(self, loop: asyncio.AbstractEventLoop, turn: TurnContext, interval: float) -> None:
        self.task = loop.create_task(_heartbeat(turn, interval))

    def stop(self) -> None:
        self.timer.cancel()
        if self.task is not None:
            self.task.cancel()


async def agent_for_run(run: Run, scope: Any) -> Any:
    agent = settings.agent_factory(run.agent)(scope)
    return await agent if inspect.isawaitable(agent) else agent


async def load_continuation(run: Run, scope: Any) -> Continuation:
    answers = run.input.get("answers", {}) if isinstance(run.input, dict) else {}
    return Continuation(run=run, paused_run_id=str(run.parent_id), answers=answers, scope=scope)


async def stream_turn(run: Run, *, worker: str, agent: Any = None, scope: Any = None,
                      prepared_plan: Any = None, event_guard: Any = None,
                      _ending: _Ending | None = None) -> AsyncIterator[dict[str, Any]]:
    """Run a claimed turn to its end, yielding each event as it is stored.

    Every event is persisted before it is yielded or announced. The turn
    ends in exactly one terminal event: ``turn.paused`` if it requested pauses,
    ``turn.failed`` if the agent raised, else ``turn.completed``. A consumer
    that stops early closes the agent's stream and fails the run. With
    ``_ending`` the terminal event is not written here but handed to the
    caller in it: ``execute_run`` writes it on its own thread, which saves a
    round trip from the loop into that thread and back.
    """
    started_row = getattr(run, "started_event", None)  # claim_run() stored turn.started
    resumed = str(run.resumed_from_id) if run.resumed_from_id else None
    started = ev.TurnStarted(agent=run.agent, resumed_from_pause=resumed)
    last_seq = (started_row.seq if started_row is not None
                else await sync_to_async(ev.next_seq)(run.pk) - 1)
    turn = TurnContext(run=run, scope=scope, worker=worker, seq=last_seq)
    token = _turn.set(turn)
    beat = Heartbeat(turn)
    terminal: ev.Event | None = None
    output: Any = None
    try:
        # Watchers hear of the start first, before anything the agent does is stored: the
        # doorbell goes out as soon as the turn first waits (the agent's first event, its
        # first await, or its end), not in the way of the turn.
        if started_row is not None:
            _keep(asyncio.ensure_future(
                ev.aring(run.pk, turn.seq, ev.wire(started_row, run.root_run_id))))
        else:  # a run claimed some other way: record the start now
            await turn.emit(started)
        yield {"seq": turn.seq, "type": started.type, "data": started.data()}
        with run_context(RunIdentity(str(run.pk), run.root_run_id)):
            if scope is None:
                scope = turn.scope = await sync_to_async(load_scope)(run.scope_key)
            if agent is None:
                agent = await agent_for_run(run, scope)
            if resumed:
                continuation = await load_continuation(run, scope)
                source = (agent.continue_recovered_typed(continuation) if prepared_plan is None
                          and event_guard is None else agent.continue_recovered_typed(
                              continuation, prepared_plan=prepared_plan, event_guard=event_guard))
            else:
                source = agent.start_typed(turn, run.input)
            async with aclosing(source):
                async for event in source:
                    if isinstance(event, ev.TurnCompleted):
                        output = event.output
                        continue
                    if event.terminal:
                        terminal = event
                        break
                    await turn.emit(event)
                    yield {"seq": turn.seq, "type": event.type, "data": event.data()}
        if terminal is None:
            # Pauses answered while the turn was still running are settled by finish().
            terminal = (ev.TurnPaused(pause_ids=turn.requested) if turn.requested
                        else ev.TurnCompleted(output=output))
    except LeaseLost:
        log.warning("run %s lost its lease; the reaper owns its ending", run.pk)
        return
    except GeneratorExit:
        terminal = ev.TurnFailed(code="stream_closed", message="the consumer stopped reading")
        raise
    except Exception as exc:  # the agent failed: the turn ends failed, never half-done
        log.exception("run %s failed", run.pk)
        terminal = ev.TurnFailed(code="agent_error", message=f"{type(exc).__name__}: {exc}")
    finally:
        beat.stop()
        _turn.reset(token)
        if terminal is not None and not turn.lost and _ending is not None:
            _ending.seq, _ending.event = turn.seq + 1, terminal
            terminal = None  # the caller writes and announces it
        elif terminal is not None and not turn.lost:
            turn.seq += 1
            try:
                await sync_to_async(finish)(run.pk, worker, turn.seq, terminal, ring=False)
            except LeaseLost:
                log.warning("run %s lost its lease before it could finish", run.pk)
                terminal = None
            else:  # rung from the loop, as emit() does: no hop back into it from finish()
                await ev.aring(run.pk, turn.seq)
    if terminal is not None:
        yield {"seq": turn.seq, "type": terminal.type, "data": terminal.data()}


@dataclass
class _Ending:
    """The terminal event a turn ended with, for ``execute_run`` to write."""

    seq: int = 0
    event: ev.Event | None = None


def execute_run(run_id: Any, *, worker: str | None = None) -> str:
    """Claim and run one queued turn to its end. Returns the final status, or "skipped".

    The claim, the scope and the end of the turn are written on this thread
    (its connection, and its transaction if it is in one); the agent streams
    on the process's turn loop, entered once. Doorbells go out from the loop
    as tasks: ``turn.started``'s when the turn first waits, the terminal one
    once it is committed, without waiting for either.
    """
    worker = worker or worker_name()
    run = claim_run(run_id, worker)
    if run is None:
        return "skipped"
    try:
        scope = load_scope_for_turn(run.scope_key)
    except Exception:  # stream_turn() loads it again, and ends the turn failed if it fails
        scope = None
    ending = _Ending()

    async def drive() -> None:
        async with aclosing(stream_turn(run, worker=worker, scope=scope, _ending=ending)) as stream:
            async for _ in stream:
                pass

    run_in_turn_loop(drive)
    if ending.event is not None:
        try:
            status = finish(run.pk, worker, ending.seq, ending.event, ring=False)
        except LeaseLost:
            log.warning("run %s lost its lease before it could finish", run.pk)
        else:
            ring_soon(run.pk, ending.seq)
            return str(status)
    return Run.objects.values_list("status", flat=True).get(pk=run_id)


# --- the turn loop -------------------------------------------------------------

_turn_loop: tuple[int, asyncio.AbstractEventLoop] | None = None
_turn_loop_lock = threading.Lock()


def turn_loop() -> asyncio.AbstractEventLoop:
    """This process's event loop for driving turns, running on a daemon thread of its own.

    Made once per process (a forked Celery child makes its own), not once per
    turn as a bare ``async_to_sync`` would: a new loop and thread per task was
    most of the fixed cost of a short turn, and the channel layer keeps its
    connection to Redis per loop, so each turn also opened a new one.
    """
    global _turn_loop
    with _turn_loop_lock:
        if _turn_loop is None or _turn_loop[0] != os.getpid() or not _turn_loop[1].is_running():
            loop = asyncio.new_event_loop()
            running = threading.Event()

            def serve() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(running.set)
                loop.run_forever()

            threading.Thread(target=serve, name="symfonic-turns", daemon=True).start()
            running.wait()
            _turn_loop = (os.getpid(), loop)
        return _turn_loop[1]


#: Doorbells under way on the turn loop (the loop keeps only weak references to tasks).
_doorbells: set[asyncio.Task[None]] = set()


def _keep(task: asyncio.Task[None]) -> None:
    """Hold a doorbell's task until it is done."""
    _doorbells.add(task)
    task.add_done_callback(_doorbells.discard)


def ring_soon(run_id: Any, seq: int) -> None:
    """Ring ``seq``'s doorbell on :func:`turn_loop`, from any thread, without waiting for it."""
    loop = turn_loop()
    loop.call_soon_threadsafe(lambda: _keep(loop.create_task(ev.aring(run_id, seq))))


def run_in_turn_loop(function: Callable[[], Awaitable[T]]) -> T:
    """``async_to_sync(function)()`` on :func:`turn_loop`, from a thread with no running loop.

    asgiref runs an ``async_to_sync`` call on the loop named in
    ``SyncToAsync.threadlocal`` (the one it sets for code called through
    ``sync_to_async``), so naming the turn loop there makes it the outer loop:
    the coroutine runs on it, and every thread-sensitive ``sync_to_async`` in
    it (each database call of the turn) comes back to this thread, as with a
    fresh loop: same connection, same transaction.
    """
    local = getattr(SyncToAsync, "threadlocal", None)
    if local is None:  # an asgiref that no longer reads it: a loop of its own, as before
        return async_to_sync(function)()
    saved = (getattr(local, "main_event_loop", None), getattr(local, "main_event_loop_pid", None))
    local.main_event_loop, local.main_event_loop_pid = turn_loop(), os.getpid()
    try:
        return async_to_sync(function)()
    finally:
        local.main_event_loop, local.main_event_loop_pid = saved


# --- the reaper ----------------------------------------------------------------

def reap_stale_runs(*, now: datetime | None = None) -> int:
    """Fail running runs whose lease lapsed (their worker died), with ``lease_expired``."""
    now = now or timezone.now()
    reaped = 0
    for run_id in list(Run.objects.lease_lapsed(now).values_list("pk", flat=True)[:500]):
        with transaction.atomic():
            qs = Run.objects.filter(pk=run_id, status=RunStatus.RUNNING, lease_until__lt=now)
            if connection.features.has_select_for_update_skip_locked:
                qs = qs.select_for_update(skip_locked=True)
            run = qs.first()
            if run is None:
                continue
            message = f"worker {run.worker or '?'} stopped renewing its lease"
            Run.objects.filter(pk=run.pk).update(
                status=RunStatus.FAILED, finished_at=now, lease_until=None, updated_at=now,
                error={"code": "lease_expired", "message": message})
            ev.publish(run.pk, ev.TurnFailed(code="lease_expired", message=message))
        reaped += 1
    return reaped


#: A queued run older than this is sent to the workers again (its message was lost).
STALLED_AFTER = timedelta(seconds=10)


def requeue_stalled_runs(*, now: datetime | None = None, older_than: timedelta = STALLED_AFTER
                         ) -> int:
    """Send again every run still queued after ``older_than`` (a broker lost or refused it).

    Sending twice is harmless: only one delivery can claim a queued run.
    """
    from .tasks import send_run

    cutoff = (now or timezone.now()) - older_than
    stalled = Run.objects.filter(status=RunStatus.QUEUED, created_at__lt=cutoff).values_list(
        "pk", "parent_id")[:500]
    return sum(send_run(pk, continuation=parent is not None) for pk, parent in stalled)
