"""The tests' ``refund_openai``: the example's agent (``example_project.openai_refund``: its
scripted model, input schema and wording), its refunds recorded as
``tests.testapp.models.Refund`` rows."""

from __future__ import annotations

from typing import Annotated, Any

from agents import Agent
from agents.testing import ModelStep, ScriptedModel
from pydantic import Field

from example_project.openai_refund import REFUND_OPENAI_INPUT_SCHEMA, STEPS, desk_reply
from symfonic_django.agents.openai_agents import fenced_function_tool, openai_agent
from symfonic_django.turns import current_turn
from tests.testapp.agents import describe_refund, record_refund


@fenced_function_tool(needs_approval=True)
def refund(order_id: Annotated[str, Field(min_length=1, max_length=100)],
           amount: Annotated[float, Field(gt=0, le=10000, multiple_of=0.01)]) -> dict[str, Any]:
    """Refund ``amount`` on order ``order_id``."""
    return record_refund(order_id, amount, current_turn().root_run_id)


def desk(scope: Any) -> Agent[Any]:
    model = ScriptedModel([ModelStep.respond(desk_reply) for _ in range(STEPS)])
    return Agent(name="refund_desk", instructions="Refund what the customer asks, once "
                 "approved.", model=model, tools=[refund])


refund_openai = openai_agent(desk, input_schema=REFUND_OPENAI_INPUT_SCHEMA,
                             describe=lambda name, args: describe_refund(args))
