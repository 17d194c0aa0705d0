"""What a resumed agent reads on its continuation, on every way a pause can end.

Each test runs a real turn to its pause, ends the pause through the pause state
machine (approve, edit, reject, respond, a question's answer, an expiry with
``ON_EXPIRE="resume"``), runs the continuation, and asserts what the agent
read: ``continuation.actions`` (the proposal and the decision on each action),
``continuation.pauses`` and ``continuation.pause``. The agent writes what it
read into its run's output, so the assertions are on stored rows.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from symfonic_django import AnsweredPause, ReviewedAction, pauses, request_pause, runs
from symfonic_django.events import TurnCompleted
from symfonic_django.models import Pause, Run, RunStatus
from symfonic_django.turns import Continuation, execute_run

from .conftest import paused_run

pytestmark = pytest.mark.django_db

REFUND = {"order_id": "A-1", "amount": 99.99}
NOTIFY = {"order_id": "A-1", "text": "Your refund is on its way."}
EVERY_DECISION = ["approve", "edit", "reject", "respond"]


def approval(*actions: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"action_requests": [{"name": name, "args": args} for name, args in actions],
            "review_configs": [{"action_name": name, "allowed_decisions": EVERY_DECISION}
                               for name, _ in actions]}


QUESTION = {"question": "Which carrier?"}
CARRIER = {"type": "object", "properties": {"carrier": {"enum": ["dhl", "ups"]}},
           "required": ["carrier"]}


class ReadingAgent:
    """Asks the pauses its input names, then completes with what its continuation says."""

    async def start_typed(self, context: Any, input: Any):
        for n, ask in enumerate(input["ask"]):
            if ask == "question":
                await request_pause(kind="question", prompt=QUESTION, answer_schema=CARRIER,
                                    idempotency_key=f"ask-{n}")
            else:
                await request_pause(kind="approval", prompt=approval(*ask),
                                    idempotency_key=f"ask-{n}")
        yield TurnCompleted(output=None)

    async def continue_recovered_typed(self, continuation: Any, **kwargs: Any):
        actions = continuation.actions
        assert all(isinstance(action, ReviewedAction) for action in actions)
        assert all(isinstance(p, AnsweredPause) for p in continuation.pauses.values())
        yield TurnCompleted(output={
            "actions": [{**asdict(action), "approved": action.approved, "edited": action.edited}
                        for action in actions],
            "pauses": [{"pause_id": p.pause_id, "kind": p.kind, "prompt": p.prompt,
                        "answer": p.answer, "expired": p.expired,
                        "actions": len(p.actions)} for p in continuation.pauses.values()],
        })


@pytest.fixture(autouse=True)
def reading_agent(settings: Any) -> None:
    settings.SYMFONIC = {**settings.SYMFONIC, "AGENTS": {
        **settings.SYMFONIC["AGENTS"], "reading": lambda scope: ReadingAgent()}}


def ask(*asks: Any) -> tuple[Run, list[Pause]]:
    run, _ = paused_run("reading", {"ask": list(asks)})
    return run, list(Pause.objects.filter(run=run).order_by("created_at"))


def read(continuation: Run | None) -> dict[str, Any]:
    """Run the continuation; what its agent read."""
    assert continuation is not None
    assert execute_run(continuation.pk) == RunStatus.COMPLETED
    continuation.refresh_from_db()
    output: dict[str, Any] = continuation.output
    return output


def action(pause: Pause, name: str, proposed: dict[str, Any], decision: str,
           approved_args: dict[str, Any] | None, message: str = "") -> dict[str, Any]:
    return {"pause_id": str(pause.pk), "name": name, "proposed_args": proposed,
            "decision": decision, "approved_args": approved_args, "message": message,
            "approved": approved_args is not None, "edited": decision == "edit"}


REFUND_ONLY = [("refund", REFUND)]


def test_a_plain_approve_gives_the_proposed_args_as_the_approved_ones(tenants):
    _, [pause] = ask(REFUND_ONLY)
    read_ = read(pauses.approve(pause.pk).continuation)
    assert read_["actions"] == [action(pause, "refund", REFUND, "approve", REFUND)]
    assert read_["pauses"] == [{"pause_id": str(pause.pk), "kind": "approval",
                                "prompt": pause.prompt,
                                "answer": {"decisions": [{"type": "approve"}]},
                                "expired": False, "actions": 1}]


def test_an_edit_gives_the_edited_args_and_keeps_the_proposal_beside_them(tenants):
    _, [pause] = ask(REFUND_ONLY)
    edited = {"order_id": "A-1", "amount": 50}
    read_ = read(pauses.approve(pause.pk, edited_args=edited).continuation)
    assert read_["actions"] == [action(pause, "refund", REFUND, "edit", edited)]


def test_a_rejection_gives_no_args_to_run_and_the_reviewers_words(tenants):
    _, [pause] = ask(REFUND_ONLY)
    read_ = read(pauses.reject(pause.pk, comment="Not before Nov 28.").continuation)
    assert read_["actions"] == [action(pause, "refund", REFUND, "reject", None,
                                       "Not before Nov 28.")]


def test_a_rejection_without_words_gives_an_empty_message(tenants):
    _, [pause] = ask(REFUND_ONLY)
    read_ = read(pauses.reject(pause.pk).continuation)
    assert read_["actions"] == [action(pause, "refund", REFUND, "reject", None)]


def test_a_response_gives_no_args_to_run_and_the_message(tenants):
    _, [pause] = ask(REFUND_ONLY)
    read_ = read(pauses.respond(pause.pk, "Ask the customer first.").continuation)
    assert read_["actions"] == [action(pause, "refund", REFUND, "respond", None,
                                       "Ask the customer first.")]


def test_a_mixed_answer_is_read_action_by_action_in_the_order_proposed(tenants):
    _, [pause] = ask([("refund", REFUND), ("notify", NOTIFY)])
    edited = {**NOTIFY, "text": "Refunded."}
    answer = {"decisions": [
        {"type": "reject", "message": "Too much."},
        {"type": "edit", "edited_action": {"name": "notify", "args": edited}}]}
    read_ = read(pauses.answer_pause(pause.pk, answer).continuation)
    assert read_["actions"] == [action(pause, "refund", REFUND, "reject", None, "Too much."),
                                action(pause, "notify", NOTIFY, "edit", edited)]
    assert read_["pauses"][0]["answer"] == answer


def test_a_questions_answer_is_the_pauses_answer_and_it_has_no_actions(tenants):
    _, [pause] = ask("question")
    read_ = read(pauses.answer_pause(pause.pk, {"carrier": "ups"}).continuation)
    assert read_ == {"actions": [], "pauses": [{
        "pause_id": str(pause.pk), "kind": "question", "prompt": QUESTION,
        "answer": {"carrier": "ups"}, "expired": False, "actions": 0}]}


@pytest.fixture
def resume_on_expiry(settings: Any) -> None:
    settings.SYMFONIC = {**settings.SYMFONIC, "ON_EXPIRE": "resume"}


def expire(pause: Pause) -> Run | None:
    """Time passes (test setup), then the expiry sweep ends the pause."""
    Pause.objects.filter(pk=pause.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    resolution = pauses.expire(pause.pk)
    assert resolution is not None
    return resolution.continuation


def test_an_expired_approval_resumes_with_every_action_expired_and_none_to_run(
        tenants, resume_on_expiry):
    _, [pause] = ask([("refund", REFUND), ("notify", NOTIFY)])
    read_ = read(expire(pause))
    assert read_["actions"] == [action(pause, "refund", REFUND, "expired", None),
                                action(pause, "notify", NOTIFY, "expired", None)]
    assert [(p["expired"], p["answer"]) for p in read_["pauses"]] == [
        (True, {"timeout": True})]


def test_an_expired_question_resumes_marked_expired_with_the_timeout_answer(
        tenants, resume_on_expiry):
    _, [pause] = ask("question")
    read_ = read(expire(pause))
    assert read_ == {"actions": [], "pauses": [{
        "pause_id": str(pause.pk), "kind": "question", "prompt": QUESTION,
        "answer": {"timeout": True}, "expired": True, "actions": 0}]}


def test_several_pauses_are_read_in_the_order_asked_each_with_its_own_decisions(
        tenants, resume_on_expiry):
    _, [refund, question, notify] = ask(REFUND_ONLY, "question", [("notify", NOTIFY)])
    assert expire(question) is None  # the others are still pending
    assert pauses.approve(notify.pk).continuation is None
    read_ = read(pauses.approve(refund.pk, edited_args={**REFUND, "amount": 10}).continuation)
    assert read_["actions"] == [
        action(refund, "refund", REFUND, "edit", {**REFUND, "amount": 10}),
        action(notify, "notify", NOTIFY, "approve", NOTIFY)]
    assert [(p["pause_id"], p["kind"], p["expired"]) for p in read_["pauses"]] == [
        (str(refund.pk), "approval", False), (str(question.pk), "question", True),
        (str(notify.pk), "approval", False)]


def test_continuation_pause_is_the_single_pause_and_refuses_to_choose_among_several():
    one = AnsweredPause("p1", "question", QUESTION, {"carrier": "dhl"})
    two = AnsweredPause("p2", "question", QUESTION, {"carrier": "ups"})
    run = Run(agent="reading")
    assert Continuation(run, "r", {"p1": one.answer}, None, {"p1": one}).pause is one
    several = Continuation(run, "r", {"p1": one.answer, "p2": two.answer}, None,
                           {"p1": one, "p2": two})
    with pytest.raises(ValueError, match="several pauses"):
        assert several.pause


def test_the_example_refund_agent_refunds_the_proposal_on_a_plain_approve(tenants):
    from tests.testapp.models import Refund

    _, pause = paused_run("refund", {"order_id": "A-9", "amount": 12.5})
    done = read(pauses.approve(pause.pk).continuation)
    assert done["refunded"] is True and done["amount"] == "12.50"
    assert list(Refund.objects.values_list("order_id", "amount")) == [("A-9", 12.5)]


def test_an_answer_that_never_went_through_the_pause_fails_the_turn_when_read(tenants):
    """A continuation whose answer was written into its input by hand (two decisions for one
    action) is checked again against the prompt as the agent reads it: the turn fails,
    nothing runs."""
    run, [pause] = ask(REFUND_ONLY)
    forged = runs.queue_continuation(run, resumed_from=pause, dispatch=False, answers={
        str(pause.pk): {"decisions": [{"type": "approve"}, {"type": "approve"}]}})
    assert execute_run(forged.pk) == RunStatus.FAILED
    forged.refresh_from_db()
    assert forged.error["code"] == "agent_error"
    assert "Expected 1 decision(s)" in forged.error["message"] and forged.output is None


def test_a_pause_of_another_run_named_in_the_answers_is_not_read(tenants):
    run, [pause] = ask(REFUND_ONLY)
    _, [stranger] = ask([("notify", NOTIFY)])
    forged = runs.queue_continuation(run, resumed_from=pause, dispatch=False, answers={
        str(pause.pk): {"decisions": [{"type": "reject"}]},
        str(stranger.pk): {"decisions": [{"type": "approve"}]}, "not-a-pause": None})
    read_ = read(forged)
    assert [(a["name"], a["decision"]) for a in read_["actions"]] == [("refund", "reject")]
    assert [p["pause_id"] for p in read_["pauses"]] == [str(pause.pk)]
