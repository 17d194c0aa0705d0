"""The Pydantic AI agents the adapter's tests drive, on one scripted model.

The model (``desk``) reads its script from the run's input: ``{"calls": [[tool, args,
id], ...]}`` are the calls of its first step, ``"then"`` (optional) those of a second
one; once they are answered it says what each call came back with. ``MODEL_CALLS`` counts its replies, ``BODY_RUNS`` each tool body's
runs by call id.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from pydantic import AfterValidator, Field
from pydantic_ai import Agent, RunContext
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.tools import DeferredToolRequests
from pydantic_ai.toolsets import FunctionToolset

from symfonic_django.agents.pydantic_ai import fenced_tool, pydantic_ai_agent
from symfonic_django.turns import current_turn
from tests.testapp.models import Refund

MODEL_CALLS: list[int] = []
BODY_RUNS: dict[str, int] = {}
#: Whether the model fails its next reply (a model that is down once).
DOWN: list[bool] = []
#: The verdicts ``known_refund``'s validator gives next (then: valid), beyond its own rule.
VERDICTS: list[bool] = []

Amount = Annotated[float, Field(gt=0, le=10000, multiple_of=0.01)]


def reset() -> None:
    MODEL_CALLS.clear()
    BODY_RUNS.clear()
    DOWN.clear()
    VERDICTS.clear()


def reply(messages: list[ModelMessage], info: AgentInfo | None = None) -> ModelResponse:
    MODEL_CALLS.append(len(messages))
    if DOWN:
        DOWN.clear()
        raise RuntimeError("the model is unavailable")
    last = messages[-1]
    returned = [p for p in last.parts if p.part_kind == "tool-return"] if isinstance(
        last, ModelRequest) else []
    later = _script(messages).get("then")
    steps = sum(1 for m in messages if isinstance(m, ModelResponse) and m.tool_calls)
    if returned and later and steps == 1:  # a second step, scripted by the input's "then"
        return ModelResponse(parts=[TextPart("More."), *(
            ToolCallPart(name, args, tool_call_id=call_id) for name, args, call_id in later)])
    if returned:
        said = "; ".join(f"{p.tool_call_id}={json.dumps(p.content, default=str)}"
                         for p in returned)
        return ModelResponse(parts=[TextPart(f"done: {said}")])
    script = json.loads(next(p.content for p in last.parts if p.part_kind == "user-prompt"))
    return ModelResponse(parts=[TextPart("Asking."), *(
        ToolCallPart(name, args, tool_call_id=call_id) for name, args, call_id in script["calls"])])


async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[
        str | DeltaToolCalls]:
    for index, part in enumerate(reply(messages, info).parts):
        if isinstance(part, TextPart):
            yield part.content
        elif isinstance(part, ToolCallPart):
            yield {index: DeltaToolCall(name=part.tool_name, json_args=json.dumps(part.args),
                                        tool_call_id=part.tool_call_id)}


def _script(messages: list[ModelMessage]) -> dict[str, Any]:
    """The run's input: the first user prompt of the conversation, as JSON."""
    first = next(p.content for m in messages if isinstance(m, ModelRequest)
                 for p in m.parts if p.part_kind == "user-prompt")
    return dict(json.loads(first))


desk = FunctionModel(reply, stream_function=stream, model_name="desk")


def _refund(order_id: str, amount: float) -> dict[str, Any]:
    call = f"{order_id}:{amount}"
    BODY_RUNS[call] = BODY_RUNS.get(call, 0) + 1
    row = Refund.objects.create(order_id=order_id, amount=amount,
                                run_id=current_turn().root_run_id)
    return {"refund_id": row.pk, "order_id": order_id}


@fenced_tool(requires_approval=True)
def refund(order_id: str, amount: Amount) -> dict[str, Any]:
    """Refund an order."""
    return _refund(order_id, amount)


# A fenced tool inside wrapped toolsets: prefixed ("shop_refund"), every tool needing approval.
def _shop_refund(order_id: str, amount: Amount) -> dict[str, Any]:
    """Refund an order from the shop's toolset."""
    return _refund(order_id, amount)


shop = FunctionToolset([fenced_tool(name="refund")(_shop_refund)]).prefixed("shop")


def _not_on_sunday(ctx: RunContext[Any], order_id: str, amount: float) -> None:
    if order_id.startswith("SUN"):
        raise ModelRetry("no refunds on Sunday")


def _checked_refund(order_id: str, amount: float) -> dict[str, Any]:
    """Refund an order, checked by a custom validator."""
    return _refund(order_id, amount)


checked = FunctionToolset([fenced_tool(name="checked_refund", requires_approval=True,
                                      args_validator=_not_on_sunday)(_checked_refund)])


def _known_order(order_id: str) -> str:
    """A rule the tool's JSON schema cannot say: orders "X-..." are unknown."""
    if order_id.startswith("X-"):
        raise ValueError("unknown order")
    if VERDICTS and not VERDICTS.pop(0):
        raise ValueError("the order was closed meanwhile")
    return order_id


@fenced_tool(requires_approval=True)
def known_refund(order_id: Annotated[str, AfterValidator(_known_order)],
                 amount: Amount) -> dict[str, Any]:
    """Refund a known order."""
    return _refund(order_id, amount)


@fenced_tool
def lookup(order_id: str) -> str:
    """Look an order up elsewhere."""
    raise CallDeferred()


@fenced_tool
def guarded(ctx: RunContext[Any], order_id: str, amount: Amount) -> dict[str, Any]:
    """Refund, asking for approval itself above 100."""
    if amount > 100 and not ctx.tool_call_approved:
        raise ApprovalRequired(metadata={"reason": "over 100"})
    return _refund(order_id, amount)


def _agent(**kwargs: Any) -> Agent[Any, Any]:
    return Agent(desk, output_type=[str, DeferredToolRequests], **kwargs)


def describe(name: str, args: dict[str, Any], metadata: dict[str, Any]) -> str:
    return f"{name} {args} {metadata.get('reason', '')}".strip()


pyd_refunds = pydantic_ai_agent(_agent(tools=[refund, known_refund, lookup, guarded]), describe=describe)
pyd_wrapped = pydantic_ai_agent(_agent(toolsets=[shop.approval_required(), checked]))

AGENTS = {"pyd_refunds": "tests.pydantic_ai.agents.pyd_refunds",
          "pyd_wrapped": "tests.pydantic_ai.agents.pyd_wrapped"}


def calls(*items: tuple[str, dict[str, Any], str]) -> dict[str, Any]:
    """A run's input: the model's first step."""
    return {"calls": [list(item) for item in items]}
