"""An SDK agent behind the app: one pause per model step with one action per approval
call, its state stored with the paused run and taken by the continuation, its stream
as typed events (``symfonic_django.agents.openai_agents``)."""

from __future__ import annotations

import json

import pytest

from symfonic_django.agents.openai_agents import ALLOWED_DECISIONS, FRAMEWORK, pause_key
from symfonic_django.models import AgentState, Pause, PauseKind, RunStatus, ToolResult
from tests.testapp.models import Refund

from .agents import BODY_RUNS, MODEL_CALLS
from .conftest import answer, events_of, paused

pytestmark = pytest.mark.django_db

CALL_IDS = ["refund-call-1", "refund-call-2", "refund-call-3"]


def test_one_step_of_three_calls_is_one_approval_with_an_action_each():
    run, pause = paused()
    assert pause.kind == PauseKind.APPROVAL and pause.idempotency_key == pause_key(CALL_IDS)
    requests = pause.prompt["action_requests"]
    assert [(a["name"], a["args"]) for a in requests] == [
        ("refund", {"order_id": "A-1", "amount": 10}), ("refund", {"order_id": "B-2",
                                                                   "amount": 19.99}),
        ("refund", {"order_id": "C-3", "amount": 3})]
    # The call in words, its arguments in the model's order (PostgreSQL's jsonb reorders
    # the run's input, which the scripted model reads).
    assert requests[0]["description"] in ("refund(order_id=A-1, amount=10)",
                                          "refund(amount=10, order_id=A-1)")
    [config] = {json.dumps(c, sort_keys=True) for c in pause.prompt["review_configs"]}
    config = json.loads(config)
    # No edit: the SDK runs an approved call only with the arguments it was proposed with.
    assert config["allowed_decisions"] == ALLOWED_DECISIONS and "edit" not in ALLOWED_DECISIONS
    # The tool's own schema (refund(order_id: str, amount: float)).
    assert config["args_schema"]["properties"]["amount"]["type"] == "number"
    assert config["args_schema"]["required"] == ["order_id", "amount"]
    state = AgentState.objects.get(run=run)
    assert state.framework == FRAMEWORK and state.consumed_by_id is None
    assert not Refund.objects.exists() and MODEL_CALLS["oai_desk"] == 1


def test_the_stream_is_typed_events_and_the_interruptions_are_read_after_it():
    run, pause = paused()
    kinds = [kind for kind, _ in events_of(run)]
    assert kinds == ["turn.started", "message.delta", "message.completed", "tool.started",
                     "tool.started", "tool.started", "pause.requested", "turn.paused"]
    started = [data for kind, data in events_of(run) if kind == "tool.started"]
    assert [s["tool_call_id"] for s in started] == CALL_IDS
    assert started[1]["args"] == {"order_id": "B-2", "amount": 19.99}

    done = answer(pause, [{"type": "approve"}, {"type": "reject", "message": "already refunded"},
                          {"type": "respond", "message": "ask the customer first"}])
    events = events_of(done)
    assert [kind for kind, _ in events] == [
        "turn.started", "tool.completed", "tool.completed", "tool.completed", "message.delta",
        "message.completed", "turn.completed"]
    completed = [data for kind, data in events if kind == "tool.completed"]
    assert [(c["tool_call_id"], c["status"]) for c in completed] == [
        (CALL_IDS[0], "success"), (CALL_IDS[1], "error"), (CALL_IDS[2], "error")]
    assert completed[0]["result"] == {"refunded": "A-1"}
    assert completed[1]["result"] == "already refunded"
    assert completed[2]["result"] == "ask the customer first"
    assert completed[1]["args"] == {"order_id": "B-2", "amount": 19.99}


def test_the_continuation_runs_the_approved_calls_once_and_takes_the_state():
    run, pause = paused()
    done = answer(pause, [{"type": "approve"}, {"type": "reject", "message": "no"},
                          {"type": "approve"}])
    assert done.status == RunStatus.COMPLETED, done.error
    assert done.output == ("3 refund(s) reviewed: the approved ones are done, the others were "
                           "not made.")
    assert sorted(Refund.objects.values_list("order_id", flat=True)) == ["A-1", "C-3"]
    assert AgentState.objects.get(run=run).consumed_by_id == done.pk
    assert sorted(ToolResult.objects.values_list("tool_call_id", flat=True)) == [
        CALL_IDS[0], CALL_IDS[2]]


def test_a_call_that_needs_no_approval_runs_and_the_one_that_does_pauses():
    run, pause = paused("oai_with_lookup", {})
    assert [a["name"] for a in pause.prompt["action_requests"]] == ["refund"]
    done = answer(pause, [{"type": "approve"}])
    assert done.status == RunStatus.COMPLETED, done.error
    assert BODY_RUNS == {"A": 1}


def test_a_continuation_that_pauses_again_stores_its_own_state():
    run, first = paused("oai_two_steps", {})
    second_turn = answer(first, [{"type": "approve"}])
    assert second_turn.status == RunStatus.PAUSED, second_turn.error
    assert AgentState.objects.get(run=run).consumed_by_id == second_turn.pk
    assert AgentState.objects.get(run=second_turn).consumed_by_id is None
    [second] = Pause.objects.filter(run=second_turn)
    assert second.idempotency_key == pause_key(["second"])
    done = answer(second, [{"type": "approve"}])
    assert done.status == RunStatus.COMPLETED and done.output == "both reviewed"
    assert BODY_RUNS == {"A": 1, "B": 1}
    assert AgentState.objects.get(run=second_turn).consumed_by_id == done.pk


def test_an_expired_approval_tells_the_model_each_call_timed_out(settings):
    from symfonic_django.agents.openai_agents import TIMEOUT_MESSAGE
    from symfonic_django.pauses import TIMEOUT_ANSWER
    from symfonic_django.turns import execute_run
    from tests.handwritten import continuation_by_hand

    run, pause = paused()
    Pause.objects.filter(pk=pause.pk).update(status="expired")
    continuation = continuation_by_hand(run, pause, {str(pause.pk): TIMEOUT_ANSWER})
    execute_run(continuation.pk)
    continuation.refresh_from_db()
    assert continuation.status == RunStatus.COMPLETED, continuation.error
    results = [d["result"] for kind, d in events_of(continuation) if kind == "tool.completed"]
    assert results == [TIMEOUT_MESSAGE] * 3 and not Refund.objects.exists()
