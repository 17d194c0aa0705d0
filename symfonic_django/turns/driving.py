"""Driving one turn: claim it, stream the agent's events, keep the lease, end it once.

The turn runs in ``async_to_sync``: database calls made through
``sync_to_async`` come back to the calling thread, with its connection and
transaction.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from django.db import connection, transaction

from .. import events as ev
from .. import pauses, runs
from ..agent_protocol import Agent
from ..binding import RunIdentity, run_context
from ..conf import settings
from ..exceptions import (
    InteractionConfigurationError,
    InvalidProposal,
    LineageRefused,
    StateConsumed,
    ToolCallMismatch,
)
from ..models import Run
from ..runs import LeaseLost
from ..scopes import load_scope, load_scope_for_turn
from .context import TurnContext, active_turn, worker_name
from .resumed import continuation_of

log = logging.getLogger(__name__)

#: The code of a turn that failed because the deployment is misconfigured (an approval
#: policy that returns no number, a graph without a checkpointer, ...).
CONFIGURATION_ERROR = "configuration_error"


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


async def _agent_events(turn: TurnContext, agent: Agent | None, prepared_plan: Any,
                        event_guard: Any) -> AsyncGenerator[ev.Event, None]:
    """The agent's events for this turn: a new turn's start, or a resumed one's continuation.

    Loads what the caller did not hand over: the run's scope, then its agent.
    """
    run = turn.run
    if turn.scope is None:
        turn.scope = await sync_to_async(load_scope)(run.scope_key)
    if agent is None:
        agent = await agent_for_run(run, turn.scope)
    if not run.resumed_from_id:
        return agent.start_typed(turn, run.input)
    continuation = await sync_to_async(continuation_of)(run, turn.scope)
    if prepared_plan is None and event_guard is None:
        return agent.continue_recovered_typed(continuation)
    return agent.continue_recovered_typed(continuation, prepared_plan=prepared_plan,
                                          event_guard=event_guard)


#: What an agent may raise as a refusal (the turn fails with its code, logged as a warning):
#: a proposal its pause refused, a stored state another continuation took, a tool call id
#: reused for another call, a run that is not the continuation the pauses' answers made.
AGENT_REFUSALS = (InvalidProposal, StateConsumed, ToolCallMismatch, LineageRefused)


def _failed(run: Run, exc: Exception) -> ev.TurnFailed:
    """The terminal event of a turn whose agent raised ``exc``, logged as what it is.

    Called while ``exc`` is being handled, so that an agent's crash is logged with
    its traceback.
    """
    if isinstance(exc, AGENT_REFUSALS):  # a refusal with its reason in words, not a crash
        log.warning("run %s failed: %s", run.pk, exc.detail)
        return ev.TurnFailed(code=exc.code, message=exc.detail)
    if isinstance(exc, InteractionConfigurationError):  # the deployment's mistake, not the agent's
        log.error("run %s failed: %s", run.pk, exc)
        return ev.TurnFailed(code=CONFIGURATION_ERROR, message=str(exc))
    # The agent failed: the turn ends failed, never half-done.
    log.exception("run %s failed", run.pk)
    return ev.TurnFailed(code="agent_error", message=f"{type(exc).__name__}: {exc}")


async def _finish(turn: TurnContext, terminal: ev.Event | None) -> ev.Event | None:
    """End the turn with ``terminal``; ``None`` when it has no end of its own to write: it
    lost its lease (before or while ending), and the reaper owns its ending."""
    if terminal is None:
        return None
    if turn.lost:
        log.warning("LeaseLost: run %s lost its lease; the reaper owns its ending", turn.run.pk)
        return None
    try:
        await sync_to_async(_end)(turn, terminal)
    except LeaseLost:
        log.warning("LeaseLost: run %s lost its lease before it could end", turn.run.pk)
        return None
    await ev.aring(turn.run.pk, turn.seq)
    return terminal


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
    token = active_turn.set(turn)
    beat = asyncio.ensure_future(_heartbeat(turn, max(settings.LEASE_SECONDS / 3, 0.05)))
    terminal: ev.Event | None = None
    output: Any = None
    try:
        await ev.aring(run.pk, turn.seq, ev.wire(started, run.root_run_id))
        yield {"seq": turn.seq, "type": started.type, "data": started.data}
        with run_context(RunIdentity(str(run.pk), run.root_run_id)):
            source = await _agent_events(turn, agent, prepared_plan, event_guard)
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
    except Exception as exc:
        terminal = _failed(run, exc)
    finally:
        beat.cancel()
        active_turn.reset(token)
        terminal = await _finish(turn, terminal)
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
