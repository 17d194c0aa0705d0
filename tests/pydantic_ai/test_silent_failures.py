"""Each silent failure of Pydantic AI (checked on pydantic-ai-slim 2.78.0), refused with a
typed error and the rows unchanged, or impossible by construction (docs/pydantic-ai.md)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import Agent

from symfonic_django import pauses
from symfonic_django.exceptions import InvalidAnswer
from symfonic_django.models import AgentState, Pause, Run, RunStatus

from ..handwritten import continuation_by_hand
from .agents import BODY_RUNS, MODEL_CALLS, VERDICTS, calls
from .conftest import continue_run, pauses_of, refunds, rows, run_turn

pytestmark = pytest.mark.django_db

A1 = ("refund", {"order_id": "A-1", "amount": 10}, "call-1")
B2 = ("refund", {"order_id": "B-2", "amount": 20}, "call-2")
KNOWN = ("known_refund", {"order_id": "K-1", "amount": 10}, "known-1")


def edit(name: str, **args: Any) -> dict[str, Any]:
    return {"type": "edit", "edited_action": {"name": name, "args": args}}


def continuation_with(run: Run, *decisions: dict[str, Any]) -> Run:
    """A continuation carrying ``decisions`` as they are, never checked by a surface (as a
    hand-written or replayed answer would be)."""
    [pause] = pauses_of(run)
    Pause.objects.filter(pk=pause.pk).update(status="answered")
    return continuation_by_hand(run, pause, {str(pause.pk): {"decisions": list(decisions)}})


def refused(run: Run, reason: str) -> None:
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert run.error["code"] == "resume_refused", run.error
    assert run.error["message"].startswith(f"{reason}: "), run.error


# --- invalid override_args: Pydantic AI skips the tool without an error -------------------

def test_an_edit_outside_the_tools_schema_is_refused_when_given_and_changes_nothing():
    run = run_turn("pyd_refunds", calls(A1))
    [pause] = pauses_of(run)
    before = rows()
    with pytest.raises(InvalidAnswer, match="amount"):
        pauses.answer_pause(pause.pk, {"decisions": [edit("refund", order_id="A-1",
                                                          amount=-5)]}, dispatch=False)
    assert rows() == before


def test_an_edit_the_tools_own_validator_refuses_is_refused_before_the_state_is_taken():
    """``X-9`` fits the JSON schema the form checks; the tool's validator refuses it. The
    continuation refuses it inside consume_state's check: the state stays untaken."""
    run = run_turn("pyd_refunds", calls(KNOWN))
    [pause] = pauses_of(run)
    resolution = pauses.answer_pause(pause.pk, {"decisions": [
        edit("known_refund", order_id="X-9", amount=10)]}, dispatch=False)
    before = rows()
    continuation = continue_run(resolution.continuation.pk)
    refused(continuation, "decisions_mismatch")
    assert "unknown order" in continuation.error["message"]
    assert AgentState.objects.get(run=run).consumed_by_id is None
    after = rows()
    assert after["states"] == before["states"] and after["refunds"] == []
    assert after["tool_results"] == before["tool_results"] and BODY_RUNS == {}


def test_an_approved_call_that_fails_validation_in_the_resumed_run_fails_the_turn():
    """The validator's verdict changed between the check and the run: Pydantic AI would tell
    the model and skip the approved call; the guard fails the turn instead."""
    run = run_turn("pyd_refunds", calls(KNOWN))
    continuation = continuation_with(run, {"type": "approve"})
    VERDICTS.append(False)
    refused(continue_run(continuation.pk), "decisions_mismatch")
    assert refunds() == [] and BODY_RUNS == {}


# --- every pending id must be answered; answers must be for this state's calls ------------

def test_an_answer_with_a_decision_missing_is_refused_before_the_state_is_taken():
    run = run_turn("pyd_refunds", calls(A1, B2))
    continuation = continuation_with(run, {"type": "approve"})
    before = rows()
    refused(continue_run(continuation.pk), "decisions_mismatch")
    assert AgentState.objects.get(run=run).consumed_by_id is None
    assert rows()["refunds"] == before["refunds"] == [] and BODY_RUNS == {}


def test_an_edit_renaming_the_tool_is_refused():
    run = run_turn("pyd_refunds", calls(A1))
    continuation = continuation_with(run, edit("known_refund", order_id="A-1", amount=1))
    refused(continue_run(continuation.pk), "decisions_mismatch")
    assert refunds() == []


def test_an_answer_to_another_pause_is_refused():
    run = run_turn("pyd_refunds", calls(A1))
    [pause] = pauses_of(run)
    Pause.objects.filter(pk=pause.pk).update(idempotency_key="another step")
    continuation = continuation_with(run, {"type": "approve"})
    refused(continue_run(continuation.pk), "unknown_interrupt")
    assert refunds() == [] and AgentState.objects.get(run=run).consumed_by_id is None


# --- a history resumed twice runs its approved tools twice --------------------------------

def test_a_second_continuation_of_the_same_pause_is_refused_and_changes_nothing():
    """A continuation row the pause's answer did not make (written by hand, replayed) is
    refused before it sees the history."""
    run = run_turn("pyd_refunds", calls(A1))
    [pause] = pauses_of(run)
    first = continue_run(pauses.answer_pause(
        pause.pk, {"decisions": [{"type": "approve"}]}, dispatch=False).continuation.pk)
    assert first.status == RunStatus.COMPLETED
    before = rows()
    second = Run.objects.create(agent="pyd_refunds", scope_key=run.scope_key, parent=run,
                                root_id=run.pk, input={"answers": {str(pause.pk): {
                                    "decisions": [{"type": "approve"}]}}},
                                resumed_from=pause)
    second = continue_run(second.pk)
    assert second.status == RunStatus.FAILED and second.error["code"] == "lineage_refused"
    after = rows()
    del after["runs"], before["runs"]
    assert after == before and BODY_RUNS == {"A-1:10.0": 1}


# --- repeated call ids, deferred calls that are not approvals -----------------------------

def test_a_step_that_repeats_a_call_id_is_refused_before_it_pauses():
    run = run_turn("pyd_refunds", calls(A1, ("refund", {"order_id": "B-2", "amount": 2},
                                             "call-1")))
    assert run.status == RunStatus.FAILED and run.error["code"] == "tool_call_mismatch"
    assert pauses_of(run) == [] and not AgentState.objects.exists() and refunds() == []


def test_a_deferred_call_that_is_no_approval_is_refused_before_it_pauses():
    run = run_turn("pyd_refunds", calls(A1, ("lookup", {"order_id": "L-1"}, "look-1")))
    assert run.status == RunStatus.FAILED and run.error["code"] == "configuration_error"
    assert "not approvals" in run.error["message"]
    assert pauses_of(run) == [] and not AgentState.objects.exists()


def test_run_stream_is_never_used(monkeypatch):
    """``run_stream`` ends at the first deferred call; the adapter streams with
    ``run_stream_events``, which carries them all."""
    def first_only(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("run_stream returns only the first deferred call")

    monkeypatch.setattr(Agent, "run_stream", first_only)
    run = run_turn("pyd_refunds", calls(A1, B2, KNOWN))
    [pause] = pauses_of(run)
    assert len(pause.prompt["action_requests"]) == 3 and MODEL_CALLS == [1]


# --- wrapped toolsets: edits validated by the wrapped tool's own validator, or not offered --

def test_a_tool_inside_prefixed_and_approval_required_toolsets_keeps_its_validated_edit():
    run = run_turn("pyd_wrapped", calls(("shop_refund", {"order_id": "S-1", "amount": 10}, "s1")))
    [pause] = pauses_of(run)
    [config] = pause.prompt["review_configs"]
    assert config["action_name"] == "shop_refund" and "edit" in config["allowed_decisions"]
    assert config["args_schema"]["properties"]["amount"]["maximum"] == 10000
    with pytest.raises(InvalidAnswer):
        pauses.answer_pause(pause.pk, {"decisions": [edit("shop_refund", order_id="S-1",
                                                          amount=20000)]}, dispatch=False)
    done = continue_run(pauses.answer_pause(pause.pk, {"decisions": [
        edit("shop_refund", order_id="S-1", amount=7)]}, dispatch=False).continuation.pk)
    assert done.status == RunStatus.COMPLETED, done.error
    assert [(o, str(a)) for o, a in refunds()] == [("S-1", "7.00")]


def test_a_tool_with_a_custom_args_validator_is_offered_no_edit_and_an_edit_is_refused():
    run = run_turn("pyd_wrapped", calls(("checked_refund", {"order_id": "C-1", "amount": 1},
                                         "k1")))
    [pause] = pauses_of(run)
    [config] = pause.prompt["review_configs"]
    assert config["allowed_decisions"] == ["approve", "reject", "respond"]
    continuation = continuation_with(run, edit("checked_refund", order_id="SUN-1", amount=1))
    refused(continue_run(continuation.pk), "decisions_mismatch")
    assert refunds() == [] and AgentState.objects.get(run=run).consumed_by_id is None


def test_a_later_step_proposing_a_call_id_the_conversation_ran_is_refused_before_it_pauses():
    """``call-1`` ran in the first step; the second proposes ``call-1`` again (for another
    order) beside a new call. A reviewer must not be asked to approve a call that could
    never run (or would replay the first one's result): the step is refused unasked."""
    script = calls(A1)
    script["then"] = [["refund", {"order_id": "P-2", "amount": 99}, "call-1"],
                      ["refund", {"order_id": "P-3", "amount": 7}, "call-3"]]
    run = run_turn("pyd_refunds", script)
    [pause] = pauses_of(run)
    done = continue_run(pauses.answer_pause(
        pause.pk, {"decisions": [{"type": "approve"}]}, dispatch=False).continuation.pk)
    assert done.status == RunStatus.FAILED and done.error["code"] == "tool_call_mismatch"
    assert not Pause.objects.filter(run=done).exists()
    assert not AgentState.objects.filter(run=done).exists()
    assert refunds() == [("A-1", 10)] and BODY_RUNS == {"A-1:10.0": 1}
