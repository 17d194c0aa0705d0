"""SDK agents the adapter tests register: each on the SDK's ``ScriptedModel``, offline.

``MODEL_CALLS`` counts the model's answers by agent; ``BODY_RUNS`` how often a fenced
tool's body ran, by order id.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from agents import Agent, function_tool, set_tracing_disabled
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from symfonic_django.agents.openai_agents import fenced_function_tool, openai_agent
from symfonic_django.turns import current_turn
from tests.testapp.models import Refund
from tests.testapp.openai_refund import desk_reply

set_tracing_disabled(True)

MODEL_CALLS: Counter[str] = Counter()
BODY_RUNS: Counter[str] = Counter()
#: Agents whose model fails its next answer (once each): a crash mid-turn.
FAIL_NEXT: set[str] = set()
#: Order ids whose refund body writes its row, then raises (once each).
RAISE_AFTER_WRITE: set[str] = set()
#: Every SDK ``Agent`` object the factories made, in order (one per turn).
BUILT: list[Agent[Any]] = []


@fenced_function_tool(needs_approval=True)
def refund(order_id: str, amount: float) -> dict[str, Any]:
    """Refund an order."""
    BODY_RUNS[order_id] += 1
    Refund.objects.create(order_id=order_id, amount=amount, run_id=current_turn().root_run_id)
    if order_id in RAISE_AFTER_WRITE:
        RAISE_AFTER_WRITE.discard(order_id)
        raise RuntimeError("the payment provider timed out")
    return {"refunded": order_id}


@function_tool
def lookup(order_id: str) -> str:
    """Look an order up (no approval)."""
    return f"order {order_id} is paid"


def scripted(name: str, reply: Callable[[ModelCall], list[Any]],
             tools: list[Any] | None = None) -> Callable[[Any], Agent[Any]]:
    """A factory of ``name``'s agent on a fresh scripted model, each answer counted."""
    def counted(call: ModelCall) -> list[Any]:
        MODEL_CALLS[name] += 1
        if name in FAIL_NEXT:
            FAIL_NEXT.discard(name)
            raise RuntimeError("the model is unavailable")
        return reply(call)

    def build(scope: Any) -> Agent[Any]:
        steps = [ModelStep.respond(counted) for _ in range(4)]
        BUILT.append(Agent(name=name, model=ScriptedModel(steps), tools=tools or [refund, lookup]))
        return BUILT[-1]

    return build


def _outputs(call: ModelCall) -> int:
    items = call.input if isinstance(call.input, list) else []
    return sum(1 for i in items if isinstance(i, dict) and i.get("type") == "function_call_output")


def same_id_twice(call: ModelCall) -> list[Any]:
    """Two calls of one step under one call id."""
    if _outputs(call):
        return [assistant_message("done")]
    return [function_call("refund", {"order_id": "A", "amount": 1}, call_id="dup"),
            function_call("refund", {"order_id": "B", "amount": 2}, call_id="dup")]


def asks_twice(call: ModelCall) -> list[Any]:
    """A refund, then, once answered, another refund under the first one's call id."""
    if _outputs(call) == 1:
        return [function_call("refund", {"order_id": "B", "amount": 2}, call_id="reused")]
    if _outputs(call) > 1:
        return [assistant_message("done")]
    return [function_call("refund", {"order_id": "A", "amount": 1}, call_id="reused")]


def two_steps(call: ModelCall) -> list[Any]:
    """A refund, then (once answered) a second refund under a new call id: two pauses."""
    if _outputs(call) == 1:
        return [function_call("refund", {"order_id": "B", "amount": 2}, call_id="second")]
    if _outputs(call) > 1:
        return [assistant_message("both reviewed")]
    return [function_call("refund", {"order_id": "A", "amount": 1}, call_id="first")]


def with_lookup(call: ModelCall) -> list[Any]:
    """A call that needs no approval beside one that does, in one step."""
    if _outputs(call) > 1:
        return [assistant_message("done")]
    return [function_call("lookup", {"order_id": "A"}, call_id="look"),
            function_call("refund", {"order_id": "A", "amount": 1}, call_id="pay")]


AGENTS = {name: f"tests.openai_agents.agents.{name}" for name in (
    "oai_desk", "oai_same_id_twice", "oai_asks_twice", "oai_two_steps", "oai_with_lookup")}

oai_desk = openai_agent(scripted("oai_desk", desk_reply))
oai_same_id_twice = openai_agent(scripted("oai_same_id_twice", same_id_twice))
oai_asks_twice = openai_agent(scripted("oai_asks_twice", asks_twice))
oai_two_steps = openai_agent(scripted("oai_two_steps", two_steps))
oai_with_lookup = openai_agent(scripted("oai_with_lookup", with_lookup))
