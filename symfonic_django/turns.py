"""Drives one agent turn: its context, its events, the lease heartbeat, fenced effects.

``execute_run`` is what a worker runs for a queued run: ``runs.claim`` it,
stream the agent's events (each one stored before it is announced), and end
the turn with exactly one terminal event through ``runs.end``. A turn that
paused is settled in the same transaction as its end (``pauses.settle``), so
pauses answered while it was still running continue it at once.

The turn runs in ``async_to_sync``: database calls made through
``sync_to_async`` come back to the calling thread, with its connection and
transaction. Side effects that must not happen once the run's lease is lost
run inside ``fenced()`` (or ``afenced()`` from async code).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import os
import socket
from collections.abc import AsyncGenerator, Callable, Iterator
from contextlib import aclosing, contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any, TypeVar

from asgiref.sync import async_to_sync, sync_to_async
from django.db import connection, transaction

from . import events as ev
from . import hitl, pauses, runs
from .agent_protocol import Agent, AnsweredPause, ReviewedAction
from .binding import PauseBinding, RunIdentity, current_run_binding, run_context
from .conf import settings
from .exceptions import InteractionConfigurationError, InvalidProposal
from .models import Pause, PauseKind, PauseStatus, Run, TurnEvent, is_uuid
from .runs import LeaseLost
from .scopes import load_scope, load_scope_for_turn

log = logging.getLogger(__name__)
T = TypeVar("T")

__all__ = ["Continuation", "LeaseLost", "TurnContext", "afenced", "current_turn",
           "execute_run", "fenced", "request_pause", "stream_turn", "worker_name"]


#: The code of a turn that failed because the deployment is misconfigured (an approval
#: policy that returns no number, a graph without a checkpointer, ...).
CONFIGURATION_ERROR = "configuration_error"


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass
class Continuation:
    """What a resumed turn is handed: the pauses that stopped it, and their answers.

    ``answers`` maps each pause id to its answer as given; ``pauses`` maps the
    same ids, in the order they were asked, to the pause as asked and as it
    ended (``AnsweredPause``); ``actions`` lists every proposed action of those
    pauses with its decision and the arguments it may run with.
    """

    run: Run
    paused_run_id: str
    answers: dict[str, Any]
    scope: Any
    pauses: dict[str, AnsweredPause] = field(default_factory=dict)

    @property
    def answer(self) -> Any:
        """The single answer, for the common one-pause case."""
        if len(self.answers) != 1:
            raise ValueError("this continuation carries several answers; read .answers")
        return next(iter(self.answers.values()))

    @property
    def pause(self) -> AnsweredPause:
        """The single pause, for the common one-pause case."""
        if len(self.pauses) != 1:
            raise ValueError("this continuation carries several pauses; read .pauses")
        return next(iter(self.pauses.values()))

    @property
    def actions(self) -> list[ReviewedAction]:
        """Every action the approval pauses proposed, with what was decided on it."""
        return [action for pause in self.pauses.values() for action in pause.actions]


@dataclass
class TurnContext:
    """The running turn, as agents, ``request_pause`` and ``fenced`` see it."""

    run: Run
    scope: Any
    worker: str
    epoch: int
    seq: int = 0
    lost: bool = False
    requested: list[str] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return str(self.run.pk)

    @property
    def root_run_id(self) -> str:
        return self.run.root_run_id

    def check_held(self) -> None:
        if self.lost:
            raise LeaseLost(f"run {self.run_id} lost its lease")

    async def emit(self, event: ev.Event) -> TurnEvent:
        """Store then announce one non-terminal event; returns the stored row."""
        self.check_held()
        self.seq += 1
        row = await sync_to_async(ev.append)(self.run, self.seq, event)
        # pause.requested is never rung with its data: a token may go with it, and only
        # the surface that delivers it knows whether this watcher may have one.
        message = None if event.type == ev.PauseRequested.type else ev.wire(row, self.root_run_id)
        await ev.aring(self.run.pk, self.seq, message)
        return row


_turn: contextvars.ContextVar[TurnContext | None] = contextvars.ContextVar(
    "symfonic_turn", default=None)


def current_turn() -> TurnContext:
    """The turn this code runs in; ``InteractionConfigurationError`` outside one."""
    turn = _turn.get()
    if turn is None:
        raise InteractionConfigurationError(
            "this was called outside an agent turn; call it from the agent's start_typed() "
            "or continue_recovered_typed() while a worker drives the turn")
    return turn


# --- pausing -----------------------------------------------------------------------------

async def request_pause(
    *, kind: str, prompt: Any, answer_schema: Any = None, ttl: float | timedelta | None = None,
    idempotency_key: str | None = None, binding: Callable[[], PauseBinding] | None = None,
) -> Pause:
    """Pause the running turn for a person; returns the pause with ``.token`` set.

    Call it inside an agent turn. ``binding`` is a zero-argument callable
    returning a ``PauseBinding`` (default: ``current_run_binding()``); it is
    invoked here, while the turn runs. Re-running a step with the same
    ``idempotency_key`` returns the same pause (answered or not); a turn that
    gets back a pause of its own run ends paused on it, as when it asked first.
    An approval with an action that has no ``args_schema`` is logged as a warning,
    once per agent and process: nothing checks what a reviewer edits it to.
    """
    turn = current_turn()
    turn.check_held()
    bound = (binding or current_run_binding)()
    if not isinstance(bound, PauseBinding):
        raise InteractionConfigurationError(
            f"the binding callable must return a PauseBinding, got {type(bound).__name__}")
    pause, created = await sync_to_async(pauses.create_pause)(
        run=turn.run, binding=bound, kind=kind, prompt=prompt, answer_schema=answer_schema,
        ttl=ttl, idempotency_key=idempotency_key)
    pause.token = pauses.token_for(pause)  # type: ignore[attr-defined]
    if pause.run_id == turn.run.pk and str(pause.pk) not in turn.requested:
        # Its own pause, new or asked again (a retried turn re-running its step): the
        # turn ends paused on it, and settling it then sees whether it was answered.
        turn.requested.append(str(pause.pk))
    if created:
        await turn.emit(ev.PauseRequested(
            pause_id=str(pause.pk), kind=pause.kind, prompt=pause.prompt,
            expires_at=pause.expires_at.isoformat().replace("+00:00", "Z")))
    _warn_if_unchecked(turn.run.agent, pause)
    return pause


#: The agents already warned of an approval without ``args_schema``, in this process.
_warned_unchecked: set[str] = set()


def _warn_if_unchecked(agent: str, pause: Pause) -> None:
    """Log, once per agent and process, an approval whose actions have no ``args_schema``:
    nothing checks what a reviewer edits them to (nor what the agent proposed)."""
    if pause.kind != PauseKind.APPROVAL or agent in _warned_unchecked:
        return
    names = [request["name"] for request in pause.prompt["action_requests"]
             if "args_schema" not in hitl.review_config(pause.prompt, request["name"])]
    if names:
        _warned_unchecked.add(agent)
        log.warning(
            "agent %r asked to approve %s without an args_schema: nothing checks the "
            "arguments a reviewer edits them to, and the review page shows a JSON editor "
            "with a warning. Give each action's review config an args_schema (a LangGraph "
            "agent: args_schemas=, or a tool with typed arguments). Logged once per agent.",
            agent, ", ".join(dict.fromkeys(names)))


# --- fenced side effects -----------------------------------------------------------------

class Fence:
    """The open fenced transaction: ``emit`` stores an event with the effect."""

    def __init__(self, turn: TurnContext) -> None:
        self.turn = turn
        self.events: list[ev.Event] = []

    def emit(self, event: ev.Event) -> None:
        """Store ``event`` in the fenced transaction: it commits with the effect, or not at all."""
        if event.terminal:
            raise InteractionConfigurationError("a fenced effect cannot end the turn")
        self.events.append(event)


@contextmanager
def fenced() -> Iterator[Fence]:
    """Run a side effect only while this worker still holds the turn's lease.

    Sync code inside a turn (a tool called through ``sync_to_async``)::

        with fenced() as fence:
            Refund.objects.create(...)
            fence.emit(ToolCompleted(...))

    The block and the events it emitted run in one transaction. Right before
    it commits, the run row is locked and checked: still ``running`` under this
    worker's claim (its epoch), with an unexpired lease. Otherwise it raises
    ``LeaseLost`` and nothing of the block is committed: a worker that froze
    and woke after the reaper failed its run moves no money. The lock is taken
    last, so a slow effect does not keep the heartbeat from renewing the lease.
    """
    turn = current_turn()
    turn.check_held()
    if not runs.still_held(turn.run.pk, turn.epoch):  # fail fast, before any effect
        raise LeaseLost(f"run {turn.run_id} is no longer held by claim {turn.epoch}")
    fence = Fence(turn)
    with transaction.atomic():
        runs.bound_fenced_transaction()
        yield fence
        # The lease check comes before the events: a reaped run refuses with LeaseLost
        # here, rather than with a clash of its turn.failed's seq with ours.
        runs.hold_lease(turn.run.pk, turn.epoch)
        # Numbered as they are stored, from the turn's own counter: the turn may stream
        # other events while the effect runs (a LangGraph tool runs beside the stream).
        for event in fence.events:
            turn.seq += 1
            ev.append(turn.run, turn.seq, event)
            transaction.on_commit(partial(ev.ring, turn.run.pk, turn.seq))


async def afenced(effect: Callable[..., T], /, *args: Any,
                  event: Callable[[T], ev.Event] | None = None, **kwargs: Any) -> T:
    """``fenced()`` for async agent code: run sync ``effect(*args, **kwargs)`` fenced.

    ``event``, if given, builds the event stored with the effect from its
    result (``lambda result: ToolCompleted(..., result=result)``). Database
    transactions do not span awaits in Django, so the effect is a sync
    callable run on the turn's database thread, inside one transaction.
    """
    def run_fenced() -> T:
        with fenced() as fence:
            result = effect(*args, **kwargs)
            if event is not None:
                fence.emit(event(result))
        return result

    return await sync_to_async(run_fenced)()


# --- the heartbeat -------------------------------------------------------------------------

async def _heartbeat(turn: TurnContext, interval: float) -> None:
    # Not on the turn's thread-sensitive database thread: an agent blocked there (a tool
    # waiting on a lock or a slow call) would starve the renewal, and the reaper would
    # fail a turn that is still alive.
    renew = sync_to_async(_renew_lease, thread_sensitive=False)
    while True:
        await asyncio.sleep(interval)
        if not await renew(turn.run.pk, turn.epoch):
            turn.lost = True
            return


def _renew_lease(run_id: Any, epoch: int) -> bool:
    """``runs.extend_lease`` from a pool thread, closing that thread's own connection after."""
    try:
        return runs.extend_lease(run_id, epoch)
    finally:
        connection.close()


# --- the turn ----------------------------------------------------------------------------

async def agent_for_run(run: Run, scope: Any) -> Agent:
    made = settings.agent_factory(run.agent)(scope)
    agent: Agent = await made if inspect.isawaitable(made) else made
    return agent


def _answered_pauses(run: Run, answers: dict[str, Any]) -> dict[str, AnsweredPause]:
    """The paused run's pauses that ``answers`` names, oldest first, as asked and as they
    ended. A name that is no pause of the paused run has no entry."""
    if run.parent_id is None:
        return {}
    rows = (Pause.objects.filter(run_id=run.parent_id,
                                 pk__in=[key for key in answers if is_uuid(str(key))])
            .order_by("created_at").values_list("pk", "kind", "prompt", "status"))
    return {str(pk): AnsweredPause(str(pk), kind, prompt, answers[str(pk)],
                                   expired=status == PauseStatus.EXPIRED)
            for pk, kind, prompt, status in rows}


def _continuation(run: Run, scope: Any) -> Continuation:
    """The continuation of ``run``: its answers, and the pauses they answer, read once."""
    answers = run.input.get("answers", {}) if isinstance(run.input, dict) else {}
    return Continuation(run=run, paused_run_id=str(run.parent_id), answers=answers, scope=scope,
                        pauses=_answered_pauses(run, answers))


def _end(turn: TurnContext, event: ev.Event) -> str:
    """Write the turn's terminal event; a paused run is settled in the same transaction."""
    if not isinstance(event, ev.TurnPaused):
        status = runs.end(turn.run, turn.epoch, turn.seq + 1, event)
    else:
        with transaction.atomic():
            status = runs.end(turn.run, turn.epoch, turn.seq + 1, event)
            # end()'s UPDATE holds the run's row lock until this commits.
            pauses.settle(turn.run)
    turn.seq += 1
    return status


async def stream_turn(run: Run, *, worker: str, agent: Agent | None = None, scope: Any = None,
                      prepared_plan: Any = None, event_guard: Any = None,
                      ) -> AsyncGenerator[dict[str, Any], None]:
    """Run a claimed turn to its end, yielding each event as it is stored.

    ``run`` is as ``runs.claim`` returned it (its ``epoch`` and stored
    ``turn.started``). Every event is stored before it is yielded or
    announced. The turn ends in exactly one terminal event: ``turn.paused`` if
    it requested pauses, ``turn.failed`` if the agent raised (code
    ``invalid_proposal`` when it proposed args outside their own schema, else
    ``agent_error``), else ``turn.completed``. A consumer that stops early
    closes the agent's stream and fails the run. A turn that lost its lease writes nothing more: the
    reaper owns its ending.
    """
    started = run.started_event  # type: ignore[attr-defined]
    turn = TurnContext(run=run, scope=scope, worker=worker, epoch=run.epoch, seq=started.seq)
    token = _turn.set(turn)
    beat = asyncio.ensure_future(_heartbeat(turn, max(settings.LEASE_SECONDS / 3, 0.05)))
    terminal: ev.Event | None = None
    output: Any = None
    try:
        await ev.aring(run.pk, turn.seq, ev.wire(started, run.root_run_id))
        yield {"seq": turn.seq, "type": started.type, "data": started.data}
        with run_context(RunIdentity(str(run.pk), run.root_run_id)):
            if scope is None:
                scope = turn.scope = await sync_to_async(load_scope)(run.scope_key)
            if agent is None:
                agent = await agent_for_run(run, scope)
            if run.resumed_from_id:
                continuation = await sync_to_async(_continuation)(run, scope)
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
            # Pauses answered while the turn was still running are settled by _end().
            terminal = (ev.TurnPaused(pause_ids=turn.requested) if turn.requested
                        else ev.TurnCompleted(output=output))
    except LeaseLost:
        log.warning("LeaseLost: run %s is no longer this worker's (claim %s); the reaper "
                    "owns its ending", run.pk, turn.epoch)
        return
    except GeneratorExit:
        terminal = ev.TurnFailed(code="stream_closed", message="the consumer stopped reading")
        raise
    except InvalidProposal as exc:  # a refusal with its reason in words, not a crash to trace
        log.warning("run %s failed: %s", run.pk, exc.detail)
        terminal = ev.TurnFailed(code=exc.code, message=exc.detail)
    except InteractionConfigurationError as exc:  # the deployment's mistake, not the agent's
        log.error("run %s failed: %s", run.pk, exc)
        terminal = ev.TurnFailed(code=CONFIGURATION_ERROR, message=str(exc))
    except Exception as exc:  # the agent failed: the turn ends failed, never half-done
        log.exception("run %s failed", run.pk)
        terminal = ev.TurnFailed(code="agent_error", message=f"{type(exc).__name__}: {exc}")
    finally:
        beat.cancel()
        _turn.reset(token)
        if terminal is not None and not turn.lost:
            try:
                await sync_to_async(_end)(turn, terminal)
            except LeaseLost:
                log.warning("LeaseLost: run %s lost its lease before it could end", run.pk)
                terminal = None
            else:
                await ev.aring(run.pk, turn.seq)
        elif terminal is not None:
            log.warning("LeaseLost: run %s lost its lease; the reaper owns its ending", run.pk)
            terminal = None
    if terminal is not None:
        yield {"seq": turn.seq, "type": terminal.type, "data": terminal.data()}


def execute_run(run_id: Any, *, worker: str | None = None) -> str:
    """Claim and run one queued turn to its end. Returns the final status, or "skipped".

    "skipped" means another delivery has the run or it is done: redelivery of
    a task is harmless.
    """
    worker = worker or worker_name()
    run = runs.claim(run_id, worker)
    if run is None:
        return "skipped"
    try:
        scope = load_scope_for_turn(run.scope_key)
    except Exception:  # stream_turn() loads it again, and ends the turn failed if it fails
        scope = None

    async def drive() -> str | None:
        last = None
        async with aclosing(stream_turn(run, worker=worker, scope=scope)) as stream:
            async for event in stream:
                last = event["type"]
        return last

    last = async_to_sync(drive)()
    if last in runs.ENDING_EDGE:  # this worker wrote the end
        return runs.EDGES[runs.ENDING_EDGE[last]].target
    # It lost its lease: the reaper owns the ending.
    return str(Run.objects.values_list("status", flat=True).get(pk=run.pk))
