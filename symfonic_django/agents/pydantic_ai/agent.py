"""The agent: a Pydantic AI ``Agent``, unchanged, driven turn by turn.

**A turn** streams the agent (``run_stream_events``, ``stream``). A run that
ends on ``DeferredToolRequests`` pauses: its state (the message history and the
calls it waits for) is stored with the run (``save_state``, fenced), then one
approval pause asks every call of the step (``prompts``). A run that ends
otherwise completes the turn with its output (``output=``, default: the output
as JSON).

**A start turn that runs again** (its worker died, the run was retried) finds
the state it stored (``saved_state``) and asks the same pause from it: the
model is not asked again.

**The continuation** takes the paused run's state once (``consume_state``), its
answers checked against the state inside the same transaction (``approvals``):
a refusal leaves the state untaken and the turn fails ``resume_refused``. The
same continuation claimed anew (a retry, a redelivery) takes it again, and its
fenced tools replay their records instead of running again (``tools``). A
continuation that pauses again stores the new state under its own run, and a
second continuation of the same pauses, or a replayed answer, is refused
(``StateConsumed``): the same history is never resumed twice.

The agent must be able to end on ``DeferredToolRequests`` (its ``output_type``
includes it, as Pydantic AI documents for approvals): that is checked when it
is registered.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable, Sequence
from functools import partial
from typing import Any

from asgiref.sync import sync_to_async
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage
from pydantic_ai.tools import DeferredToolRequests

from ... import hitl
from ...agent_protocol import NewTurn, ResumedTurn
from ...events import Event, TurnCompleted, TurnFailed
from ...exceptions import InteractionConfigurationError, ResumeRefused, ToolCallMismatch
from ...models import PauseKind
from ...turns import current_turn, request_pause
from ..recorded import refuse_recorded_ids
from ..stored_state import consume_state, save_state, saved_state
from .approvals import (
    FRAMEWORK,
    ApprovedCallsGuard,
    Resumption,
    dump_state,
    load_state,
    resumption,
)
from .prompts import Describe, approval_prompt, check_requests, pause_key
from .stream import Transcript, as_json
from .tools import agent_tools

__all__ = ["PydanticAIAgent", "PydanticAIAgentFactory", "pydantic_ai_agent"]


class PydanticAIAgent:
    """An ``Agent`` of the app's protocol that drives one Pydantic AI agent (module docstring).

    ``input`` maps the run's input to the user prompt (default: a string as it is,
    anything else as JSON); ``output`` maps the run's output to the turn's
    (default: as JSON); ``deps`` are the run's dependencies; ``describe`` words
    each call for the reviewer (``prompts.Describe``); ``ttl`` is the pauses'
    lifetime in seconds (default: ``TOKEN_MAX_AGE``).
    """

    def __init__(self, agent: PydanticAgent[Any, Any], *,
                 input: Callable[[Any], Any] | None = None,
                 output: Callable[[Any], Any] | None = None, deps: Any = None,
                 describe: Describe | None = None, ttl: float | None = None) -> None:
        _check_output_type(agent)
        self.agent = agent
        self.input = input or _as_prompt
        self.output = output or as_json
        self.deps = deps
        self.describe = describe
        self.ttl = ttl

    # -- the protocol --

    async def start_typed(self, context: NewTurn, input: Any) -> AsyncGenerator[Event, None]:
        stored = await sync_to_async(saved_state)(FRAMEWORK)
        if stored is not None:  # this turn paused before, and runs again: no new model call
            state = load_state(stored)
            await self._ask(state.prompt, state.key)
            return
        async for event in self._drive(self.input(input), None, None):
            yield event

    async def continue_recovered_typed(
        self, continuation: ResumedTurn, *, prepared_plan: Any = None, event_guard: Any = None,
    ) -> AsyncGenerator[Event, None]:
        stored = await sync_to_async(saved_state)(FRAMEWORK)
        if stored is not None:  # this continuation paused again, and runs again
            state = load_state(stored)
            await self._ask(state.prompt, state.key)
            return
        tools = await agent_tools(self.agent, self.deps)
        try:
            resumed: Resumption = await sync_to_async(consume_state)(
                FRAMEWORK, continuation.paused_run_id,
                check=partial(resumption, pauses=continuation.pauses, tools=tools))
        except ResumeRefused as refusal:
            yield TurnFailed(code=refusal.code, message=f"{refusal.reason}: {refusal.detail}")
            return
        async for event in self._drive(None, resumed, ApprovedCallsGuard(resumed.approved)):
            yield event

    # -- driving the agent --

    async def _drive(self, prompt: Any, resumed: Resumption | None,
                     guard: AbstractCapability[Any] | None) -> AsyncGenerator[Event, None]:
        """Stream the agent, then pause on its deferred calls or complete with its output."""
        transcript = Transcript(resumed.edits if resumed else None)
        try:
            async with self.agent.run_stream_events(
                    prompt, message_history=resumed.messages if resumed else None,
                    deferred_tool_results=resumed.results if resumed else None,
                    deps=self.deps, capabilities=[guard] if guard else None) as events:
                async for event in events:
                    for mapped in transcript.events(event):
                        yield mapped
        except ResumeRefused as refusal:  # ApprovedCallsGuard: an approval would be lost
            yield TurnFailed(code=refusal.code, message=f"{refusal.reason}: {refusal.detail}")
            return
        result = transcript.result
        if result is None:
            raise InteractionConfigurationError("the Pydantic AI run ended without a result")
        if isinstance(result.output, DeferredToolRequests):
            await self._pause(result.output, result.all_messages())
            return
        yield TurnCompleted(output=as_json(self.output(result.output)))

    async def _pause(self, requests: DeferredToolRequests,
                     messages: Sequence[ModelMessage]) -> None:
        """Store the state, then ask one pause for every approval of the step."""
        check_requests(requests)
        await sync_to_async(refuse_recorded_ids)(c.tool_call_id for c in requests.approvals)
        tools = await agent_tools(self.agent, self.deps)
        prompt = hitl.validate_proposal(approval_prompt(requests, tools, self.describe))
        state = dump_state(list(messages), requests, prompt)
        await sync_to_async(save_state)(FRAMEWORK, state)
        await self._ask(prompt, pause_key([c.tool_call_id for c in requests.approvals]))

    async def _ask(self, prompt: dict[str, Any], key: str) -> None:
        turn = current_turn()
        pause = await request_pause(kind=PauseKind.APPROVAL, prompt=prompt, ttl=self.ttl,
                                    idempotency_key=key)
        if pause.run_id != turn.run.pk:
            raise ToolCallMismatch(
                f"the calls of this step were asked before, as pause {pause.pk} of another run "
                "of this conversation: a model's tool call ids must be unique within a run")


def _as_prompt(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _check_output_type(agent: PydanticAgent[Any, Any]) -> None:
    """Refuse an agent that cannot end on ``DeferredToolRequests``: its approvals would
    fail the run instead of pausing it."""
    spec = agent.output_type
    specs = spec if isinstance(spec, list | tuple) else [spec]
    if DeferredToolRequests not in specs:
        raise InteractionConfigurationError(
            "the Pydantic AI agent's output_type must include DeferredToolRequests "
            "(output_type=[str, DeferredToolRequests]) for its approvals to pause the run")


class PydanticAIAgentFactory:
    """``agent_for(scope)`` for ``SYMFONIC["AGENTS"]``: the ``PydanticAIAgent`` of a turn.

    ``agent`` is a Pydantic AI ``Agent``, or a factory ``scope -> Agent``;
    ``deps`` a callable ``scope -> deps``; ``input_schema`` is checked by
    ``start_run`` before a run exists. An agent given as it is, is checked here.
    """

    def __init__(self, agent: PydanticAgent[Any, Any] | Callable[[Any], Any], *,
                 input: Callable[[Any], Any] | None = None,
                 output: Callable[[Any], Any] | None = None,
                 deps: Callable[[Any], Any] | None = None, describe: Describe | None = None,
                 ttl: float | None = None, input_schema: dict[str, Any] | None = None) -> None:
        self.agent = agent
        self.options: dict[str, Any] = {"input": input, "output": output,
                                        "describe": describe, "ttl": ttl}
        self.deps = deps
        self.input_schema = input_schema
        if isinstance(agent, PydanticAgent):
            _check_output_type(agent)

    def __call__(self, scope: Any) -> PydanticAIAgent:
        agent = self.agent if isinstance(self.agent, PydanticAgent) else self.agent(scope)
        return PydanticAIAgent(agent, deps=self.deps(scope) if self.deps else None,
                               **self.options)


def pydantic_ai_agent(agent: PydanticAgent[Any, Any] | Callable[[Any], Any], *,
                      input: Callable[[Any], Any] | None = None,
                      output: Callable[[Any], Any] | None = None,
                      deps: Callable[[Any], Any] | None = None, describe: Describe | None = None,
                      ttl: float | None = None, input_schema: dict[str, Any] | None = None,
                      ) -> PydanticAIAgentFactory:
    """Register a Pydantic AI agent (or a factory ``scope -> Agent``) as an agent of the app;
    see ``PydanticAIAgent``."""
    return PydanticAIAgentFactory(agent, input=input, output=output, deps=deps,
                                  describe=describe, ttl=ttl, input_schema=input_schema)
