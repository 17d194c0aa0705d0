"""Exactly-once tools for OpenAI Agents SDK agents: ``fenced_function_tool``.

The SDK runs the approved tools of whatever ``RunState`` it is handed, as often
as it is handed it (two states restored from one string run the refund twice),
and a continuation retried after its worker died resumes its state again.
``fenced_function_tool`` is ``function_tool`` whose call is recorded once per
root run and the model's call id (``agents.recorded.record_once``)::

    @fenced_function_tool(needs_approval=True)
    def refund(order_id: str, amount: float) -> dict:
        \"\"\"Refund an order.\"\"\"
        Refund.objects.create(order_id=order_id, amount=amount)
        return {"order_id": order_id, "refunded": amount}

- The first call runs the function inside the run's fence: its database writes
  and the ``ToolResult`` row commit together, only while this worker holds the
  run's lease. A function that raises commits nothing; the SDK then hands the
  model its error, as it does for any tool (``failure_error_function``), except
  the app's own refusals and faults (``SymfonicError``, ``LeaseLost``: a call id
  reused for another call, a lost lease, a result that is not JSON), which end
  the turn instead of being shown to the model as a tool error it may retry.
- A later call with the same call id in the same root run returns the recorded
  result without calling the function. One that comes with another tool's name
  or other arguments is refused (``ToolCallMismatch``), never answered with the
  first call's result.
- The result must be JSON. The model reads it as JSON text (the SDK would
  otherwise hand it Python's ``str()`` of a dict); a string is passed as it is.

The arguments recorded are the model's own (``ToolContext.tool_arguments``), so
a call is the same call whatever defaults the function fills in. Every other
keyword goes to ``function_tool`` as it is (``needs_approval``, ``name_override``,
``description_override``, ``strict_mode``, ...). The function must not take the
SDK's context itself: the wrapper takes it, for the call id (it may read the turn
with ``symfonic_django.turns.current_turn()``).
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable
from typing import Any, overload

from agents import FunctionTool, RunContextWrapper, default_tool_error_function, function_tool
from agents.tool import ToolErrorFunction
from agents.tool_context import ToolContext
from asgiref.sync import sync_to_async

from ...exceptions import InteractionConfigurationError, SymfonicError
from ...turns import LeaseLost
from ..recorded import partial_call, record_once

__all__ = ["fenced_function_tool"]

#: The wrapper's first parameter: the SDK hands it the call's ``ToolContext``.
CONTEXT = "tool_context"


@overload
def fenced_function_tool(func: Callable[..., Any], /) -> FunctionTool: ...


@overload
def fenced_function_tool(**options: Any) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def fenced_function_tool(func: Callable[..., Any] | None = None, /, **options: Any,
                         ) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """``function_tool`` whose call runs once per root run and call id (module docstring).

    Use it as ``@fenced_function_tool`` or ``@fenced_function_tool(needs_approval=True,
    ...)``; ``options`` are ``function_tool``'s.
    """
    def build(fn: Callable[..., Any]) -> FunctionTool:
        name = options.get("name_override") or fn.__name__
        _refuse_own_context(fn, name)

        async def call(tool_context: ToolContext[Any], *args: Any, **kwargs: Any) -> Any:
            result = await sync_to_async(record_once)(
                name, tool_context.tool_call_id, _model_args(tool_context),
                partial_call(fn, args, kwargs))
            return result if isinstance(result, str) else json.dumps(result)

        _with_context_parameter(call, fn)
        given = options.get("failure_error_function", default_tool_error_function)
        return function_tool(call, **{**options, "failure_error_function": _app_errors_raised(
            given)})

    return build if func is None else build(func)


def _app_errors_raised(given: ToolErrorFunction | None) -> ToolErrorFunction:
    """``given`` (the SDK's default, the deployment's, or ``None``: raise everything), but the
    app's refusals and faults raised: they end the turn (module docstring)."""

    def handle(context: RunContextWrapper[Any], error: Exception) -> Any:
        if given is None or isinstance(error, (SymfonicError, LeaseLost)):
            raise error
        return given(context, error)

    return handle


def _model_args(context: ToolContext[Any]) -> Any:
    """The call's arguments as the model wrote them (its JSON), what the record is keyed by."""
    try:
        return json.loads(context.tool_arguments or "{}")
    except ValueError:
        return context.tool_arguments


def _refuse_own_context(fn: Callable[..., Any], name: str) -> None:
    """A function whose first parameter is the SDK's context would get it twice: refused."""
    params = list(inspect.signature(fn).parameters.values())
    first = params[0].annotation if params else inspect.Parameter.empty
    text = first if isinstance(first, str) else getattr(first, "__name__", "")
    if CONTEXT in (p.name for p in params) or any(
            kind in str(text) for kind in (RunContextWrapper.__name__, ToolContext.__name__)):
        raise InteractionConfigurationError(
            f"fenced tool {name!r} takes the SDK's context (or a {CONTEXT!r} argument) itself; "
            "fenced_function_tool takes it for the call id: read the turn with current_turn()")


def _with_context_parameter(wrapper: Callable[..., Any], fn: Callable[..., Any]) -> None:
    """Give ``wrapper`` ``fn``'s name, docstring and parameters, after a ``ToolContext`` one.

    The SDK reads a tool's schema from its function's signature and type hints, and
    hands a first parameter typed ``ToolContext`` the call's context (its documented
    way for a tool to know its call id); the model never sees that parameter.
    """
    functools.update_wrapper(wrapper, fn)
    signature = inspect.signature(fn)
    context = inspect.Parameter(CONTEXT, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                annotation=ToolContext)
    wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[context, *signature.parameters.values()])
    wrapper.__annotations__ = {CONTEXT: ToolContext, **getattr(fn, "__annotations__", {})}
