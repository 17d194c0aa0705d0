"""The pause a model step's approval items become, and the key it is asked under.

A model step whose tool calls need approval leaves the run with one
``ToolApprovalItem`` per call (``result.interruptions``). They become **one**
approval pause, a ``HITLRequest`` with one action request per item, in the
SDK's order:

- ``name`` is the tool's name, ``args`` the model's arguments (its JSON, parsed;
  arguments that are not a JSON object are shown as ``{"arguments": <text>}`` and
  then fail the tool's schema: the turn ends ``invalid_proposal``, nothing paused);
- ``description`` is ``describe(name, args)`` (default: the call in words,
  ``refund(order_id=A-1, amount=10)``);
- the review config's ``args_schema`` is the tool's own JSON schema
  (``FunctionTool.params_json_schema``, written by ``hitl.plain_schema``), or the
  agent's ``args_schemas[name]`` when given; a tool with neither (a hosted or MCP
  tool) gets none;
- ``allowed_decisions`` are ``approve``, ``reject`` and ``respond``, never ``edit``:
  the SDK has no way to run an approved call with other arguments. An approval is
  bound to the call's fingerprint (its name and arguments), and a call changed
  after it was proposed is not the call that was approved, so an edit could only
  be dropped or run unapproved. A reviewer who wants other arguments rejects
  with a message saying so, and the model proposes again.

The pause's idempotency key is the step's call ids (``pause_key``): a turn that
runs again gets its pause back, and the continuation finds which state it
answers. The call ids are checked first (``check_call_ids``): one the app cannot
record by, or two items with one call id (the SDK would apply one decision to
both), fail the turn with ``tool_call_mismatch`` before anything is stored.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agents import FunctionTool, ToolApprovalItem

from ... import hitl
from ...exceptions import ToolCallMismatch
from ..recorded import check_call_id

__all__ = ["ALLOWED_DECISIONS", "Describe", "approval_prompt", "call_args", "check_call_ids",
           "pause_key", "tool_args_schema"]


#: What a reviewer may decide on each call: no ``edit`` (module docstring).
ALLOWED_DECISIONS = ["approve", "reject", "respond"]

#: ``describe(tool name, args) -> str``: what a reviewer reads about one call.
Describe = Callable[[str, dict[str, Any]], str]


def call_args(item: ToolApprovalItem) -> dict[str, Any]:
    """The model's arguments of the call ``item`` asks about, as an object."""
    text = item.arguments
    try:
        parsed = json.loads(text) if text else {}
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"arguments": text}


def check_call_ids(items: Sequence[ToolApprovalItem]) -> list[str]:
    """The items' call ids, or ``ToolCallMismatch`` when one is unusable or repeated."""
    for item in items:
        check_call_id(item.call_id)
    ids = [str(item.call_id) for item in items]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ToolCallMismatch(
            f"the model gave the call id(s) {repeated} to more than one call of one step; the "
            "SDK would apply one decision to all of them, so the step is refused before any "
            "pause is asked")
    return ids


def pause_key(call_ids: Sequence[str]) -> str:
    """The idempotency key of the pause asking about these calls (their ids, in order)."""
    digest = hashlib.sha256("\n".join(call_ids).encode("utf-8", "surrogatepass")).hexdigest()
    return f"openai-agents:{digest}"


def approval_prompt(items: Sequence[ToolApprovalItem], describe: Describe | None = None,
                    args_schemas: Mapping[str, dict[str, Any]] | None = None,
                    ) -> dict[str, Any]:
    """The ``HITLRequest`` of one step's approval items (module docstring)."""
    requests, configs, named = [], [], set()
    for item in items:
        name, args = str(item.tool_name or item.name or ""), call_args(item)
        requests.append({"name": name, "args": args,
                         "description": (describe or hitl.call_text)(name, args)})
        if name in named:
            continue
        named.add(name)
        config: dict[str, Any] = {"action_name": name, "allowed_decisions": ALLOWED_DECISIONS}
        schema = (args_schemas or {}).get(name) or tool_args_schema(item)
        if schema is not None:
            config["args_schema"] = schema
        configs.append(config)
    return hitl.normalize_prompt({"action_requests": requests, "review_configs": configs})


def tool_args_schema(item: ToolApprovalItem) -> dict[str, Any] | None:
    """The JSON schema of the function tool ``item`` asks about, from its agent's tools, as
    the review form reads it; ``None`` for a tool that is not a function tool of that agent,
    or whose schema is not valid JSON Schema (logged)."""
    agent = item.agent
    tools = getattr(agent, "tools", None) or []
    tool = next((t for t in tools if isinstance(t, FunctionTool) and t.name == item.tool_name),
                None)
    if tool is None:
        return None
    return hitl.tool_args_schema(dict(tool.params_json_schema), tool.name, left_out="")
