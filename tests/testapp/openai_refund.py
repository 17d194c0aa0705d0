"""The tests' copy of the example's ``refund_openai`` (``example_project/openai_refund.py``,
whose docstring says what it does), on ``tests.testapp.models.Refund``."""

from __future__ import annotations

import json
from typing import Annotated, Any

from agents import Agent, set_tracing_disabled
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from pydantic import Field

from symfonic_django.agents.openai_agents import fenced_function_tool, openai_agent
from symfonic_django.turns import current_turn
from tests.testapp.agents import REFUND_ARGS_SCHEMA, describe_refund, record_refund

set_tracing_disabled(True)

REFUND_OPENAI_INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "refunds": {"type": "array", "items": REFUND_ARGS_SCHEMA, "minItems": 1, "maxItems": 5},
    },
    "required": ["refunds"],
    "additionalProperties": False,
}
STEPS = 2


@fenced_function_tool(needs_approval=True)
def refund(order_id: Annotated[str, Field(min_length=1, max_length=100)],
           amount: Annotated[float, Field(gt=0, le=10000, multiple_of=0.01)]) -> dict[str, Any]:
    """Refund ``amount`` on order ``order_id``."""
    return record_refund(order_id, amount, current_turn().root_run_id)


def desk_reply(call: ModelCall) -> list[Any]:
    items = call.input if isinstance(call.input, list) else [
        {"role": "user", "content": call.input}]
    answered = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
    if answered:
        return [assistant_message(f"{len(answered)} refund(s) reviewed: the approved ones are "
                                  "done, the others were not made.", item_id="desk-confirm")]
    request = next(i["content"] for i in reversed(items)
                   if isinstance(i, dict) and i.get("role") == "user")
    calls = [function_call("refund", args, call_id=f"refund-call-{number}")
             for number, args in enumerate(json.loads(request)["refunds"], 1)]
    return [assistant_message(f"I will refund {len(calls)} order(s) once a person approves.",
                              item_id="desk-plan"), *calls]


def desk(scope: Any) -> Agent[Any]:
    model = ScriptedModel([ModelStep.respond(desk_reply) for _ in range(STEPS)])
    return Agent(name="refund_desk", instructions="Refund what the customer asks, once "
                 "approved.", model=model, tools=[refund])


refund_openai = openai_agent(desk, input_schema=REFUND_OPENAI_INPUT_SCHEMA,
                             describe=lambda name, args: describe_refund(args))
