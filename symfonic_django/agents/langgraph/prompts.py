"""The prompt: the pause each interrupt a graph is left with becomes.

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
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.tools import BaseTool
from langgraph.prebuilt import ToolNode
from langgraph.pregel import Pregel
from langgraph.types import Interrupt
from pydantic import BaseModel

from ... import hitl
from ...jsontext import jsonable
from ...models import PauseKind

__all__ = ["DEFAULT_DESCRIPTION_PREFIX", "PauseRequest", "pause_request", "tool_args_schema",
           "tool_args_schemas"]

log = logging.getLogger(__name__)

#: How ``HumanInTheLoopMiddleware`` starts the description of a tool call whose config
#: gives none (its ``description_prefix``'s default); the rest is
#: ``"\n\nTool: <name>\nArgs: <the args dict>"``. Pinned by a test against the middleware.
DEFAULT_DESCRIPTION_PREFIX = "Tool execution requires approval"


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
    """The pause an interrupt becomes (module docstring).

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
        return PauseRequest(PauseKind.QUESTION, jsonable(value), answer_schema=schema)
    return PauseRequest(PauseKind.APPROVAL, _with_args_schemas(prompt, args_schemas), shape=shape)


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
    resolve = _resolver(defs)
    allowed: list[str] = []
    args_schema: dict[str, Any] | None = None
    for branch in map(resolve, schema.get("oneOf") or schema.get("anyOf") or [schema]):
        kind = _decision_type(branch)
        if kind not in hitl.DECISION_TYPES or kind in allowed:
            continue
        allowed.append(kind)
        if kind == "edit":
            args_schema = _edited_args_schema(branch, resolve, defs)
    return allowed, args_schema


def _resolver(defs: dict[str, Any]) -> Callable[[Any], dict[str, Any]]:
    """A node of the schema, or the definition its ``$ref`` names (``{}`` for anything else)."""

    def resolve(node: Any) -> dict[str, Any]:
        ref = node.get("$ref", "") if isinstance(node, dict) else ""
        if ref.startswith("#/$defs/"):
            found = defs.get(ref.removeprefix("#/$defs/"))
            return found if isinstance(found, dict) else {}
        return node if isinstance(node, dict) else {}

    return resolve


def _decision_type(branch: dict[str, Any]) -> Any:
    """The decision type one branch of the union is (its ``type``'s ``const`` or first enum)."""
    kind_schema = (branch.get("properties") or {}).get("type") or {}
    return kind_schema.get("const") or next(iter(kind_schema.get("enum") or []), None)


def _edited_args_schema(branch: dict[str, Any], resolve: Callable[[Any], dict[str, Any]],
                        defs: dict[str, Any]) -> dict[str, Any] | None:
    """The args schema of the ``edit`` branch's ``edited_action``, or ``None`` if it has none."""
    action = resolve((branch.get("properties") or {}).get("edited_action"))
    args = resolve((action.get("properties") or {}).get("args"))
    if not args:
        return None
    # The definitions go along only when the tool's schema refers to them; plain_schema
    # then writes them in place where it can.
    refers = "#/$defs/" in json.dumps(args)
    return hitl.plain_schema({**args, "$defs": defs} if refers else dict(args))


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
    return hitl.tool_args_schema(schema, tool.name, left_out=": nothing checks its edits")


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

