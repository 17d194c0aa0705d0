"""The agent's tools: exactly-once tools (``fenced_tool``), and each tool's own validator.

**``fenced_tool``** makes a function a Pydantic AI ``Tool`` whose body runs
through ``recorded.record_once``, keyed by the model's call id
(``RunContext.tool_call_id``): the first call runs inside the run's fence, its
database writes and the recorded result committed together, only while the
worker holds the run's lease; any later call with the same id in the same root
run (a message history resumed twice, a continuation retried after its worker
died) returns the recorded result instead of running again. A call id that
comes back naming another tool or other arguments is refused
(``ToolCallMismatch``), as for every framework (``recorded``'s docstring). The
arguments recorded are the ones the tool runs with: a reviewer's edit included.

**``agent_tools``** finds the tools of the agent's own toolsets
(``Agent.toolsets``: its function tools and every toolset it was given,
wrapped ones included: ``approval_required()``, ``prefixed()``, ``renamed()``,
an MCP server), each with the validator Pydantic AI itself checks its arguments
with. An approval offers ``edit`` only for a tool found there with no custom
``args_validator`` function (one that needs the run's context) and a schema
the review form can check (``may_edit``): the form checks an edit against
that schema, and the continuation checks it again with the tool's validator
(``approvals``) before the answer is handed to Pydantic AI, which would
otherwise skip an invalid ``override_args`` without an error.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any, overload

from asgiref.sync import sync_to_async
from pydantic_ai import RunContext, Tool
from pydantic_ai.models import Model
from pydantic_ai.models.test import TestModel
from pydantic_ai.toolsets import CombinedToolset, ToolsetTool
from pydantic_ai.usage import RunUsage
from pydantic_core import to_jsonable_python

from ... import hitl
from ...exceptions import InteractionConfigurationError
from ..recorded import partial_call, record_once

__all__ = ["agent_tools", "args_schema", "fenced_tool", "may_edit"]

log = logging.getLogger(__name__)

#: The parameter that carries the run's context (and the call id) to the wrapper.
CTX = "ctx"


@overload
def fenced_tool(func: Callable[..., Any], /) -> Tool[Any]: ...


@overload
def fenced_tool(*, name: str | None = None, description: str | None = None,
                requires_approval: bool = False, **options: Any,
                ) -> Callable[[Callable[..., Any]], Tool[Any]]: ...


def fenced_tool(func: Callable[..., Any] | None = None, /, *, name: str | None = None,
                description: str | None = None, requires_approval: bool = False,
                **options: Any) -> Tool[Any] | Callable[[Callable[..., Any]], Tool[Any]]:
    """Make ``func`` a Pydantic AI ``Tool`` whose call runs once per root run and call id.

    Use it as ``@fenced_tool`` or ``@fenced_tool(requires_approval=True, ...)``,
    and hand the tool to the agent (``Agent(tools=[refund])``). ``func`` may take
    a ``RunContext`` first, as any Pydantic AI tool; the arguments the model sees
    are ``func``'s own; ``options`` go to ``Tool`` as they are (``args_validator``,
    ``max_retries``, ...). Its result must be JSON (it is recorded). Sync and async
    functions both work; the body runs on the turn's database thread, inside the
    run's fence (an async one through ``async_to_sync``).
    """

    def build(fn: Callable[..., Any]) -> Tool[Any]:
        tool_name = name or fn.__name__
        params = list(inspect.signature(fn).parameters.values())
        takes_ctx = bool(params) and _is_run_context(fn, params[0])

        async def run(ctx: RunContext[Any], *args: Any, **kwargs: Any) -> Any:
            call_id = ctx.tool_call_id
            if call_id is None:
                raise InteractionConfigurationError(
                    f"fenced tool {tool_name!r} was called without a model's tool call id; it "
                    "must be called by the agent, inside an agent turn")
            given = (ctx, *args) if takes_ctx else args
            return await sync_to_async(record_once)(
                tool_name, call_id, _recorded_args(args, kwargs), partial_call(fn, given, kwargs))

        _with_signature(run, fn, takes_ctx)
        return Tool(run, takes_ctx=True, name=tool_name, description=description,
                    requires_approval=requires_approval, **options)

    return build if func is None else build(func)


def _is_run_context(fn: Callable[..., Any], param: inspect.Parameter) -> bool:
    annotation = param.annotation
    if isinstance(annotation, str):
        return annotation.startswith("RunContext")
    return annotation is RunContext or getattr(annotation, "__origin__", None) is RunContext


def _with_signature(wrapper: Callable[..., Any], fn: Callable[..., Any], takes_ctx: bool) -> None:
    """Give ``wrapper`` ``fn``'s signature, with a ``RunContext`` first if ``fn`` takes none.

    Pydantic AI reads a tool's arguments from its function's signature and type
    hints (resolved in ``fn``'s module, through ``__wrapped__``).
    """
    functools.update_wrapper(wrapper, fn)
    signature = inspect.signature(fn)
    if takes_ctx:
        wrapper.__signature__ = signature  # type: ignore[attr-defined]
        return
    ctx = inspect.Parameter(CTX, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                            annotation=RunContext[Any])
    wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[ctx, *signature.parameters.values()])
    wrapper.__annotations__ = {CTX: RunContext[Any], **getattr(fn, "__annotations__", {})}


def _recorded_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The call's validated arguments as JSON, as recorded (a reviewer's edit included)."""
    given = {"args": list(args), **kwargs} if args else kwargs
    return to_jsonable_python(given, serialize_unknown=True, bytes_mode="base64")


# --- the tools the agent runs, with their validators ---------------------------------------

async def agent_tools(agent: Any, deps: Any = None) -> dict[str, ToolsetTool[Any]]:
    """The tools of ``agent``'s own toolsets, by the name the model calls them by.

    Looked up with a context of no run (the agent's model, ``deps``, no usage),
    as Pydantic AI documents a bare ``RunContext``. A toolset that cannot list
    its tools so (an MCP server that is down, a dynamic toolset that needs a
    run) leaves them all out, logged: no edit is offered for them.
    """
    model = agent.model if isinstance(agent.model, Model) else TestModel()
    context: RunContext[Any] = RunContext(deps=deps, model=model, usage=RunUsage(), agent=agent)
    toolset: CombinedToolset[Any] = CombinedToolset(agent.toolsets)
    try:
        async with toolset:
            return await toolset.get_tools(context)
    except Exception as exc:  # noqa: BLE001 - a toolset that cannot list costs the edit, not the turn
        log.warning("the tools of agent %r could not be listed (%s): no edit is offered for "
                    "its approvals", getattr(agent, "name", None), exc)
        return {}


def args_schema(tool: ToolsetTool[Any] | None) -> dict[str, Any] | None:
    """``tool``'s own argument schema, in the review form's terms (``hitl.plain_schema``), or
    ``None`` when the tool was not found or its schema is not one the app can check (logged)."""
    if tool is None:
        return None
    return hitl.tool_args_schema(dict(tool.tool_def.parameters_json_schema),
                                 tool.tool_def.name, left_out=", and no edit is offered for it")


def may_edit(tool: ToolsetTool[Any] | None) -> bool:
    """Whether an edit of ``tool``'s arguments can be checked before Pydantic AI sees it: the
    tool was found, its schema is one the form checks, and it has no custom
    ``args_validator`` function (which needs the run's context to be called)."""
    return (tool is not None and tool.args_validator_func is None
            and args_schema(tool) is not None)
