"""Fixtures of the Pydantic AI adapter's tests: the test agents registered, and readers of
what a turn leaves behind (its pauses, its events, the stored state, the rows)."""

from __future__ import annotations

from typing import Any

import pytest

from symfonic_django.models import AgentState, Pause, Run, ToolResult, TurnEvent
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run
from tests.testapp.models import Refund

from . import agents


@pytest.fixture(autouse=True)
def pydantic_ai_agents(settings: Any, tenants: Any) -> None:
    settings.SYMFONIC = {**settings.SYMFONIC,
                         "AGENTS": {**settings.SYMFONIC["AGENTS"], **agents.AGENTS}}
    agents.reset()


def run_turn(agent: str, input: Any, *, scope: str = "acme") -> Run:
    """Start a run and drive its first turn in-process, as a worker would."""
    run = start_run(agent, input, scope=scope, dispatch=False)
    execute_run(run.pk)
    run.refresh_from_db()
    return run


def continue_run(run_id: Any) -> Run:
    """Drive a queued continuation (or a retried run) in-process."""
    execute_run(run_id)
    return Run.objects.get(pk=run_id)


def pauses_of(run: Run) -> list[Pause]:
    return list(Pause.objects.filter(run=run).order_by("created_at"))


def events_of(run: Run) -> list[tuple[str, dict[str, Any]]]:
    return [(e.type, e.data) for e in TurnEvent.objects.filter(run=run).order_by("seq")]


def types_of(run: Run) -> list[str]:
    return [kind for kind, _ in events_of(run)]


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
