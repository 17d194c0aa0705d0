"""A turn that runs again does nothing twice: a retried start turn does not ask the model
again, a retried or redelivered continuation runs no tool twice (fenced tools replay)."""

from __future__ import annotations

from typing import Any

import pytest

from symfonic_django import pauses, runs
from symfonic_django.agents.pydantic_ai import agent as adapter
from symfonic_django.agents.pydantic_ai import fenced_tool
from symfonic_django.models import AgentState, RunStatus, ToolResult
from symfonic_django.turns import execute_run

from .agents import BODY_RUNS, DOWN, MODEL_CALLS, calls
from .conftest import continue_run, pauses_of, refunds, run_turn

pytestmark = pytest.mark.django_db

A1 = ("refund", {"order_id": "A-1", "amount": 10}, "call-1")
B2 = ("refund", {"order_id": "B-2", "amount": 20}, "call-2")


def test_a_retried_start_turn_asks_its_pause_from_the_saved_state_not_the_model(monkeypatch):
    asked = adapter.request_pause

    async def crash_once(**kwargs: Any) -> Any:
        monkeypatch.setattr(adapter, "request_pause", asked)
        raise RuntimeError("the worker died before the pause was asked")

    monkeypatch.setattr(adapter, "request_pause", crash_once)
    run = run_turn("pyd_refunds", calls(A1, B2))
    assert run.status == RunStatus.FAILED and AgentState.objects.filter(run=run).exists()
    runs.retry(run.pk, comment="again")
    execute_run(run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.PAUSED
    [pause] = pauses_of(run)
    assert len(pause.prompt["action_requests"]) == 2
    assert MODEL_CALLS == [1]  # asked once, by the first attempt


def test_a_retried_continuation_replays_its_fenced_calls_and_records_nothing_twice():
    run = run_turn("pyd_refunds", calls(A1, B2))
    [pause] = pauses_of(run)
    continuation = pauses.answer_pause(pause.pk, {"decisions": [{"type": "approve"}] * 2},
                                       dispatch=False).continuation
    DOWN.append(True)  # the model fails after the tools ran
    failed = continue_run(continuation.pk)
    assert failed.status == RunStatus.FAILED and "model is unavailable" in str(failed.error)
    assert BODY_RUNS == {"A-1:10.0": 1, "B-2:20.0": 1}

    runs.retry(failed.pk, comment="the model is back")
    done = continue_run(failed.pk)
    assert done.status == RunStatus.COMPLETED, done.error
    assert BODY_RUNS == {"A-1:10.0": 1, "B-2:20.0": 1}
    assert [o for o, _ in refunds()] == ["A-1", "B-2"]
    assert ToolResult.objects.filter(root_run_id=run.pk).count() == 2
    # The replayed results are what the model read the first time.
    assert '"refund_id"' in done.output

    # Redelivered once done: skipped, nothing recorded again.
    assert execute_run(done.pk) == "skipped"
    assert BODY_RUNS == {"A-1:10.0": 1, "B-2:20.0": 1}


def test_a_fenced_tool_shows_the_model_its_functions_arguments_only():
    @fenced_tool(requires_approval=True)
    def ship(order_id: str, express: bool = False) -> str:
        """Ship an order."""
        return order_id

    schema = ship.function_schema.json_schema
    assert set(schema["properties"]) == {"order_id", "express"}
    assert ship.requires_approval and ship.name == "ship" and ship.description == (
        "Ship an order.")
