"""Fixtures of the OpenAI Agents SDK adapter tests: the test agents registered, counters
cleared, and helpers that drive a run's turns in-process, as a worker would."""

from __future__ import annotations

from typing import Any

import pytest

from symfonic_django import pauses
from symfonic_django.models import AgentState, Pause, Run, RunStatus, ToolResult
from symfonic_django.turns import execute_run
from tests.testapp.models import Refund

from ..turn_drivers import events_of, run_turn  # noqa: F401
from . import agents

THREE = {"refunds": [{"order_id": "A-1", "amount": 10}, {"order_id": "B-2", "amount": 19.99},
                     {"order_id": "C-3", "amount": 3}]}


@pytest.fixture(autouse=True)
def openai_agents(settings: Any, tenants: Any) -> None:
    settings.SYMFONIC = {**settings.SYMFONIC,
                         "AGENTS": {**settings.SYMFONIC["AGENTS"], **agents.AGENTS}}
    agents.MODEL_CALLS.clear()
    agents.BODY_RUNS.clear()
    agents.BUILT.clear()
    agents.FAIL_NEXT.clear()
    agents.RAISE_AFTER_WRITE.clear()




def paused(agent: str = "oai_desk", input: Any = None) -> tuple[Run, Pause]:
    run = run_turn(agent, THREE if input is None else input)
    assert run.status == RunStatus.PAUSED, run.error
    [pause] = Pause.objects.filter(run=run)
    return run, pause


def answer(pause: Pause, decisions: list[dict[str, Any]]) -> Run:
    """Answer ``pause`` (the Python surface) and drive its continuation."""
    answered = pauses.answer_pause(pause.pk, {"decisions": decisions})
    execute_run(answered.continuation.pk)
    return Run.objects.get(pk=answered.continuation.pk)




def rows() -> tuple[Any, ...]:
    """Every row a refusal must leave as it was."""
    return (sorted(AgentState.objects.values_list("run_id", "consumed_by_id", "state")),
            sorted(ToolResult.objects.values_list("tool_call_id", "result")),
            sorted(Refund.objects.values_list("order_id", "run_id")),
            sorted(Pause.objects.values_list("pk", "status")),
            Run.objects.filter(status=RunStatus.COMPLETED).count())
