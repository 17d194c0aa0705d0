"""The adapter's mappings, one by one: an interrupt to a pause, an answer to a resume
value, stream chunks to events; and its construction."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage
from langgraph.graph import START, StateGraph
from langgraph.types import Interrupt

from symfonic_django.agents.langgraph import (
    STRICT_RESUME,
    LangGraphAgent,
    Transcript,
    langgraph_agent,
    pause_request,
    resume_value,
)
from symfonic_django.events import MessageCompleted, MessageDelta, ToolCompleted, ToolStarted
from symfonic_django.exceptions import (
    InteractionConfigurationError,
    InvalidRunInput,
    ResumeRefused,
)
from symfonic_django.runs import start_run

from .graphs import questions_graph

ID = "0" * 32
HITL = {"action_requests": [{"name": "ship", "args": {"qty": 1}},
                            {"name": "ship", "args": {"qty": 2}}],
        "review_configs": [{"action_name": "ship", "allowed_decisions": ["approve", "reject"]}]}
PER_CALL_SCHEMA = {
    "$defs": {"ApproveDecision": {"properties": {"type": {"const": "approve"}}},
              "RespondDecision": {"properties": {"type": {"const": "respond"},
                                                 "message": {"type": "string"}}}},
    "oneOf": [{"$ref": "#/$defs/ApproveDecision"}, {"$ref": "#/$defs/RespondDecision"}]}
TOOL_APPROVAL = {"type": "tool_approval", "tool_call_id": "c1", "name": "ship",
                 "args": {"qty": 1}, "description": "Ship one"}
INBOX = {"action_request": {"action": "ship", "args": {"qty": 1}},
         "config": {"allow_accept": True, "allow_ignore": True, "allow_edit": False,
                    "allow_respond": True}}


def test_strict_resume_is_langgraphs_own_internal_key():
    from langgraph._internal._constants import CONFIG_KEY_STRICT_RESUME

    assert STRICT_RESUME == CONFIG_KEY_STRICT_RESUME


def test_each_interrupt_shape_becomes_its_pause():
    batched = pause_request(Interrupt(HITL, ID))
    assert (batched.kind, batched.prompt, batched.shape) == ("approval", HITL, "hitl")

    per_call = pause_request(Interrupt(TOOL_APPROVAL, ID, response_schema=PER_CALL_SCHEMA))
    assert per_call.kind == "approval" and per_call.prompt == {
        "action_requests": [{"name": "ship", "args": {"qty": 1}, "description": "Ship one"}],
        "review_configs": [{"action_name": "ship", "allowed_decisions": ["approve", "respond"]}]}

    inbox = pause_request(Interrupt(INBOX, ID))
    assert inbox.prompt["review_configs"][0]["allowed_decisions"] == [
        "approve", "respond", "reject"]

    question = pause_request(Interrupt({"question": "Why?", "when": object}, ID,
                                       response_schema={"type": "string"}))
    assert question.kind == "question" and question.answer_schema == {"type": "string"}
    assert question.prompt["question"] == "Why?" and isinstance(question.prompt["when"], str)


def test_answers_become_what_each_shape_resumes_with():
    approve_reject = {"decisions": [{"type": "approve"}, {"type": "reject", "message": "no"}]}
    assert resume_value(Interrupt(HITL, ID), approve_reject) == approve_reject
    assert resume_value(Interrupt(TOOL_APPROVAL, ID, response_schema=PER_CALL_SCHEMA),
                        {"decisions": [{"type": "respond", "message": "done by hand"}]}) == {
        "type": "respond", "message": "done by hand"}
    assert resume_value(Interrupt([INBOX], ID), {"decisions": [{"type": "reject"}]}) == [
        {"type": "ignore", "args": None}]
    assert resume_value(Interrupt(INBOX, ID), {"decisions": [{"type": "approve"}]}) == {
        "type": "accept", "args": None}
    assert resume_value(Interrupt({"question": "Why?"}, ID), {"timeout": True}) == {
        "timeout": True}


@pytest.mark.parametrize("answer", [
    {"decisions": [{"type": "approve"}]},
    {"decisions": [{"type": "approve"}, {"type": "edit", "edited_action": {
        "name": "ship", "args": {"qty": 3}}}]},
    {"answer": "yes"},
])
def test_an_answer_that_does_not_fit_the_pending_request_is_refused(answer):
    with pytest.raises(ResumeRefused) as refused:
        resume_value(Interrupt(HITL, ID), answer)
    assert refused.value.reason == "decisions_mismatch"
    assert refused.value.code == "resume_refused"


def test_an_expired_approval_rejects_or_responds_where_it_may_and_is_refused_where_not():
    assert resume_value(Interrupt(HITL, ID), {"timeout": True}) == {"decisions": [
        {"type": "reject", "message": "The approval timed out."}] * 2}
    assert resume_value(Interrupt(TOOL_APPROVAL, ID, response_schema=PER_CALL_SCHEMA),
                        {"timeout": True}) == {"type": "respond",
                                               "message": "The approval timed out."}
    approve_only = {**HITL, "review_configs": [{"action_name": "ship",
                                                "allowed_decisions": ["approve"]}]}
    with pytest.raises(ResumeRefused, match="neither reject nor respond"):
        resume_value(Interrupt(approve_only, ID), {"timeout": True})


def test_each_message_and_tool_call_is_one_event_however_often_updates_repeat_it():
    asked = AIMessage("Shipping.", id="m1", tool_calls=[
        {"name": "ship", "args": {"qty": 1}, "id": "c1", "type": "tool_call"}])
    transcript = Transcript()
    assert transcript.events("messages", (AIMessageChunk(content="Ship"), {})) == [
        MessageDelta(text="Ship")]
    assert transcript.events("updates", {"model": {"messages": [asked]}}) == [
        MessageCompleted(text="Shipping."),
        ToolStarted(tool_call_id="c1", name="ship", args={"qty": 1})]
    # A parent repeating its subgraph's message, a middleware writing it again: nothing new.
    assert transcript.events("updates", {"sub": {"messages": [asked]}}) == []
    result = ToolMessage('{"shipped": 1}', tool_call_id="c1", name="ship")
    assert transcript.events("updates", {"tools": {"messages": [result]}}) == [
        ToolCompleted(tool_call_id="c1", name="ship", args={"qty": 1}, result={"shipped": 1})]
    assert transcript.events("updates", {"__interrupt__": ()}) == []
    # A continuation starts from the thread as it is: what it holds was said already.
    assert Transcript({"messages": [asked, result]}).events(
        "updates", {"model": {"messages": [asked]}}) == []


def test_a_graph_without_a_checkpointer_is_refused():
    builder: StateGraph[Any] = StateGraph(dict)
    builder.add_node("noop", lambda state: {})
    builder.add_edge(START, "noop")
    with pytest.raises(InteractionConfigurationError, match="needs a checkpointer"):
        LangGraphAgent(builder.compile())
    assert LangGraphAgent(questions_graph(), checkpointer=_saver()).graph.checkpointer


@pytest.mark.django_db
def test_the_factorys_input_schema_refuses_a_run_before_it_exists(settings, tenants):
    settings.SYMFONIC = {**settings.SYMFONIC, "AGENTS": {
        **settings.SYMFONIC["AGENTS"], "lg_typed": f"{__name__}.typed_agent"}}
    with pytest.raises(InvalidRunInput):
        start_run("lg_typed", {"ask": "yes"}, scope="acme", dispatch=False)
    assert start_run("lg_typed", {"ask": True}, scope="acme", dispatch=False)


def _saver() -> Any:
    from symfonic_django.checkpoint import DjangoSaver

    return DjangoSaver()


typed_agent = langgraph_agent(lambda scope: questions_graph(), checkpointer=_saver(),
                              input_schema={"type": "object",
                                            "properties": {"ask": {"type": "boolean"}}})
