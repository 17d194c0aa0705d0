"""The pause a run that ended on ``DeferredToolRequests`` becomes.

A Pydantic AI run stops once per model step: the calls of that step whose
tool requires approval (``requires_approval=True``, ``ApprovalRequired``, an
``approval_required()`` toolset) come back together in the run's
``DeferredToolRequests``. They become **one approval pause**, a ``HITLRequest``
with one action request per call, in the order the model made them:

- the action is the tool's name and the model's arguments; its description is
  the deployment's ``describe(name, args, metadata)``, else the call in words,
  ``refund(order_id=A-1, amount=10)``, its arguments in the tool's order;
- its review config allows ``approve``, ``reject`` and ``respond`` always, and
  ``edit`` where an edit can be checked before Pydantic AI sees it
  (``tools.may_edit``); the tool's own argument schema is its ``args_schema``
  when the tool is found (``tools.args_schema``), so the page has a form;
- the pause's idempotency key is made of the calls' ids (``pause_key``): the turn
  that runs again asks the same pause, and a step that comes back with ids
  already asked is refused.

Refused before anything is stored or asked (``check_requests``): a step whose
calls repeat an id (``ToolCallMismatch``: one id would take two decisions, and
Pydantic AI keys its answers by id), an id the app cannot key a record by
(``recorded.check_call_id``), and deferred calls that are not approvals
(``CallDeferred``, external tools: the app answers approvals only;
``InteractionConfigurationError``).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import DeferredToolRequests
from pydantic_ai.toolsets import ToolsetTool

from ... import hitl
from ...exceptions import InteractionConfigurationError, ToolCallMismatch
from ..recorded import check_call_id
from .tools import args_schema, may_edit

__all__ = ["ALWAYS_ALLOWED", "Describe", "approval_prompt", "call_args", "check_requests",
           "pause_key"]

#: What a reviewer may always decide on a call: ``edit`` joins where it can be checked.
ALWAYS_ALLOWED = ["approve", "reject", "respond"]
#: ``describe(tool name, the model's arguments, the call's ApprovalRequired metadata)``.
Describe = Callable[[str, dict[str, Any], dict[str, Any]], str]
#: Starts every pause key of this adapter.
KEY_PREFIX = "pydantic-ai:"


def check_requests(requests: DeferredToolRequests) -> None:
    """Refuse what one approval pause cannot stand for (module docstring)."""
    if requests.calls:
        names = sorted({call.tool_name for call in requests.calls})
        raise InteractionConfigurationError(
            f"the run deferred calls of {names} that are not approvals (CallDeferred or an "
            "external tool): the app answers approvals only, so the turn cannot pause on them")
    ids = [call.tool_call_id for call in requests.approvals]
    for call_id in ids:
        check_call_id(call_id)
    repeated = sorted(call_id for call_id, count in Counter(ids).items() if count > 1)
    if repeated:
        raise ToolCallMismatch(
            f"the model gave the tool call id(s) {repeated} to several calls of one step: each "
            "call takes its own decision by its id, so the step is refused before it pauses")


def call_args(call: ToolCallPart) -> dict[str, Any]:
    """The arguments the model gave ``call``, as a dict (Pydantic AI keeps a string or a
    dict; a string that is not a JSON object is refused by Pydantic AI before it defers)."""
    return call.args_as_dict()


def pause_key(call_ids: list[str]) -> str:
    """The idempotency key of the pause asking these calls: their ids, hashed to fit."""
    joined = "\x1f".join(call_ids).encode("utf-8", "surrogatepass")
    return KEY_PREFIX + hashlib.sha256(joined).hexdigest()


def approval_prompt(requests: DeferredToolRequests, tools: Mapping[str, ToolsetTool[Any]],
                    describe: Describe | None = None) -> dict[str, Any]:
    """The ``HITLRequest`` of one step's approvals (module docstring)."""
    actions: list[dict[str, Any]] = []
    configs: dict[str, dict[str, Any]] = {}
    for call in requests.approvals:
        args = call_args(call)
        metadata = requests.metadata.get(call.tool_call_id) or {}
        tool = tools.get(call.tool_name)
        description = (describe(call.tool_name, args, metadata) if describe
                       else hitl.call_text(call.tool_name, _in_tool_order(args, tool)))
        actions.append({"name": call.tool_name, "args": args, "description": description})
        if call.tool_name not in configs:
            configs[call.tool_name] = _review_config(call.tool_name, tool)
    return hitl.normalize_prompt({"action_requests": actions,
                                  "review_configs": list(configs.values())})


def _in_tool_order(args: dict[str, Any], tool: ToolsetTool[Any] | None) -> dict[str, Any]:
    """``args`` in the order of the tool's parameters (then any others): the call reads as
    the tool is written, whatever order the model (or a JSON column) gave them in."""
    names = list((tool.tool_def.parameters_json_schema.get("properties") or {}) if tool else [])
    return {**{name: args[name] for name in names if name in args}, **args}


def _review_config(name: str, tool: ToolsetTool[Any] | None) -> dict[str, Any]:
    config: dict[str, Any] = {"action_name": name, "allowed_decisions": (
        ["approve", "edit", "reject", "respond"] if may_edit(tool) else list(ALWAYS_ALLOWED))}
    schema = args_schema(tool)
    if schema is not None:
        config["args_schema"] = schema
    return config
