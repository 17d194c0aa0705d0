"""Fixtures of the Pydantic AI adapter's tests: the test agents registered, and readers of
what a turn leaves behind (its pauses, its events, the stored state, the rows)."""

from __future__ import annotations

from typing import Any

import pytest

from symfonic_django.models import AgentState, Pause, Run, ToolResult
from tests.testapp.models import Refund

from ..turn_drivers import continue_run, events_of, pauses_of, run_turn, types_of  # noqa: F401
from . import agents


@pytest.fixture(autouse=True)
def pydantic_ai_agents(settings: Any, tenants: Any) -> None:
    settings.SYMFONIC = {**settings.SYMFONIC,
                         "AGENTS": {**settings.SYMFONIC["AGENTS"], **agents.AGENTS}}
    agents.reset()












def refunds() -> list[tuple[str, Any]]:
    return sorted(Refund.objects.values_list("order_id", "amount"))


def rows() -> dict[str, list[Any]]:
    """Every row a refusal must leave as it was: "the rows unchanged" compares these."""
    return {
        "runs": sorted(Run.objects.values_list("pk", "status", "error"), key=str),
        "pauses": sorted(Pause.objects.values_list("pk", "status", "answer"), key=str),
        "states": sorted(AgentState.objects.values_list("run_id", "state", "consumed_by_id"),
                         key=str),
        "tool_results": sorted(ToolResult.objects.values_list("tool_call_id", "result"),
                               key=str),
        "refunds": refunds(),
    }
