"""Exactly-once tools for LangGraph agents: ``fenced_tool``.

LangGraph runs a node again from its top when the node is resumed, and a
``ToolNode`` runs all the tool calls of a message in one task: a tool whose
node runs again runs its side effect again (twice the refund, twice the mail).
``fenced_tool`` turns a function into a LangChain tool whose call is recorded
once per root run and ``tool_call_id``::

    @fenced_tool
    def refund(order_id: str, amount: float) -> dict:
        \"\"\"Refund an order.\"\"\"
        Refund.objects.create(order_id=order_id, amount=amount)
        return {"order_id": order_id, "refunded": amount}

- The first call runs the function inside the run's fence (``turns.fenced()``):
  one transaction that commits the function's database writes and the tool's
  ``ToolResult`` row together, only while this worker still holds the run's
  lease (checked right before the commit). A worker that lost its lease
  commits nothing: ``LeaseLost``.
- Any later call with the same ``tool_call_id`` in the same root run (the node
  re-executed, the continuation retried) returns the recorded result without
  calling the function; one that comes with another tool's name or other
  arguments is refused (``ToolCallMismatch``, ``recorded``'s docstring). The result must be JSON; the tool returns it as stored,
  the first time too, so the model sees one value whichever run it comes from.
- ``interrupt()`` may be called in the function, before its effect. The
  interrupts it asked are recorded, and a replay consumes their answers again,
  in order: LangGraph matches answers to the ``interrupt()`` calls of a task by
  position, so a replayed tool that skipped its question would hand its answer
  to the next question of the task (another tool of the same ``ToolNode``).

Sync and async functions both work. Called from an async graph (the adapter
streams graphs with ``astream``), the call runs on the turn's database thread,
as every database call of the turn does (``sync_to_async``): the function's
writes and the fence are on the turn's connection, and the fenced calls of one
task run one after the other, in the order they were made. An async function
runs inside the fence through ``async_to_sync`` on that thread, so its
``sync_to_async`` database calls come back to it, inside the transaction.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any, overload

from asgiref.sync import sync_to_async
from langchain_core.tools import InjectedToolCallId, StructuredTool
from langgraph.errors import GraphInterrupt
from langgraph.types import interrupt

from ..exceptions import InteractionConfigurationError
from ..models import ToolResult
from ..turns import TurnContext, current_turn, fenced
from .recorded import completed_call, partial_call, root_run_of, run_and_record

__all__ = ["fenced_tool"]

#: The injected argument that carries the model's tool call id to the wrapper.
CALL_ID = "tool_call_id"


@overload
def fenced_tool(func: Callable[..., Any], /) -> StructuredTool: ...


@overload
def fenced_tool(*, name: str | None = None, description: str | None = None,
                ) -> Callable[[Callable[..., Any]], StructuredTool]: ...


def fenced_tool(func: Callable[..., Any] | None = None, /, *, name: str | None = None,
                description: str | None = None,
                ) -> StructuredTool | Callable[[Callable[..., Any]], StructuredTool]:
    """Make ``func`` a LangChain tool whose call runs once per root run and tool call id.

    Use it as ``@fenced_tool`` or ``@fenced_tool(name=..., description=...)``;
    the name defaults to the function's, the description to its docstring, and
    the arguments the model sees are the function's own. The tool must be
    called with a model's tool call (``ToolNode`` and ``create_agent`` do),
    inside an agent turn.
    """
    def build(fn: Callable[..., Any]) -> StructuredTool:
        tool_name = name or fn.__name__
        if CALL_ID in inspect.signature(fn).parameters:
            raise InteractionConfigurationError(
                f"fenced tool {tool_name!r} declares {CALL_ID!r} itself; fenced_tool injects it")

        def run(*args: Any, tool_call_id: str, **kwargs: Any) -> Any:
            return record_once(tool_name, tool_call_id, _call_args(args, kwargs),
                               partial_call(fn, args, kwargs))

        async def arun(*args: Any, tool_call_id: str, **kwargs: Any) -> Any:
            return await sync_to_async(record_once)(tool_name, tool_call_id,
                                                    _call_args(args, kwargs),
                                                    partial_call(fn, args, kwargs))

        for wrapper in (run, arun):
            _inject_call_id(wrapper, fn)
        return StructuredTool.from_function(
            func=run, coroutine=arun, name=tool_name,
            description=description or inspect.getdoc(fn) or tool_name)

    return build if func is None else build(func)


def _inject_call_id(wrapper: Callable[..., Any], fn: Callable[..., Any]) -> None:
    """Give ``wrapper`` ``fn``'s signature plus the injected ``tool_call_id``.

    ``InjectedToolCallId`` is LangChain's documented way for a tool to receive
    its call's id; the model never sees the argument.
    """
    functools.update_wrapper(wrapper, fn)
    signature = inspect.signature(fn)
    params = list(signature.parameters.values())
    injected = inspect.Parameter(CALL_ID, inspect.Parameter.KEYWORD_ONLY,
                                 annotation=Annotated[str, InjectedToolCallId])
    at = next((i for i, p in enumerate(params) if p.kind == p.VAR_KEYWORD), len(params))
    wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*params[:at], injected, *params[at:]])
    wrapper.__annotations__ = {**getattr(fn, "__annotations__", {}),
                               CALL_ID: Annotated[str, InjectedToolCallId]}


def record_once(name: str, tool_call_id: str, call_args: Any, call: Callable[[], Any]) -> Any:
    """``recorded.record_once`` with LangGraph's interrupts: a replay consumes the answers of
    the interrupts the call asked, and an interrupt from the call records which it asked.

    Sync; call it on the turn's database thread. ``GraphInterrupt`` from the
    call (the tool asked a person) leaves no effect.
    """
    recorded = completed_call(name, tool_call_id, call_args)
    if recorded is not None:
        _consume_answers(recorded)
        return recorded.result
    try:
        return run_and_record(name, tool_call_id, call_args, call)
    except GraphInterrupt as asked:
        _record_asked(current_turn(), name, tool_call_id, asked)
        raise


def _call_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The call's arguments as recorded: the model's keyword arguments (LangChain passes
    them so), with any positional ones first."""
    return {"args": list(args), **kwargs} if args else kwargs


def _consume_answers(recorded: ToolResult) -> None:
    """Ask the recorded tool's interrupts again: LangGraph hands back their stored answers."""
    try:
        for _ in recorded.interrupt_ids:
            interrupt(None)
    except GraphInterrupt:
        raise InteractionConfigurationError(
            f"tool call {recorded.tool_call_id!r} of {recorded.name!r} was completed in another "
            "task of this run, where it asked questions this task has no answers to; a model's "
            "tool call ids must be unique within a run") from None


def _record_asked(turn: TurnContext, name: str, tool_call_id: str, asked: GraphInterrupt) -> None:
    ids = [getattr(item, "id", "") for item in (asked.args[0] if asked.args else ())]
    with fenced():
        record, _ = ToolResult.objects.select_for_update().get_or_create(
            root_run_id=root_run_of(turn), tool_call_id=tool_call_id, defaults={"name": name})
        new = [i for i in ids if i and i not in record.interrupt_ids]
        if new:
            record.interrupt_ids = [*record.interrupt_ids, *new]
            record.save(update_fields=["interrupt_ids"])
