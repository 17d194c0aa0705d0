"""The agent: an OpenAI Agents SDK ``Agent``, or a factory of one, driven turn by turn.

**A turn** streams ``Runner.run_streamed`` and maps its events (``stream``).
When the run stops on tool calls that need approval (``result.interruptions``,
read after the stream: the SDK does not stream them), the turn:

1. checks the step's call ids (``prompts.check_call_ids``), and that no earlier
   run of the conversation asked about the same calls;
2. stores the run's state, ``result.to_state().to_string()``, with the paused run
   (``stored_state.save_state``, fenced), before asking anything;
3. asks one approval pause with one action per call (``prompts.approval_prompt``),
   keyed by the call ids.

A turn that runs again (its worker died, the run was retried) finds the state it
stored (``saved_state``) and asks the same pause again from it, without asking
the model again.

**The continuation** takes the paused run's state once
(``stored_state.consume_state``), checking the answers against it inside the same
transaction (``resume.decide``): a refusal leaves the state untaken. It resumes
``Runner.run_streamed(agent, state)`` and either completes or pauses again,
storing the new state under its own run. A second continuation of the same
pauses is refused (``state_consumed``); the same continuation claimed again (a
retry, a redelivery) takes the state again, and its fenced tools
(``fenced_function_tool``) replay what they recorded instead of running again.

The run context is not kept: the SDK is run without one (``context=None``), so
the state round-trips exactly; a tool reads the turn with ``current_turn()``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from functools import partial
from typing import Any, cast

from agents import Agent, RunConfig, Runner, RunResultStreaming, RunState, ToolApprovalItem
from asgiref.sync import sync_to_async

from ...agent_protocol import NewTurn, ResumedTurn
from ...events import Event, TurnCompleted, TurnFailed
from ...exceptions import ResumeRefused, SymfonicError, ToolCallMismatch
from ...jsontext import jsonable
from ...models import Pause, PauseKind
from ...turns import LeaseLost, current_turn, request_pause
from ..recorded import refuse_recorded_ids, root_run_of
from ..stored_state import consume_state, save_state, saved_state
from .prompts import Describe, approval_prompt, call_args, check_call_ids, pause_key
from .resume import Decided, decide, refusal_message
from .stream import Transcript

__all__ = ["FRAMEWORK", "OpenAIAgent", "OpenAIAgentFactory", "openai_agent"]

#: The framework a stored state is kept under (``AgentState.framework``).
FRAMEWORK = "openai_agents"

#: The SDK's own default number of model turns per run.
DEFAULT_MAX_TURNS = 10


class OpenAIAgent:
    """An app ``Agent`` that drives one SDK ``Agent`` (module docstring).

    ``input`` maps the run's input to the SDK's (default: a string as it is,
    anything else as its JSON text); ``output`` maps the final output to the
    turn's (default: as JSON stores it); ``ttl`` is the pauses' lifetime in
    seconds; ``describe(name, args)`` writes each call's description;
    ``args_schemas`` replaces a tool's own argument schema, by tool name;
    ``max_turns`` and ``run_config`` go to ``Runner.run_streamed``.
    """

    def __init__(self, agent: Agent[Any], *, input: Callable[[Any], Any] | None = None,
                 output: Callable[[Any], Any] | None = None, ttl: float | None = None,
                 describe: Describe | None = None,
                 args_schemas: Mapping[str, dict[str, Any]] | None = None,
                 max_turns: int = DEFAULT_MAX_TURNS, run_config: RunConfig | None = None,
                 ) -> None:
        self.agent = agent
        self.input = input or _as_text
        self.output = output or jsonable
        self.ttl = ttl
        self.describe = describe
        self.args_schemas = dict(args_schemas or {})
        self.max_turns = max_turns
        self.run_config = run_config

    # -- the protocol --

    async def start_typed(self, context: NewTurn, input: Any) -> AsyncGenerator[Event, None]:
        if await self._asked_again():
            return
        result = self._run(self.input(input))
        async for event in self._drive(result, Transcript()):
            yield event

    async def continue_recovered_typed(
        self, continuation: ResumedTurn, *, prepared_plan: Any = None, event_guard: Any = None,
    ) -> AsyncGenerator[Event, None]:
        if await self._asked_again():
            return
        try:
            decided: Decided = await sync_to_async(consume_state)(
                FRAMEWORK, continuation.paused_run_id,
                check=partial(decide, self.agent, continuation=continuation))
        except ResumeRefused as refusal:
            yield TurnFailed(code=refusal.code, message=refusal_message(refusal))
            return
        calls = {str(i.call_id): (str(i.tool_name), call_args(i))
                 for i in decided.state.get_interruptions()}
        result = self._run(decided.state)
        async for event in self._drive(result, Transcript(decided.refused, calls)):
            yield event

    # -- driving the SDK --

    def _run(self, given: Any) -> RunResultStreaming:
        return Runner.run_streamed(self.agent, given, max_turns=self.max_turns,
                                   run_config=self.run_config)

    async def _drive(self, result: RunResultStreaming,
                     transcript: Transcript) -> AsyncGenerator[Event, None]:
        """Stream the run, then pause on its interruptions or complete with its output."""
        try:
            async for stream_event in result.stream_events():
                for event in transcript.events(stream_event):
                    yield event
        except Exception as exc:
            # The SDK wraps what a tool raised ("Error running tool ..."): the app's own
            # refusals and faults end the turn as themselves (tool_call_mismatch, ...).
            app_error = _app_error(exc)
            if app_error is None:
                raise
            raise app_error from exc
        if result.interruptions:
            await self._pause(result)
            return
        yield TurnCompleted(output=jsonable(self.output(result.final_output)))

    async def _pause(self, result: RunResultStreaming) -> None:
        """Store the state, then ask one pause about the step's calls (module docstring)."""
        items = list(result.interruptions)
        ids = check_call_ids(items)
        key = pause_key(ids)
        await sync_to_async(_refuse_asked_before)(key)
        await sync_to_async(refuse_recorded_ids)(ids)
        await sync_to_async(save_state)(FRAMEWORK, result.to_state().to_string())
        await self._ask(items, key)

    async def _asked_again(self) -> bool:
        """Whether this run paused before (a turn running again): then its pause is asked
        again from the state it stored, and the model is not asked again."""
        text = await sync_to_async(saved_state)(FRAMEWORK)
        if text is None:
            return False
        state = await RunState.from_string(self.agent, text)
        items = state.get_interruptions()
        await self._ask(items, pause_key(check_call_ids(items)))
        return True

    async def _ask(self, items: Sequence[ToolApprovalItem], key: str) -> None:
        await request_pause(kind=PauseKind.APPROVAL, idempotency_key=key, ttl=self.ttl,
                            prompt=approval_prompt(items, self.describe, self.args_schemas))


def _app_error(exc: BaseException) -> BaseException | None:
    """The app's refusal or fault ``exc`` was raised for, in its chain of causes, if any."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, (SymfonicError, LeaseLost)):
            return seen
        seen = seen.__cause__
    return None


def _refuse_asked_before(key: str) -> None:
    """``ToolCallMismatch`` when another run of this conversation asked about these call
    ids: the model reused them, and the earlier pause's answer is not this step's."""
    turn = current_turn()
    earlier = (Pause.objects.filter(root_run_id=root_run_of(turn), idempotency_key=key)
               .exclude(run_id=turn.run.pk).values_list("run_id", flat=True).first())
    if earlier is not None:
        raise ToolCallMismatch(
            f"the model's call ids of this step were asked about already, by run {earlier}: "
            "call ids must be unique within a conversation, so the step is refused")


def _as_text(value: Any) -> str:
    """The run's input as the SDK's: a string as it is, anything else as JSON text."""
    return value if isinstance(value, str) else json.dumps(value)


class OpenAIAgentFactory:
    """``agent_for(scope)`` for ``SYMFONIC["AGENTS"]``: the ``OpenAIAgent`` of a turn.

    ``agent`` is an SDK ``Agent``, or a factory ``scope -> Agent`` called for
    each turn (a model or tools that depend on the tenant; a scripted model
    whose steps one turn uses up). ``input_schema`` is checked by ``start_run``
    before a run exists. Every other keyword is ``OpenAIAgent``'s.
    """

    def __init__(self, agent: Agent[Any] | Callable[[Any], Agent[Any]], *,
                 input_schema: dict[str, Any] | None = None, **options: Any) -> None:
        self.agent = agent
        self.input_schema = input_schema
        self.options = options
        self.shared = OpenAIAgent(agent, **options) if isinstance(agent, Agent) else None

    def __call__(self, scope: Any) -> OpenAIAgent:
        if self.shared is not None:
            return self.shared
        made = cast(Callable[[Any], Agent[Any]], self.agent)(scope)
        return OpenAIAgent(made, **self.options)


def openai_agent(agent: Agent[Any] | Callable[[Any], Agent[Any]], *,
                 input: Callable[[Any], Any] | None = None,
                 output: Callable[[Any], Any] | None = None, ttl: float | None = None,
                 describe: Describe | None = None,
                 args_schemas: Mapping[str, dict[str, Any]] | None = None,
                 max_turns: int = DEFAULT_MAX_TURNS, run_config: RunConfig | None = None,
                 input_schema: dict[str, Any] | None = None) -> OpenAIAgentFactory:
    """Register an SDK ``Agent`` (or a factory ``scope -> Agent``); see ``OpenAIAgent``."""
    return OpenAIAgentFactory(agent, input_schema=input_schema, input=input, output=output,
                              ttl=ttl, describe=describe, args_schemas=args_schemas,
                              max_turns=max_turns, run_config=run_config)
