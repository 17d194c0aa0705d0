"""The LangGraph adapter: a compiled graph, or a factory of one, as an ``Agent``.

A ``create_agent`` agent behind the app::

    from langchain.agents import create_agent
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from symfonic_django.agents.langgraph import langgraph_agent
    from symfonic_django.checkpoint import DjangoSaver

    def build(scope):
        return create_agent(model, tools=[refund],
                            middleware=[HumanInTheLoopMiddleware({"refund": True})])

    refund_graph = langgraph_agent(build, checkpointer=DjangoSaver())
    # SYMFONIC["AGENTS"]["refund_graph"] = "myproject.agents.refund_graph"

**A turn** streams the graph on the run's thread (the run's ``thread_id``, or
its root run's id, inside the run's scope: the checkpointer's key is
``threads.checkpoint_thread_id(scope key, thread)``, so two scopes that use
the same ``thread_id`` never share a checkpoint), on the checkpointer given
here or the graph's own (see "The checkpointer" below). Each
interrupt the graph is left with becomes one pause, whose idempotency key is
the interrupt's id: a re-executed turn gets its pauses back, and the
continuation knows which answer goes to which interrupt. A new run on a thread
still paused on another run's pauses (of its scope: no other scope reaches
the thread) is refused before the graph is touched (``ThreadPaused``, code
``thread_paused``): LangGraph would drop the pending interrupts those pauses
answer. The prompt:

- a ``HITLRequest`` (``HumanInTheLoopMiddleware``, batched) is the approval as it is;
- a per-call ``{"type": "tool_approval", ...}`` is a one-action approval, its
  allowed decisions (and an edit's argument schema) read from the interrupt's
  ``response_schema``; the approval's answer resumes it as that one decision;
- Agent Inbox's older ``HumanInterrupt`` is converted to an approval, and the
  answer back to its ``HumanResponse``;
- anything else is a question, with the ``response_schema`` as its answer schema.

An approval's action whose review config carries no ``args_schema`` takes the
agent's ``args_schemas[action name]`` if given, else the schema of the graph's
own tool of that name (``tool_args_schemas``: the tools of its tool nodes,
each one's ``tool_call_schema``, written by ``hitl.plain_schema`` in the terms
the review form draws inputs from). ``HumanInTheLoopMiddleware`` sends none in
a batched request; with one, the review page has an input per argument and an
edit outside the schema is refused when given (``invalid_answer``), as is a
proposal (``invalid_proposal``); without any, nothing checks a reviewer's edit
(the page says so, and ``request_pause`` logs it once per agent). A
description the middleware made up ("Tool execution requires approval", the
tool's name and its args dict) is replaced by the call in words,
``refund(order_id=A-1, amount=10)``.

**The continuation** runs once every pause of the paused turn is resolved. It
resumes with ``Command(resume={interrupt_id: answer, ...})`` under strict
resume, after checking the answers against the thread's pending interrupts,
which LangGraph itself does not (checked on langgraph 1.2.24): an unknown or
already used interrupt id, a finished thread, and a ``HITLResponse`` whose
decisions do not match the pending action requests are refused with
``ResumeRefused`` before the graph is touched, and the turn ends
``turn.failed`` with code ``resume_refused`` and a message that starts with
the refusal's reason (``refusal_message``). The pauses' answers were already
checked against their prompts when they were given (``pauses.validate_answer``);
the check here is against the thread, which is what the graph will read.

**Events**: model tokens are ``message.delta``; each model message is
``message.completed``; each tool call it makes is ``tool.started`` and its
result ``tool.completed``; subgraphs' events are included, each message once.
A turn that completes ends with the last message's text as its output.

**The checkpointer** (``checkpointer=``) is either a saver, shared by every
turn, or a zero-argument callable returning an async context manager that
yields one (``lambda: AsyncPostgresSaver.from_conn_string(url)``), entered once
per turn inside the turn's event loop and closed when the turn ends. Each turn
runs on an event loop of its own (``turns.execute_run``), and a saver such as
``AsyncPostgresSaver`` must be made inside a running loop and stays tied to it:
the callable form gives every turn its own. The adapter streams the graph
asynchronously, so a saver must implement LangGraph's async methods; one that
implements only the sync ones (``PostgresSaver``) is refused when the agent is
made, naming its async sibling. It is not run through ``sync_to_async``: that
would be a second path for every saver operation (a wrapper mirroring each
method of ``BaseCheckpointSaver``, whose signatures LangGraph inspects), for a
saver whose package ships the async one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, aclosing, asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, cast
from uuid import UUID

from asgiref.sync import sync_to_async
from django.db.models import Q
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.prebuilt import ToolNode
from langgraph.pregel import Pregel
from langgraph.types import Command, Interrupt, StateSnapshot, StreamMode
from pydantic import BaseModel

from .. import hitl
from ..binding import current_run_binding
from ..events import (
    Event,
    MessageCompleted,
    MessageDelta,
    ToolCompleted,
    ToolStarted,
    TurnCompleted,
    TurnFailed,
)
from ..exceptions import (
    InteractionConfigurationError,
    InvalidAnswer,
    InvalidRequest,
    ResumeRefused,
    ThreadPaused,
)
from ..models import Pause, PauseKind, PauseStatus, Run, RunStatus
from ..pauses import TIMEOUT_ANSWER
from ..threads import checkpoint_thread_id
from ..turns import current_turn, request_pause
from .base import Continuation, TurnContext

__all__ = ["Checkpointer", "DEFAULT_DESCRIPTION_PREFIX", "LangGraphAgent",
           "LangGraphAgentFactory", "PauseRequest", "STRICT_RESUME", "SaverFactory",
           "ThreadPaused", "Transcript", "langgraph_agent", "last_message_text",
           "pause_request", "refusal_message", "resume_value", "tool_args_schema",
           "tool_args_schemas"]

log = logging.getLogger(__name__)

#: LangGraph's strict resume: a resume naming an interrupt that is not pending raises
#: ``UnknownInterruptError`` instead of being ignored (or landing on the node's next
#: interrupt). Its only switch is this internal config key
#: (``langgraph._internal._constants.CONFIG_KEY_STRICT_RESUME``; the public one is in the
#: Server SDK): the one private name this package uses, spelled out rather than imported
#: from a private module, and pinned by a test against LangGraph's own constant.
STRICT_RESUME = "__pregel_strict_resume"

#: How the graph streams: tokens from ``messages``, finished nodes' writes from ``updates``.
STREAM_MODES: list[StreamMode] = ["messages", "updates"]

#: What an approval that expired (``ON_EXPIRE="resume"``) tells the graph of each action.
TIMEOUT_MESSAGE = "The approval timed out."

#: ``checkpointer=`` as a callable: makes the saver of one turn, inside the turn's event
#: loop (``lambda: AsyncPostgresSaver.from_conn_string(url)``); see the module docstring.
SaverFactory = Callable[[], AbstractAsyncContextManager[BaseCheckpointSaver[Any]]]
#: What ``checkpointer=`` takes: a saver every turn shares, or a ``SaverFactory``.
Checkpointer = BaseCheckpointSaver[Any] | SaverFactory


# --- prompts: interrupt -> pause ---------------------------------------------------------

@dataclass(frozen=True)
class PauseRequest:
    """The pause one interrupt asks for."""

    kind: str
    prompt: Any
    answer_schema: Any = None
    #: How the interrupt is answered: "hitl", "tool_approval", "agent_inbox" or "question".
    shape: str = "question"


def pause_request(interrupt: Interrupt,
                  args_schemas: Mapping[str, dict[str, Any]] | None = None) -> PauseRequest:
    """The pause an interrupt becomes (module docstring, "The prompt").

    ``args_schemas`` (by action name) fills in the ``args_schema`` of an
    approval's review config that has none.
    """
    value = interrupt.value
    if isinstance(value, dict) and "action_requests" in value:
        prompt, shape = _readable(hitl.normalize_prompt(value)), "hitl"
    elif isinstance(value, dict) and value.get("type") == "tool_approval":
        prompt = _readable(_tool_approval_prompt(value, interrupt.response_schema))
        shape = "tool_approval"
    elif _is_agent_inbox(value):
        prompt, shape = hitl.normalize_prompt(value), "agent_inbox"
    else:
        schema = interrupt.response_schema if isinstance(interrupt.response_schema, dict) else None
        return PauseRequest(PauseKind.QUESTION, _jsonable(value), answer_schema=schema)
    return PauseRequest(PauseKind.APPROVAL, _with_args_schemas(prompt, args_schemas), shape=shape)


#: How ``HumanInTheLoopMiddleware`` starts the description of a tool call whose config
#: gives none (its ``description_prefix``'s default); the rest is
#: ``"\n\nTool: <name>\nArgs: <the args dict>"``. Pinned by a test against the middleware.
DEFAULT_DESCRIPTION_PREFIX = "Tool execution requires approval"


def _readable(prompt: dict[str, Any]) -> dict[str, Any]:
    """``prompt`` with each description the middleware made up in words a reviewer reads.

    ``"Tool execution requires approval\n\nTool: refund\nArgs: {'order_id': ...}"``
    becomes the call, ``refund(order_id=A-1, amount=10)``; under a custom
    ``description_prefix``, that prefix, a colon and the call. A description the
    deployment wrote (``InterruptOnConfig``'s ``description``) is kept as it is.
    """
    requests = []
    for request in prompt["action_requests"]:
        description = request.get("description")
        if isinstance(description, str):
            prefix, found, args = description.partition(f"\n\nTool: {request['name']}\nArgs: ")
            if found and args.startswith("{") and args.endswith("}"):
                call = hitl.call_text(request["name"], request.get("args", {}))
                request = {**request, "description": (
                    call if prefix == DEFAULT_DESCRIPTION_PREFIX
                    else f"{prefix.rstrip(' .:')}: {call}")}
        requests.append(request)
    return {**prompt, "action_requests": requests}


def _with_args_schemas(prompt: dict[str, Any],
                       args_schemas: Mapping[str, dict[str, Any]] | None) -> dict[str, Any]:
    """``prompt`` with ``args_schemas[action_name]`` in each review config that has no schema."""
    if not args_schemas:
        return prompt
    configs = [config if "args_schema" in config or config.get("action_name") not in args_schemas
               else {**config, "args_schema": args_schemas[config["action_name"]]}
               for config in prompt["review_configs"]]
    return {**prompt, "review_configs": configs}


def _is_agent_inbox(value: Any) -> bool:
    items = value if isinstance(value, list) else [value]
    return bool(items) and all(isinstance(i, dict) and "action_request" in i for i in items)


def _tool_approval_prompt(value: dict[str, Any], schema: Any) -> dict[str, Any]:
    """A per-call ``tool_approval`` as a one-action ``HITLRequest``."""
    request: dict[str, Any] = {"name": value.get("name"), "args": value.get("args") or {}}
    if value.get("description"):
        request["description"] = value["description"]
    allowed, args_schema = _decisions_in(schema)
    config: dict[str, Any] = {"action_name": value.get("name"),
                              "allowed_decisions": allowed or list(hitl.DECISION_TYPES)}
    if args_schema is not None:
        config["args_schema"] = args_schema
    return hitl.normalize_prompt({"action_requests": [request], "review_configs": [config]})


def _decisions_in(schema: Any) -> tuple[list[str], dict[str, Any] | None]:
    """The decision types a per-call ``response_schema`` allows, and an edit's args schema.

    LangChain publishes the schema of a union of decision types, one branch per
    allowed type (``{"type": {"const": "approve"}}``, ...), or the one branch.
    """
    if not isinstance(schema, dict):
        return [], None
    defs = schema.get("$defs") or {}

    def resolve(node: Any) -> dict[str, Any]:
        ref = node.get("$ref", "") if isinstance(node, dict) else ""
        if ref.startswith("#/$defs/"):
            found = defs.get(ref.removeprefix("#/$defs/"))
            return found if isinstance(found, dict) else {}
        return node if isinstance(node, dict) else {}

    allowed: list[str] = []
    args_schema: dict[str, Any] | None = None
    for branch in map(resolve, schema.get("oneOf") or schema.get("anyOf") or [schema]):
        kind_schema = (branch.get("properties") or {}).get("type") or {}
        kind = kind_schema.get("const") or next(iter(kind_schema.get("enum") or []), None)
        if kind not in hitl.DECISION_TYPES or kind in allowed:
            continue
        allowed.append(kind)
        if kind == "edit":
            action = resolve((branch.get("properties") or {}).get("edited_action"))
            args = resolve((action.get("properties") or {}).get("args"))
            if args:
                # The definitions go along only when the tool's schema refers to them;
                # plain_schema then writes them in place where it can.
                refers = "#/$defs/" in json.dumps(args)
                args_schema = hitl.plain_schema({**args, "$defs": defs} if refers
                                                else dict(args))
    return allowed, args_schema


# --- the tools' own argument schemas -------------------------------------------------------

def tool_args_schema(tool: BaseTool) -> dict[str, Any] | None:
    """The JSON Schema of the arguments a model gives ``tool`` (``tool_call_schema``:
    injected arguments left out), as the review form reads it (``hitl.plain_schema``);
    ``None`` when the tool has none in a form the app can read (a pydantic v1 model),
    pydantic cannot write it as JSON Schema (an argument typed as a callable), or it
    is not valid JSON Schema (both logged)."""
    try:
        given = tool.tool_call_schema
        if isinstance(given, dict):
            schema = given
        elif isinstance(given, type) and issubclass(given, BaseModel):
            schema = given.model_json_schema()
        else:
            return None
    except Exception as exc:  # noqa: BLE001 - a schema pydantic cannot write must not stop the agent
        log.warning("the argument schema of tool %r is left out: %s", tool.name, exc)
        return None
    plain = hitl.plain_schema(schema)
    try:
        hitl.check_schema(plain, what=f"The argument schema of tool {tool.name!r}")
    except InvalidRequest as exc:
        log.warning("%s It is left out: nothing checks its edits.", exc.detail)
        return None
    return plain


def tool_args_schemas(graph: Pregel[Any, Any, Any, Any]) -> dict[str, dict[str, Any]]:
    """``tool_args_schema`` of each tool of the graph's tool nodes (``ToolNode``, as
    ``create_agent`` makes), its subgraphs' included, by tool name. A name two tool
    nodes give different schemas is left out: which one a call runs is not known here."""
    graphs = [graph, *(sub for _, sub in graph.get_subgraphs(recurse=True)
                       if isinstance(sub, Pregel))]
    found: dict[str, dict[str, Any] | None] = {}
    for each in graphs:
        for node in each.nodes.values():
            if not isinstance(node.bound, ToolNode):
                continue
            for name, tool in node.bound.tools_by_name.items():
                schema = tool_args_schema(tool)
                found[name] = schema if found.get(name, schema) == schema else None
    return {name: schema for name, schema in found.items() if schema is not None}


def _jsonable(value: Any) -> Any:
    """``value`` as JSON can store it (an object that is not JSON becomes its ``str``)."""
    return json.loads(json.dumps(value, default=str))


# --- answers: pause -> resume value ------------------------------------------------------

def resume_value(interrupt: Interrupt, answer: Any,
                 args_schemas: Mapping[str, dict[str, Any]] | None = None) -> Any:
    """What the graph is resumed with for ``interrupt``, from its pause's ``answer``.

    An approval's ``HITLResponse`` is checked against the interrupt's own
    request (number and allowed types of decisions, edits against
    ``args_schemas`` as ``pause_request`` applies them) and raises
    ``ResumeRefused`` (``decisions_mismatch``) if it does not fit. An approval
    that expired (``ON_EXPIRE="resume"``) rejects every action, or responds
    where only that is allowed; a question gets the app's timeout answer as it is.
    """
    request = pause_request(interrupt, args_schemas)
    if request.kind == PauseKind.QUESTION:
        return answer
    if answer == TIMEOUT_ANSWER:
        answer = _timed_out(request.prompt)
    try:
        decisions: list[dict[str, Any]] = hitl.validate_response(request.prompt,
                                                                answer)["decisions"]
    except InvalidAnswer as exc:
        raise ResumeRefused(
            f"The answer does not fit the approval the graph is waiting for: {exc.detail}",
            reason="decisions_mismatch") from exc
    if request.shape == "tool_approval":
        return decisions[0]
    if request.shape == "agent_inbox":
        responses = [_human_response(d) for d in decisions]
        return responses if isinstance(interrupt.value, list) else responses[0]
    return {"decisions": decisions}


def _timed_out(prompt: dict[str, Any]) -> dict[str, Any]:
    decisions = []
    for request in prompt["action_requests"]:
        allowed = hitl.review_config(prompt, request["name"]).get("allowed_decisions", [])
        kind = next((k for k in ("reject", "respond") if k in allowed), None)
        if kind is None:
            raise ResumeRefused(
                f"The approval of {request['name']!r} expired, and it allows neither reject "
                "nor respond, so the graph has no way to be told.", reason="decisions_mismatch")
        decisions.append({"type": kind, "message": TIMEOUT_MESSAGE})
    return {"decisions": decisions}


def _human_response(decision: dict[str, Any]) -> dict[str, Any]:
    """A ``HITLResponse`` decision as Agent Inbox's ``HumanResponse``."""
    kind = decision["type"]
    if kind == "edit":
        action = decision["edited_action"]
        return {"type": "edit", "args": {"action": action["name"], "args": action["args"]}}
    if kind == "respond":
        return {"type": "response", "args": decision["message"]}
    return {"type": "accept" if kind == "approve" else "ignore", "args": None}


# --- events: stream chunks -> typed events -----------------------------------------------

class Transcript:
    """What the thread has said: each message and tool call becomes events once.

    A node's update repeats messages already streamed (``HumanInTheLoopMiddleware``
    writes the model's message again with its revised tool calls; a parent
    repeats its subgraph's messages), and a continuation starts from a thread
    whose messages were streamed by earlier turns.
    """

    def __init__(self, values: Any = None) -> None:
        self.seen: set[str] = set()
        self.calls: dict[str, dict[str, Any]] = {}
        for message in _messages_in(values):
            self.seen.add(_message_key(message))
            self._register_calls(message)

    def events(self, mode: str, chunk: Any) -> list[Event]:
        if mode == "messages":
            message = chunk[0] if isinstance(chunk, tuple) and chunk else None
            if isinstance(message, AIMessageChunk) and message.text:
                return [MessageDelta(text=message.text)]
            return []
        if mode != "updates" or not isinstance(chunk, dict):
            return []
        events: list[Event] = []
        for node, update in chunk.items():
            if not node.startswith("__"):
                for message in _messages_in(update):
                    events += self._said(message)
        return events

    def _said(self, message: BaseMessage) -> list[Event]:
        key = _message_key(message)
        new = key not in self.seen
        self.seen.add(key)
        self._register_calls(message)  # the latest revision: what will run
        if not new:
            return []
        if isinstance(message, ToolMessage):
            call = self.calls.get(message.tool_call_id, {})
            return [ToolCompleted(tool_call_id=message.tool_call_id,
                                  name=message.name or call.get("name", ""),
                                  args=call.get("args", {}), result=_tool_result(message),
                                  status=message.status)]
        if not isinstance(message, AIMessage):
            return []
        events: list[Event] = [MessageCompleted(text=message.text)] if message.text else []
        events += [ToolStarted(tool_call_id=call["id"] or "", name=call["name"],
                               args=_jsonable(call["args"])) for call in message.tool_calls]
        return events

    def _register_calls(self, message: BaseMessage) -> None:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call["id"]:
                    self.calls[call["id"]] = {"name": call["name"],
                                              "args": _jsonable(call["args"])}


def _messages_in(update: Any) -> Iterable[BaseMessage]:
    """The messages a node's update (or a state's values) holds."""
    if isinstance(update, list):
        for item in update:
            yield from _messages_in(item)
        return
    if not isinstance(update, dict):
        return
    messages = update.get("messages")
    for message in messages if isinstance(messages, list) else [messages]:
        if isinstance(message, BaseMessage):
            yield message


def _message_key(message: BaseMessage) -> str:
    if isinstance(message, ToolMessage):
        return f"tool:{message.tool_call_id}"
    if message.id:
        return f"id:{message.id}"
    calls = [c["id"] for c in message.tool_calls] if isinstance(message, AIMessage) else []
    return f"{message.type}:{json.dumps([message.content, calls], default=str)}"


def _tool_result(message: ToolMessage) -> Any:
    """A tool's result as the event carries it: a JSON object or array parsed, else as given."""
    content = message.content
    if isinstance(content, str) and content[:1] in "[{":
        try:
            return json.loads(content)
        except ValueError:
            return content
    return _jsonable(content)


def last_message_text(values: Any) -> Any:
    """The default output of a completed turn: the last message's text, else the state as JSON."""
    messages = list(_messages_in(values))
    if messages:
        return messages[-1].text
    return _jsonable(values)


# --- the agent ---------------------------------------------------------------------------

class LangGraphAgent:
    """An ``Agent`` that drives one compiled graph (module docstring).

    ``checkpointer`` replaces the graph's own (one is needed: interrupts are
    kept there): a saver, or a ``SaverFactory`` entered once per turn (module
    docstring, "The checkpointer"); ``input`` maps the run's input to the
    graph's (default: as it is); ``output`` maps the final state's values to
    the turn's output (default: ``last_message_text``); ``ttl`` is the pauses'
    lifetime in seconds (default: ``TOKEN_MAX_AGE``); ``args_schemas`` is the
    argument schema of each approval action, by name, where the interrupt
    gives none; an action it does not name takes its tool's own schema
    (``tool_args_schemas``; module docstring, "The prompt").
    """

    def __init__(self, graph: Pregel[Any, Any, Any, Any], *,
                 checkpointer: Checkpointer | None = None,
                 input: Callable[[Any], Any] | None = None,
                 output: Callable[[Any], Any] | None = None,
                 ttl: float | None = None,
                 args_schemas: Mapping[str, dict[str, Any]] | None = None) -> None:
        self.saver_factory: SaverFactory | None = None
        if isinstance(checkpointer, BaseCheckpointSaver):
            graph = graph.copy(update={"checkpointer": checkpointer})
        elif callable(checkpointer):
            self.saver_factory = checkpointer
        if self.saver_factory is None:
            _check_saver(graph.checkpointer)
        _refuse_static_breakpoints(graph)
        self.graph = graph
        self.input = input or (lambda value: value)
        self.output = output or last_message_text
        self.ttl = ttl
        # The tools' own schemas, unless the deployment gives one (module docstring).
        self.args_schemas = {**tool_args_schemas(graph), **(args_schemas or {})}

    # -- the protocol --

    async def start_typed(self, context: TurnContext, input: Any,
                          ) -> AsyncGenerator[Event, None]:
        async with self._graph_of_turn() as graph:
            config = self._config(context.run)
            state = await graph.aget_state(config)
            graph_input = None
            if not _ran_before(state, context.run):
                try:
                    await sync_to_async(_refuse_if_answers_awaited)(state, context.run)
                except ThreadPaused as refusal:
                    yield TurnFailed(code=refusal.code, message=refusal.detail)
                    return
                graph_input = self.input(input)
            async for event in self._drive(graph, graph_input, config, Transcript(state.values),
                                           context.run):
                yield event

    async def continue_recovered_typed(
        self, continuation: Continuation, *, prepared_plan: Any = None, event_guard: Any = None,
    ) -> AsyncGenerator[Event, None]:
        async with self._graph_of_turn() as graph:
            config = self._config(continuation.run)
            state = await graph.aget_state(config)
            graph_input: Any = None
            if not _ran_before(state, continuation.run):
                try:
                    resume = await self._resume_map(graph, config, state, continuation.answers)
                except ResumeRefused as refusal:
                    yield TurnFailed(code=refusal.code, message=refusal_message(refusal))
                    return
                graph_input = Command(resume=resume)
                config = {**config,
                          "configurable": {**config["configurable"], STRICT_RESUME: True}}
            async for event in self._drive(graph, graph_input, config, Transcript(state.values),
                                           continuation.run):
                yield event

    @asynccontextmanager
    async def _graph_of_turn(self) -> AsyncIterator[Pregel[Any, Any, Any, Any]]:
        """The graph on this turn's checkpointer: the one given, or the factory's for the turn."""
        if self.saver_factory is None:
            yield self.graph
            return
        made = self.saver_factory()
        if not isinstance(made, AbstractAsyncContextManager):
            raise InteractionConfigurationError(
                "checkpointer= as a callable must return an async context manager that yields "
                f"a saver (like AsyncPostgresSaver.from_conn_string(url)), not a "
                f"{type(made).__name__}")
        async with made as saver:
            _check_saver(saver)
            yield self.graph.copy(update={"checkpointer": saver})

    # -- driving the graph --

    def _config(self, run: Run) -> RunnableConfig:
        # The checkpointer's thread is the caller's, inside the run's scope (threads.py): two
        # scopes' "T" never meet. The run id goes into the metadata of each checkpoint the
        # turn writes: a turn run again (a retried run) sees it drove the thread already
        # (_ran_before), and the saver's delete_for_runs takes the app's run ids.
        return {"configurable": {"thread_id": checkpoint_thread_id(run.scope_key,
                                                                   _caller_thread_id(run))},
                "metadata": {"run_id": str(run.pk)}}

    async def _drive(self, graph: Pregel[Any, Any, Any, Any], graph_input: Any,
                     config: RunnableConfig, transcript: Transcript,
                     run: Run) -> AsyncGenerator[Event, None]:
        """Stream the graph, then pause on its interrupts or complete with its output."""
        # durability="sync": each step's checkpoint is saved before the next step runs, so
        # what a tool did is on record before anything after it happens.
        # An async generator, typed as an iterator: closed (aclosing) if the turn stops early.
        stream = cast(AsyncGenerator[Any, None], graph.astream(
            graph_input, config, stream_mode=STREAM_MODES, subgraphs=True, durability="sync"))
        async with aclosing(stream):
            async for _namespace, mode, chunk in stream:
                for event in transcript.events(mode, chunk):
                    yield event
        state = await graph.aget_state(config)
        if state.interrupts:
            await self._pause(state, run)
            return
        if state.next:
            raise InteractionConfigurationError(
                f"the graph stopped before {list(state.next)} without an interrupt(): static "
                "breakpoints (interrupt_before / interrupt_after) cannot be answered; call "
                "interrupt() in the node instead")
        yield TurnCompleted(output=_jsonable(self.output(state.values)))

    async def _pause(self, state: StateSnapshot, run: Run) -> None:
        """One pause per interrupt, keyed by the interrupt's id."""
        turn = current_turn()
        binding = partial(current_run_binding, session_id=run.session_id,
                          thread_id=_caller_thread_id(run),
                          checkpoint_id=state.config["configurable"].get("checkpoint_id"))
        for interrupt in state.interrupts:
            request = pause_request(interrupt, self.args_schemas)
            pause = await request_pause(
                kind=request.kind, prompt=request.prompt, answer_schema=request.answer_schema,
                ttl=self.ttl, idempotency_key=interrupt.id, binding=binding)
            if pause.run_id != turn.run.pk:
                raise InteractionConfigurationError(
                    f"interrupt {interrupt.id} was asked before, as pause {pause.pk} of run "
                    f"{pause.run_id}, and the graph is waiting for it again")

    # -- continuing --

    async def _resume_map(self, graph: Pregel[Any, Any, Any, Any], config: RunnableConfig,
                          state: StateSnapshot, answers: dict[str, Any]) -> dict[str, Any]:
        """The resume map, by interrupt id, or ``ResumeRefused`` (nothing is touched)."""
        pending = {interrupt.id: interrupt for interrupt in state.interrupts}
        if not pending and not state.next:
            raise ResumeRefused("The graph's thread has finished: it is waiting for no answer.",
                                reason="thread_finished")
        keys = await sync_to_async(_interrupt_ids)(list(answers))
        resume: dict[str, Any] = {}
        for pause_id, answer in answers.items():
            interrupt_id = keys.get(pause_id, "")
            interrupt = pending.get(interrupt_id)
            if interrupt is None:
                if interrupt_id and await _was_asked(graph, config, interrupt_id):
                    raise ResumeRefused(
                        f"Interrupt {interrupt_id} (pause {pause_id}) was answered already, "
                        "or abandoned: the graph is no longer waiting for it.",
                        reason="used_interrupt")
                raise ResumeRefused(
                    f"Pause {pause_id} answers no interrupt this graph's thread ever asked "
                    f"({interrupt_id or 'no interrupt id'}).", reason="unknown_interrupt")
            resume[interrupt_id] = resume_value(interrupt, answer, self.args_schemas)
        if not resume:
            raise ResumeRefused("The continuation carries no answer.", reason="unknown_interrupt")
        return resume



async def _was_asked(graph: Pregel[Any, Any, Any, Any], config: RunnableConfig,
                     interrupt_id: str) -> bool:
    """Whether the thread ever asked ``interrupt_id``, in any of its checkpoints."""
    async for snapshot in graph.aget_state_history(config):
        if any(interrupt.id == interrupt_id for interrupt in snapshot.interrupts):
            return True
    return False


def _check_saver(saver: Any) -> None:
    """Refuse what cannot keep a turn's interrupts: no saver, or one without async methods."""
    if not isinstance(saver, BaseCheckpointSaver):
        raise InteractionConfigurationError(
            "a LangGraph agent needs a checkpointer, where its interrupts are kept: pass "
            "checkpointer= (symfonic_django.checkpoint.DjangoSaver(), or your own) or "
            "compile the graph with one")
    if type(saver).aget_tuple is BaseCheckpointSaver.aget_tuple:
        name = type(saver).__name__
        raise InteractionConfigurationError(
            f"the checkpointer {name} implements only LangGraph's sync methods, and the "
            "adapter streams the graph asynchronously: use its async variant, made for each "
            f"turn by a callable (checkpointer=lambda: Async{name}.from_conn_string(url) for "
            "langgraph-checkpoint-postgres), or DjangoSaver()")


def _refuse_static_breakpoints(graph: Pregel[Any, Any, Any, Any]) -> None:
    """Refuse a graph compiled with ``interrupt_before`` / ``interrupt_after``.

    A static breakpoint stops the graph with no interrupt to answer, so no pause
    could continue it. One inside a subgraph is only seen when the graph stops
    there: the turn then fails the same way (``_drive``).
    """
    nodes = {"interrupt_before": graph.interrupt_before_nodes,
             "interrupt_after": graph.interrupt_after_nodes}
    given = {name: value for name, value in nodes.items() if value}
    if given:
        raise InteractionConfigurationError(
            f"the graph is compiled with static breakpoints ({given}), which stop it without "
            "an interrupt() a person could answer; call interrupt() in the node instead")


def refusal_message(refusal: ResumeRefused) -> str:
    """The ``turn.failed`` (and ``run.error``) message of a refused resume: its reason first.

    ``"<reason>: <detail>"``, the reason one of ``ResumeRefused.REASONS``, so a
    client reads it as ``message.partition(": ")[0]``. The reason goes in the
    message because ``turn.failed``'s data is pinned to ``code`` and ``message``
    (docs/design.md section 6), and ``run.error`` copies them.
    """
    return f"{refusal.reason}: {refusal.detail}"


def _refuse_if_answers_awaited(state: StateSnapshot, run: Run) -> None:
    """Raise ``ThreadPaused`` if the thread's pending interrupts are pauses that will resume it.

    They are the pauses of ``run``'s scope, of the run that wrote the thread's
    latest checkpoint (its metadata names it), asking those interrupts, still
    pending, or answered with a continuation yet to run. Interrupts with no
    such pause (cancelled, expired, their run failed; or a thread driven
    outside the app) hold nothing back: the new run takes the thread, as
    LangGraph would. The thread is the scope's own (``_config``), and the
    pauses are looked up in the scope too, so a refusal never names another
    scope's run or pauses.
    """
    if not state.interrupts:
        return
    try:
        paused_run = UUID(str((state.metadata or {}).get("run_id")))
    except ValueError:
        return
    awaited = [str(pk) for pk in Pause.objects.filter(
        run_id=paused_run, run__scope_key=run.scope_key,
        idempotency_key__in=[i.id for i in state.interrupts],
    ).filter(
        Q(status=PauseStatus.PENDING)
        | Q(status=PauseStatus.ANSWERED,
            continuation__status__in=[RunStatus.QUEUED, RunStatus.RUNNING]),
    ).order_by("created_at").values_list("pk", flat=True)]
    if not awaited:
        return
    # The refusal is stored on the new run, which its starter reads: it names the paused
    # run and its pauses only to the one who started that run too (or when neither was
    # started by a person), never another member's ids.
    owner = Run.objects.filter(pk=paused_run).values_list("started_by_id", flat=True).first()
    if owner == run.started_by_id:
        where = f"run {paused_run}, which waits for pause(s) {', '.join(awaited)}"
    else:
        where = "another member's run, which waits for an answer"
    raise ThreadPaused(
        f"Thread {_caller_thread_id(run)} is paused on {where}: answer or cancel them before "
        "starting another run on the thread (a new run would drop them).")


def _caller_thread_id(run: Run) -> str:
    """The run's thread as its caller names it: its ``thread_id``, or its root run's id."""
    return run.thread_id or run.root_run_id


def _ran_before(state: StateSnapshot, run: Run) -> bool:
    """Whether ``run`` wrote the thread's latest checkpoint: the turn is running again.

    A re-executed turn then continues the thread where it stopped (LangGraph
    re-runs the unfinished tasks, which ask their interrupts again, under the
    same ids), instead of feeding the graph its input, or its answers, a second
    time: those were taken already.
    """
    return bool(state.metadata) and (state.metadata or {}).get("run_id") == str(run.pk)


def _interrupt_ids(pause_ids: list[str]) -> dict[str, str]:
    """Each pause's interrupt id (its idempotency key), by pause id."""
    return {str(pk): key for pk, key in
            Pause.objects.filter(pk__in=pause_ids).values_list("pk", "idempotency_key")}


class LangGraphAgentFactory:
    """``agent_for(scope)`` for ``SYMFONIC["AGENTS"]``: the ``LangGraphAgent`` of a turn.

    ``graph`` is a compiled graph, or a factory ``scope -> graph`` called for
    each turn; ``input_schema`` is checked by ``start_run`` before a run exists.
    A compiled graph is checked here, when the agent is registered, so a
    graph without a checkpointer, or with static breakpoints, is refused
    (``InteractionConfigurationError``) before any run; a factory's graph is
    checked when a turn builds it.
    """

    def __init__(self, graph: Pregel[Any, Any, Any, Any] | Callable[[Any], Any], *,
                 checkpointer: Checkpointer | None = None,
                 input: Callable[[Any], Any] | None = None,
                 output: Callable[[Any], Any] | None = None, ttl: float | None = None,
                 input_schema: dict[str, Any] | None = None,
                 args_schemas: Mapping[str, dict[str, Any]] | None = None) -> None:
        self.graph = graph
        self.checkpointer = checkpointer
        self.input, self.output, self.ttl = input, output, ttl
        self.input_schema = input_schema
        self.args_schemas = args_schemas
        # One agent serves every turn of a compiled graph: it keeps nothing of a turn.
        self.agent = self._agent(graph) if isinstance(graph, Pregel) else None

    def __call__(self, scope: Any) -> LangGraphAgent:
        if self.agent is not None:
            return self.agent
        return self._agent(cast(Callable[[Any], Any], self.graph)(scope))

    def _agent(self, graph: Pregel[Any, Any, Any, Any]) -> LangGraphAgent:
        return LangGraphAgent(graph, checkpointer=self.checkpointer, input=self.input,
                              output=self.output, ttl=self.ttl, args_schemas=self.args_schemas)


def langgraph_agent(graph: Pregel[Any, Any, Any, Any] | Callable[[Any], Any], *,
                    checkpointer: Checkpointer | None = None,
                    input: Callable[[Any], Any] | None = None,
                    output: Callable[[Any], Any] | None = None, ttl: float | None = None,
                    input_schema: dict[str, Any] | None = None,
                    args_schemas: Mapping[str, dict[str, Any]] | None = None,
                    ) -> LangGraphAgentFactory:
    """Register a graph (or a factory ``scope -> graph``) as an agent; see ``LangGraphAgent``."""
    return LangGraphAgentFactory(graph, checkpointer=checkpointer, input=input, output=output,
                                 ttl=ttl, input_schema=input_schema, args_schemas=args_schemas)
