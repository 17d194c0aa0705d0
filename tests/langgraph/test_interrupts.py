"""LangGraph interrupts behind the app: each becomes a pause, answered through the app,
and the graph resumes once, on the Django checkpoint saver (docs/langgraph.md)."""

from __future__ import annotations

import pytest

from symfonic_django import pauses
from symfonic_django.models import PauseKind, PauseStatus, Run, RunStatus, ToolResult
from tests.testapp.models import Refund

from .conftest import continue_run, events_of, pauses_of, run_turn, thread_rows, types_of
from .graphs import CALLS

pytestmark = pytest.mark.django_db


def test_several_interrupts_in_one_node_are_asked_and_answered_in_order():
    run = run_turn("lg_questions", {"ask": True})
    assert run.status == RunStatus.PAUSED
    [first] = pauses_of(run)
    assert (first.kind, first.prompt, first.answer_schema) == (
        PauseKind.QUESTION, {"question": "Which order?"}, None)
    assert first.thread_id == str(run.pk) and first.checkpoint_id

    second_turn = continue_run(pauses.answer_pause(first.pk, "A-1").continuation.pk)
    assert second_turn.status == RunStatus.PAUSED
    [second] = pauses_of(second_turn)
    assert second.prompt == {"question": "How much?"}
    assert second.answer_schema["required"] == ["amount"]  # the interrupt's response_schema
    assert second.idempotency_key != first.idempotency_key

    last = continue_run(pauses.answer_pause(second.pk, {"amount": 5}).continuation.pk)
    assert last.status == RunStatus.COMPLETED
    assert last.output == {"ask": True, "answers": ["A-1", {"amount": 5}]}
    assert CALLS["two_questions.after"] == 1
    assert types_of(last) == ["turn.started", "turn.completed"]


def test_a_retried_turn_gets_its_pauses_back_rather_than_new_ones():
    run = run_turn("lg_fan", {"items": ["a", "b"]})
    before = {p.pk for p in pauses_of(run)}
    # A worker that ran the turn again (the same run, claimed anew) asks the same interrupts.
    Run.objects.filter(pk=run.pk).update(status=RunStatus.QUEUED)
    assert continue_run(run.pk).status == RunStatus.PAUSED
    assert {p.pk for p in pauses_of(run)} == before
    assert types_of(run).count("pause.requested") == 2


@pytest.mark.parametrize("agent", ["lg_per_call"])
def test_parallel_tool_interrupts_of_create_agent_are_separate_pauses_and_one_continuation(
        agent):
    run = run_turn(agent, {"refunds": [{"order_id": "A-1", "amount": 10},
                                       {"order_id": "B-2", "amount": 20}]})
    first, second = pauses_of(run)
    assert first.kind == second.kind == PauseKind.APPROVAL
    assert [p.prompt["action_requests"][0]["args"]["order_id"] for p in (first, second)] == [
        "A-1", "B-2"]
    assert first.prompt["review_configs"][0]["allowed_decisions"] == ["approve", "edit",
                                                                      "reject"]
    assert types_of(run) == ["turn.started", *["message.delta"] * 5, "message.completed",
                             "tool.started", "tool.started", "pause.requested",
                             "pause.requested", "turn.paused"]

    assert pauses.approve(first.pk).continuation is None  # the run waits for the other
    continuation = pauses.reject(second.pk, comment="not this one").continuation
    assert Run.objects.filter(parent=run).count() == 1
    done = continue_run(continuation.pk)
    assert done.status == RunStatus.COMPLETED and done.output == "All refunds are handled."
    assert list(Refund.objects.values_list("order_id", flat=True)) == ["A-1"]
    completed = [data for kind, data in events_of(done) if kind == "tool.completed"]
    assert {c["tool_call_id"]: c["result"] for c in completed}["call-0-A-1"]["order_id"] == "A-1"
    assert "not this one" in {c["tool_call_id"]: c["result"] for c in completed}["call-1-B-2"]
    # The rejected call ended in an error the viewer shows as such, the approved one did not.
    assert {c["tool_call_id"]: c.get("status") for c in completed} == {
        "call-0-A-1": "success", "call-1-B-2": "error"}


def test_a_partial_answer_set_leaves_the_run_and_the_thread_waiting_for_the_rest():
    run = run_turn("lg_fan", {"items": ["a", "b", "c"]})
    asked = pauses_of(run)
    assert len(asked) == 3
    thread = thread_rows(str(run.pk))

    for pause in asked[:2]:
        assert pauses.answer_pause(pause.pk, "yes").continuation is None
    run.refresh_from_db()
    assert run.status == RunStatus.PAUSED and not Run.objects.filter(parent=run).exists()
    assert thread_rows(str(run.pk)) == thread  # the graph was not touched

    last = continue_run(pauses.answer_pause(asked[2].pk, "no").continuation.pk)
    assert last.status == RunStatus.COMPLETED
    assert sorted(last.output["out"]) == ["a:yes", "b:yes", "c:no"]


def test_send_fan_out_asks_each_branch_and_gives_each_its_own_answer():
    run = run_turn("lg_fan", {"items": ["x", "y", "z"]})
    asked = {p.prompt["question"]: p for p in pauses_of(run)}
    assert set(asked) == {"Item x?", "Item y?", "Item z?"}
    assert len({p.idempotency_key for p in asked.values()}) == 3
    for question, pause in asked.items():
        resolution = pauses.answer_pause(pause.pk, question[5].upper())
    done = continue_run(resolution.continuation.pk)
    assert sorted(done.output["out"]) == ["x:X", "y:Y", "z:Z"]


def test_a_subgraph_interrupt_is_a_pause_and_resumes_through_the_parent():
    run = run_turn("lg_subgraph", {"items": []})
    [pause] = pauses_of(run)
    assert pause.prompt == {"question": "Go on?"}
    done = continue_run(pauses.answer_pause(pause.pk, "sure").continuation.pk)
    assert done.status == RunStatus.COMPLETED
    assert done.output["out"] == ["sub:sure"]


def test_two_interrupting_tools_of_one_tool_node_ask_one_after_the_other_and_run_once():
    run = run_turn("lg_tool_node", {"orders": ["A", "B"]})
    [first] = pauses_of(run)
    assert first.prompt == {"question": "Ship A?"}

    second_turn = continue_run(pauses.answer_pause(first.pk, "yes").continuation.pk)
    assert second_turn.status == RunStatus.PAUSED
    [second] = pauses_of(second_turn)
    assert second.prompt == {"question": "Ship B?"}
    assert CALLS["ship:A"] == 1 and Refund.objects.filter(order_id="A").count() == 1

    # The ToolNode runs both calls again: A's effect is replayed, and B gets its own answer.
    done = continue_run(pauses.answer_pause(second.pk, "no").continuation.pk)
    assert done.status == RunStatus.COMPLETED
    assert CALLS["ship:A"] == 1 and Refund.objects.filter(order_id="A").count() == 1
    assert CALLS["ship:B"] == 1 and not Refund.objects.filter(order_id="B").exists()
    results = {d["tool_call_id"]: d["result"] for kind, d in events_of(done)
               if kind == "tool.completed"}
    assert results["ship-A"]["shipped"] is True and results["ship-B"] == {
        "shipped": False, "order_id": "B"}
    recorded = ToolResult.objects.get(tool_call_id="ship-A")
    assert recorded.run_id == second_turn.pk and len(recorded.interrupt_ids) == 1


def test_an_expired_approval_resumes_the_graph_as_a_rejection(settings):
    settings.SYMFONIC = {**settings.SYMFONIC, "ON_EXPIRE": "resume"}
    run = run_turn("lg_batched", {"refunds": [{"order_id": "A-1", "amount": 10}]})
    [pause] = pauses_of(run)
    resolution = pauses.expire(pause.pk, now=pause.expires_at)
    assert resolution.pause.status == PauseStatus.EXPIRED
    done = continue_run(resolution.continuation.pk)
    assert done.status == RunStatus.COMPLETED
    assert not Refund.objects.exists()
    [result] = [d["result"] for kind, d in events_of(done) if kind == "tool.completed"]
    assert "The approval timed out." in result
