"""The agent: a compiled graph, or a factory of one, driven turn by turn.

**A turn** streams the graph on the run's thread (the run's ``thread_id``, or
its root run's id, inside the run's scope: the checkpointer's key is
``threads.checkpoint_thread_id(scope key, thread)``, so two scopes that use
the same ``thread_id`` never share a checkpoint), on the checkpointer given
here or the graph's own (see "The checkpointer" below). Each
interrupt the graph is left with becomes one pause (``prompts``), whose
idempotency key is the interrupt's id: a re-executed turn gets its pauses
back, and the continuation knows which answer goes to which interrupt
(``resume``). A new run on a thread still paused on another run's pauses (of
its scope: no other scope reaches the thread) is refused before the graph is
touched (``ThreadPaused``, code ``thread_paused``): LangGraph would drop the
pending interrupts those pauses answer.

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

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, aclosing, asynccontextmanager
from functools import partial
from typing import Any, cast
from uuid import UUID

from asgiref.sync import sync_to_async
from django.db.models import Q
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.pregel import Pregel
from langgraph.types import Command, StateSnapshot

from ...agent_protocol import NewTurn, ResumedTurn
from ...binding import current_run_binding
from ...events import Event, TurnCompleted, TurnFailed
from ...exceptions import InteractionConfigurationError, ResumeRefused, ThreadPaused
from ...jsontext import jsonable
from ...models import Pause, PauseStatus, Run, RunStatus
from ...threads import checkpoint_thread_id
from ...turns import current_turn, request_pause
from .prompts import pause_request, tool_args_schemas
from .resume import STRICT_RESUME, refusal_message, resume_map
from .stream import STREAM_MODES, Transcript, last_message_text

__all__ = ["Checkpointer", "LangGraphAgent", "LangGraphAgentFactory", "SaverFactory",
           "langgraph_agent"]

#: ``checkpointer=`` as a callable: makes the saver of one turn, inside the turn's event
#: loop (``lambda: AsyncPostgresSaver.from_conn_string(url)``); see the module docstring.
SaverFactory = Callable[[], AbstractAsyncContextManager[BaseCheckpointSaver[Any]]]
#: What ``checkpointer=`` takes: a saver every turn shares, or a ``SaverFactory``.
Checkpointer = BaseCheckpointSaver[Any] | SaverFactory


class LangGraphAgent:
    """An ``Agent`` that drives one compiled graph (module docstring, "A turn").

    ``checkpointer`` replaces the graph's own (one is needed: interrupts are
    kept there): a saver, or a ``SaverFactory`` entered once per turn (module
    docstring, "The checkpointer"); ``input`` maps the run's input to the
    graph's (default: as it is); ``output`` maps the final state's values to
    the turn's output (default: ``last_message_text``); ``ttl`` is the pauses'
    lifetime in seconds (default: ``TOKEN_MAX_AGE``); ``args_schemas`` is the
    argument schema of each approval action, by name, where the interrupt
    gives none; an action it does not name takes its tool's own schema
    (``tool_args_schemas``; ``prompts``' docstring).
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
        # The tools' own schemas, unless the deployment gives one (prompts' docstring).
        self.args_schemas = {**tool_args_schemas(graph), **(args_schemas or {})}

    # -- the protocol --

    async def start_typed(self, context: NewTurn, input: Any,
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
        self, continuation: ResumedTurn, *, prepared_plan: Any = None, event_guard: Any = None,
    ) -> AsyncGenerator[Event, None]:
        async with self._graph_of_turn() as graph:
            config = self._config(continuation.run)
            state = await graph.aget_state(config)
            graph_input: Any = None
            if not _ran_before(state, continuation.run):
                try:
                    resume = await resume_map(graph, config, state, continuation.answers,
                                              self.args_schemas)
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
        yield TurnCompleted(output=jsonable(self.output(state.values)))

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
