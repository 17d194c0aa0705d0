"""``POST ag-ui/{agent}/``: start, interrupt, resume, reconnect; every event is validated by
``ag-ui-protocol``'s own models (``conftest.parse``)."""

from __future__ import annotations

import importlib.util
from decimal import Decimal
from typing import Any

import pytest

from symfonic_django.models import AnsweredVia, Decision, Pause, PauseStatus, Run
from tests.testapp.models import Refund

from .conftest import APPROVE, REFUND, Stream, body, needs_langgraph, resumed

pytestmark = pytest.mark.django_db


def test_a_refund_streams_as_ag_ui_and_its_pause_is_one_interrupt(agui: Any, thread: str) -> None:
    sent = body(thread, input=REFUND, run_id="client-run-1")
    stream = agui("alice", "refund", sent)
    assert stream.status == 200 and stream.content_type.startswith("text/event-stream")
    assert stream.types == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
                            "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "TOOL_CALL_START",
                            "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"]
    started, finished = stream.events[0], stream.last
    assert started["runId"] == finished["runId"] == "client-run-1"  # the client's, echoed
    assert started["threadId"] == finished["threadId"] == thread
    run = Run.objects.get(pk=started["metadata"]["symfonic"]["appRunId"])
    assert run.thread_id == thread and run.scope_key == "acme" and run.input == REFUND
    pause = Pause.objects.get(run=run)
    [interrupt] = stream.interrupts
    assert interrupt["id"] == f"{pause.pk}:0"
    assert interrupt["reason"] == "tool_call"
    assert interrupt["toolCallId"] == stream.of("TOOL_CALL_START")[0]["toolCallId"]
    assert interrupt["message"] == "Refund 12.5 on order AG-1"
    assert set(interrupt["responseSchema"]["properties"]) == {"approved", "editedArgs", "message"}
    assert interrupt["expiresAt"].endswith("Z")
    assert "token" not in str(stream.events)  # no pause token travels over AG-UI
    # Every event of a stored row carries its id: the app's run and the row's seq.
    assert all(i is None or i.startswith(f"{run.pk}:") for i in stream.ids)


def test_a_resume_answers_as_the_caller_through_ag_ui_and_streams_the_continuation(
        agui: Any, thread: str, users: Any) -> None:
    first = agui("alice", "refund", body(thread, input=REFUND))
    [interrupt] = first.interrupts
    stream = agui("alice", "refund", body(thread, resume=resumed(first.interrupts, APPROVE)))
    assert stream.last["type"] == "RUN_FINISHED"
    assert stream.last["outcome"] == {"type": "success"}
    assert stream.last["result"]["refunded"] is True
    # The result comes back to the call the client held, though the agent named its own.
    [result] = stream.of("TOOL_CALL_RESULT")
    assert result["toolCallId"] == interrupt["toolCallId"]
    assert "TOOL_CALL_START" not in stream.types
    pause = Pause.objects.get(pk=interrupt["id"].split(":")[0])
    assert pause.status == PauseStatus.ANSWERED and pause.answered_via == AnsweredVia.AG_UI
    assert pause.answered_by.username == "alice"
    [decision] = Decision.objects.filter(pause=pause)
    assert (decision.via, decision.actor.username, decision.action) == ("ag-ui", "alice",
                                                                        "approve")
    assert list(Refund.objects.values_list("order_id", "amount")) == [("AG-1", Decimal("12.50"))]


def test_an_edit_and_a_rejection(agui: Any, thread: str) -> None:
    first = agui("alice", "refund", body(thread, input=REFUND))
    edit = {"approved": True, "editedArgs": {"order_id": "AG-1", "amount": 5}}
    stream = agui("alice", "refund", body(thread, resume=resumed(first.interrupts, edit)))
    assert stream.last["result"]["amount"] == "5.00"
    other = f"{thread}-2"
    first = agui("alice", "refund", body(other, input={"order_id": "AG-2", "amount": 3}))
    stream = agui("alice", "refund", body(other, resume=resumed(
        first.interrupts, {"approved": False, "message": "Not this one."})))
    assert stream.last["result"] == {"refunded": False, "reason": "the reviewer rejected it",
                                     "message": "Not this one."}
    assert list(Refund.objects.values_list("order_id", "amount")) == [("AG-1", Decimal("5.00"))]


def test_a_question_is_input_required_and_its_payload_is_the_answer(agui: Any,
                                                                    thread: str) -> None:
    first = agui("alice", "shipping", body(thread, input={"order_id": "S-1"}))
    [interrupt] = first.interrupts
    assert interrupt["reason"] == "input_required" and "toolCallId" not in interrupt
    assert interrupt["responseSchema"]["required"] == ["carrier"]
    assert interrupt["id"].endswith(":0")
    stream = agui("alice", "shipping", body(thread, resume=resumed(first.interrupts,
                                                                  {"carrier": "ups"})))
    assert stream.last["result"] == {"carrier": "ups"}


def test_the_input_may_be_the_last_user_message(agui: Any, thread: str) -> None:
    sent = body(thread)
    sent["forwardedProps"] = {}
    sent["messages"] = [{"id": "m1", "role": "user", "content": '{"order_id": "S-2"}'}]
    stream = agui("alice", "shipping", sent)
    assert stream.interrupts[0]["reason"] == "input_required"


def test_a_failed_turn_is_run_error_with_its_code(agui: Any, thread: str) -> None:
    stream = agui("alice", "boom", body(thread, input={}))
    assert stream.types[0] == "RUN_STARTED"
    assert stream.last["type"] == "RUN_ERROR" and stream.last["code"]
    run = Run.objects.get(pk=stream.events[0]["metadata"]["symfonic"]["appRunId"])
    assert stream.last["code"] == run.error["code"]


def test_a_reconnect_gets_the_events_after_the_last_one_seen(agui: Any, thread: str) -> None:
    whole = agui("alice", "refund", body(thread, input=REFUND))
    frames = [(i, e) for i, e in zip(whole.ids, whole.events, strict=True) if i]
    cut = frames[2][0]  # a client that saw the first content, and lost the rest
    same_run = whole.events[0]["runId"]  # the client's run, which it goes on watching
    later = agui("alice", "refund", body(thread, after=cut, run_id=same_run))
    expected = [e for i, e in frames if int(i.split(":")[1]) > int(cut.split(":")[1])]
    assert later.events[0]["type"] == "RUN_STARTED"
    assert later.events[1:] == expected  # no gap, no duplicate
    header = agui("alice", "refund", body(thread, run_id=same_run), HTTP_LAST_EVENT_ID=cut)
    assert header.events[1:] == expected
    # Another user who may not read the run learns nothing of it.
    assert agui("bob", "refund", body(thread, after=cut)).last["code"] == "not_found"


@needs_langgraph
def test_refund_graph_one_approve_one_edit_one_reject(agui: Any, thread: str) -> None:
    refunds = [{"order_id": "G-1", "amount": 10}, {"order_id": "G-2", "amount": 20},
               {"order_id": "G-3", "amount": 30}]
    first = agui("alice", "refund_graph", body(thread, input={"refunds": refunds}))
    interrupts = first.interrupts
    assert len(interrupts) == 3 and len({i["id"].split(":")[0] for i in interrupts}) == 1
    started = [e["toolCallId"] for e in first.of("TOOL_CALL_START")]
    assert [i["toolCallId"] for i in interrupts] == started  # the model's own calls
    stream = agui("alice", "refund_graph", body(thread, resume=resumed(
        interrupts, APPROVE, {"approved": True, "editedArgs": {"order_id": "G-2", "amount": 2}},
        {"approved": False, "message": "no"})))
    assert stream.last["type"] == "RUN_FINISHED" and stream.last["outcome"]["type"] == "success"
    assert {r["toolCallId"] for r in stream.of("TOOL_CALL_RESULT")} == set(started)
    assert sorted(Refund.objects.values_list("order_id", "amount")) == [
        ("G-1", Decimal("10.00")), ("G-2", Decimal("2.00"))]


FRAMEWORK_REFUNDS = [
    pytest.param("refund_pydantic", True, marks=pytest.mark.skipif(
        importlib.util.find_spec("pydantic_ai") is None, reason="needs [pydantic-ai]")),
    pytest.param("refund_openai", False, marks=pytest.mark.skipif(
        importlib.util.find_spec("agents") is None, reason="needs [openai-agents]")),
]


@pytest.mark.parametrize(("agent", "edits"), FRAMEWORK_REFUNDS)
def test_the_pydantic_ai_and_openai_refunds_over_ag_ui(agui: Any, thread: str, agent: str,
                                                       edits: bool) -> None:
    """The framework agents behind the app are served as refund_graph is: one interrupt per
    call, each resumed; an edit only where the agent offers one (not the OpenAI SDK's)."""
    refunds = [{"order_id": "F-1", "amount": 10}, {"order_id": "F-2", "amount": 20},
               {"order_id": "F-3", "amount": 30}]
    first = agui("alice", agent, body(thread, input={"refunds": refunds}))
    interrupts = first.interrupts
    assert len(interrupts) == 3 and len({i["id"].split(":")[0] for i in interrupts}) == 1
    assert [i["reason"] for i in interrupts] == ["tool_call"] * 3
    assert all(("editedArgs" in i["responseSchema"]["properties"]) is edits
               for i in interrupts)
    second = {"approved": True, "editedArgs": {"order_id": "F-2", "amount": 2}} if edits else {
        "approved": False, "message": "not this one"}
    stream = agui("alice", agent, body(thread, resume=resumed(
        interrupts, APPROVE, second, {"approved": False, "message": "no"})))
    assert stream.last["type"] == "RUN_FINISHED" and stream.last["outcome"]["type"] == "success"
    expected = [("F-1", Decimal("10.00"))] + ([("F-2", Decimal("2.00"))] if edits else [])
    assert sorted(Refund.objects.values_list("order_id", "amount")) == expected


def test_a_first_approval_of_two_is_counted_and_the_run_stays_interrupted(
        agui: Any, thread: str, settings: Any) -> None:
    settings.SYMFONIC = {**settings.SYMFONIC, "APPROVAL_POLICY":
                         "tests.testapp.approvals.two_approvers_over_500"}
    first = agui("bob", "refund", body(thread, input={"order_id": "Q-1", "amount": 750}))
    stream = agui("admin", "refund", body(thread, resume=resumed(first.interrupts, APPROVE)))
    assert isinstance(stream, Stream)
    [interrupt] = stream.interrupts
    assert interrupt["id"] == first.interrupts[0]["id"]
    assert Decision.objects.filter(via="ag-ui", action="approve").count() == 1
    assert Pause.objects.get(pk=interrupt["id"].split(":")[0]).status == PauseStatus.PENDING


def test_a_failure_while_streaming_ends_with_run_error(agui: Any, thread: str,
                                                       monkeypatch: Any) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the database went away")

    monkeypatch.setattr("symfonic_django.api.agui.stream.rows_after", broken)
    stream = agui("alice", "refund", body(thread, input=REFUND))
    assert stream.types == ["RUN_STARTED", "RUN_ERROR"]
    assert stream.last["code"] == "server_error"
