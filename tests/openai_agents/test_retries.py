"""A turn that runs again does nothing twice: a retried start turn asks its pause again
from the state it stored, without asking the model; a retried or redelivered continuation
replays its fenced tools' records (``fenced_function_tool``)."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from symfonic_django import runs
from symfonic_django.agents.openai_agents import OpenAIAgent, fenced_function_tool
from symfonic_django.agents.recorded import args_digest
from symfonic_django.exceptions import InteractionConfigurationError
from symfonic_django.models import AgentState, Pause, Run, RunStatus, ToolResult
from symfonic_django.turns import execute_run
from tests.testapp.models import Refund

from ..handwritten import continuation_by_hand
from .agents import BODY_RUNS, FAIL_NEXT, MODEL_CALLS, RAISE_AFTER_WRITE
from .conftest import THREE, answer, events_of, paused

pytestmark = pytest.mark.django_db

ALL = [{"type": "approve"}] * 3


def retried(run: Run) -> Run:
    Run.objects.filter(pk=run.pk).update(status=RunStatus.FAILED)
    runs.retry(run.pk, comment="again")
    execute_run(run.pk)
    return Run.objects.get(pk=run.pk)


def test_a_start_turn_that_crashed_after_storing_its_state_asks_the_model_once(monkeypatch):
    ask = OpenAIAgent._ask

    async def crash(self: OpenAIAgent, *args: Any) -> None:
        raise RuntimeError("the worker died")

    monkeypatch.setattr(OpenAIAgent, "_ask", crash)
    run = runs.start_run("oai_desk", THREE, scope="acme", dispatch=False)
    execute_run(run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and not Pause.objects.exists()
    stored = AgentState.objects.get(run=run).state

    monkeypatch.setattr(OpenAIAgent, "_ask", ask)
    again = retried(run)
    assert again.status == RunStatus.PAUSED, again.error
    assert MODEL_CALLS["oai_desk"] == 1 and AgentState.objects.get(run=run).state == stored
    [pause] = Pause.objects.filter(run=run)
    assert len(pause.prompt["action_requests"]) == 3


def test_a_paused_start_turn_run_again_gets_its_pause_back():
    run, pause = paused()
    again = retried(run)
    assert again.status == RunStatus.PAUSED, again.error
    assert list(Pause.objects.filter(run=run)) == [pause] and MODEL_CALLS["oai_desk"] == 1


def test_a_continuation_retried_after_the_tools_ran_runs_none_of_them_again():
    run, pause = paused()
    FAIL_NEXT.add("oai_desk")  # the confirmation's model call fails, after the refunds
    failed = answer(pause, ALL)
    assert failed.status == RunStatus.FAILED and "model is unavailable" in str(failed.error)
    assert BODY_RUNS == {"A-1": 1, "B-2": 1, "C-3": 1}

    done = retried(failed)
    assert done.status == RunStatus.COMPLETED, done.error
    assert BODY_RUNS == {"A-1": 1, "B-2": 1, "C-3": 1} and Refund.objects.count() == 3
    # The replayed calls still answer the model, with what they recorded.
    results = [d["result"] for kind, d in events_of(done) if kind == "tool.completed"]
    assert results[-3:] == [{"refunded": "A-1"}, {"refunded": "B-2"}, {"refunded": "C-3"}]


def test_a_redelivered_continuation_is_skipped_and_changes_nothing():
    run, pause = paused()
    done = answer(pause, ALL)
    events = events_of(done)
    assert execute_run(done.pk) == "skipped"
    assert events_of(done) == events and BODY_RUNS == {"A-1": 1, "B-2": 1, "C-3": 1}


def test_a_continuation_retried_after_it_paused_again_asks_its_pause_again():
    run, first = paused("oai_two_steps", {})
    second_turn = answer(first, [{"type": "approve"}])
    asked = MODEL_CALLS["oai_two_steps"]
    again = retried(second_turn)
    assert again.status == RunStatus.PAUSED, again.error
    assert MODEL_CALLS["oai_two_steps"] == asked and BODY_RUNS == {"A": 1}
    assert Pause.objects.filter(run=second_turn).count() == 1


def test_a_recorded_call_id_with_other_arguments_ends_the_turn_and_runs_nothing():
    run, pause = paused()
    ToolResult.objects.create(root_run_id=run.pk, tool_call_id="refund-call-1", name="refund",
                              args_digest=args_digest({"order_id": "Z", "amount": 1}),
                              result={"refunded": "Z"}, run_id=run.pk,
                              completed_at=timezone.now())
    done = answer(pause, ALL)
    assert done.status == RunStatus.FAILED and done.error["code"] == "tool_call_mismatch", \
        done.error
    assert "A-1" not in BODY_RUNS and not Refund.objects.filter(order_id="A-1").exists()


def test_a_tool_that_raises_commits_nothing_and_the_model_reads_the_sdks_error():
    run, pause = paused()
    RAISE_AFTER_WRITE.add("B-2")
    done = answer(pause, ALL)
    assert done.status == RunStatus.COMPLETED, done.error
    assert sorted(Refund.objects.values_list("order_id", flat=True)) == ["A-1", "C-3"]
    assert not ToolResult.objects.filter(tool_call_id="refund-call-2").exists()
    [failed] = [d for kind, d in events_of(done)
                if kind == "tool.completed" and d["tool_call_id"] == "refund-call-2"]
    assert "error occurred" in failed["result"]


def test_a_fenced_tool_result_that_is_not_json_fails_the_turn():
    from . import agents

    run, pause = paused("oai_with_lookup", {})

    @fenced_function_tool(needs_approval=True, name_override="refund")
    def refund(order_id: str, amount: float) -> Any:
        return {1, 2}

    agents_tools = agents.refund
    agents.refund = refund
    try:
        continuation = continuation_by_hand(run, pause, {str(pause.pk): {"decisions": [
                                              {"type": "approve"}]}})
        execute_run(continuation.pk)
    finally:
        agents.refund = agents_tools
    continuation.refresh_from_db()
    assert continuation.status == RunStatus.FAILED
    assert continuation.error["code"] == "configuration_error", continuation.error
    assert not ToolResult.objects.exists()


def test_a_fenced_tool_may_not_take_the_sdks_context_itself():
    from agents import RunContextWrapper

    def refund(ctx: RunContextWrapper[Any], order_id: str) -> str:
        return order_id

    with pytest.raises(InteractionConfigurationError, match="takes the SDK's context"):
        fenced_function_tool(refund)


def test_the_tools_schema_is_the_functions_own():
    @fenced_function_tool
    def ship(order_id: str, express: bool = False) -> str:
        """Ship an order."""
        return order_id

    assert ship.name == "ship" and ship.description == "Ship an order."
    assert set(ship.params_json_schema["properties"]) == {"order_id", "express"}
