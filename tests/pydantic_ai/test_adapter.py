"""A Pydantic AI agent behind the app: one approval pause per model step, each decision
mapped to Pydantic AI's, the run streamed as the app's events."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from pydantic_ai import Agent

from symfonic_django import pauses
from symfonic_django.agents.pydantic_ai import FRAMEWORK, pause_key, pydantic_ai_agent
from symfonic_django.models import AgentState, Decision, PauseKind, Run, RunStatus

from .agents import MODEL_CALLS, calls
from .conftest import continue_run, events_of, pauses_of, refunds, run_turn, types_of

pytestmark = pytest.mark.django_db

A1 = ("refund", {"order_id": "A-1", "amount": 10}, "call-1")
B2 = ("refund", {"order_id": "B-2", "amount": 19.99}, "call-2")
C3 = ("refund", {"order_id": "C-3", "amount": 3}, "call-3")
D4 = ("refund", {"order_id": "D-4", "amount": 4}, "call-4")


def answer(run: Run, *decisions: dict[str, Any], actor: Any = None) -> Run:
    [pause] = pauses_of(run)
    resolution = pauses.answer_pause(pause.pk, {"decisions": list(decisions)}, actor=actor,
                                     dispatch=False)
    return continue_run(resolution.continuation.pk)


def test_a_step_with_three_approvals_is_one_pause_with_an_action_each_keyed_by_their_ids():
    run = run_turn("pyd_refunds", calls(A1, B2, C3))
    assert run.status == RunStatus.PAUSED
    [pause] = pauses_of(run)
    assert pause.kind == PauseKind.APPROVAL
    assert pause.idempotency_key == pause_key(["call-1", "call-2", "call-3"])
    assert [(a["name"], a["args"]) for a in pause.prompt["action_requests"]] == [
        (name, args) for name, args, _ in (A1, B2, C3)]
    first = pause.prompt["action_requests"][0]
    assert first["description"] == f"refund {first['args']}"  # the deployment's describe=
    # The tool's own schema: its bounds, as pydantic writes them, the edit held to them.
    [config] = pause.prompt["review_configs"]
    assert config["allowed_decisions"] == ["approve", "edit", "reject", "respond"]
    assert config["args_schema"]["properties"]["amount"] == {
        "exclusiveMinimum": 0, "maximum": 10000, "multipleOf": 0.01, "type": "number"}
    assert config["args_schema"]["additionalProperties"] is False
    state = AgentState.objects.get(run=run)
    assert state.framework == FRAMEWORK and state.consumed_by_id is None
    assert [c["id"] for c in json.loads(state.state)["approvals"]] == ["call-1", "call-2",
                                                                       "call-3"]
    assert MODEL_CALLS == [1] and refunds() == []


def test_approve_edit_reject_respond_run_exactly_the_approved_and_edited_calls(users):
    alice = get_user_model().objects.get(username="alice")
    run = run_turn("pyd_refunds", calls(A1, B2, C3, D4))
    done = answer(run, {"type": "approve"},
                  {"type": "edit", "edited_action": {"name": "refund",
                                                     "args": {"order_id": "B-2", "amount": 5.5}}},
                  {"type": "reject", "message": "already refunded"},
                  {"type": "respond", "message": "ask the customer first"},
                  actor=alice)
    assert done.status == RunStatus.COMPLETED, done.error
    assert [(o, str(a)) for o, a in refunds()] == [("A-1", "10.00"), ("B-2", "5.50")]
    # The model read the reviewer's words for the calls that did not run.
    assert "call-3=\"already refunded\"" in done.output
    assert "call-4=\"ask the customer first\"" in done.output
    completed = {d["tool_call_id"]: d for kind, d in events_of(done) if kind == "tool.completed"}
    assert {i: d["status"] for i, d in completed.items()} == {
        "call-1": "success", "call-2": "success", "call-3": "error", "call-4": "error"}
    # The edited call's events carry the arguments it ran with.
    assert completed["call-2"]["args"] == {"order_id": "B-2", "amount": 5.5}
    # Who answered: Pydantic AI keeps no answerer; the app's audit does.
    [decision] = Decision.objects.filter(pause__run=run)
    assert decision.actor == alice
    assert AgentState.objects.get(run=run).consumed_by_id == done.pk


def test_a_tool_that_raises_approval_required_pauses_with_its_metadata_and_runs_approved():
    run = run_turn("pyd_refunds", calls(("guarded", {"order_id": "G-1", "amount": 150}, "g1")))
    [pause] = pauses_of(run)
    assert pause.prompt["action_requests"][0]["description"].endswith("over 100")
    done = answer(run, {"type": "approve"})
    assert done.status == RunStatus.COMPLETED, done.error
    assert [o for o, _ in refunds()] == ["G-1"]


def test_the_run_is_streamed_as_the_apps_typed_events():
    run = run_turn("pyd_refunds", calls(A1, B2))
    assert types_of(run) == ["turn.started", "message.delta", "message.completed",
                             "tool.started", "tool.started", "pause.requested", "turn.paused"]
    done = answer(run, {"type": "approve"}, {"type": "reject", "message": "no"})
    kinds = types_of(done)
    assert kinds[0] == "turn.started" and kinds[-1] == "turn.completed"
    assert kinds.count("tool.started") == 2 and kinds.count("tool.completed") == 2
    assert kinds[-3:-1] == ["message.delta", "message.completed"]
    assert events_of(done)[-1][1]["output"] == done.output


def test_a_step_without_approvals_completes_with_the_output():
    run = run_turn("pyd_refunds", calls())
    assert run.status == RunStatus.COMPLETED and run.output == "Asking."
    assert not AgentState.objects.exists()


def test_an_agent_that_cannot_end_on_deferred_requests_is_refused_when_registered():
    from symfonic_django.exceptions import InteractionConfigurationError

    with pytest.raises(InteractionConfigurationError, match="DeferredToolRequests"):
        pydantic_ai_agent(Agent("test"))
