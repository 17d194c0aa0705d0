"""The tests' ``refund_pydantic``: the example's agent (``example_project.pydantic_agent``:
its scripted model, input schema and wording), its refunds recorded as
``tests.testapp.models.Refund`` rows."""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent
from pydantic_ai.tools import DeferredToolRequests

from example_project.pydantic_agent import (
    REFUND_PYDANTIC_INPUT_SCHEMA,
    Amount,
    OrderId,
    describe,
    refund_desk,
)
from symfonic_django.agents.pydantic_ai import fenced_tool, pydantic_ai_agent
from symfonic_django.turns import current_turn
from tests.testapp.agents import record_refund


@fenced_tool(requires_approval=True)
def refund(order_id: OrderId, amount: Amount) -> dict[str, Any]:
    """Refund ``amount`` on order ``order_id``."""
    return record_refund(order_id, amount, current_turn().root_run_id)


refund_pydantic = pydantic_ai_agent(
    Agent(refund_desk, tools=[refund], output_type=[str, DeferredToolRequests]),
    describe=describe, input_schema=REFUND_PYDANTIC_INPUT_SCHEMA)
