"""The SDK's silent failures (openai-agents 0.24), each refused by the app with a typed
error and the rows unchanged, or impossible by construction (docs/openai-agents.md).

The first tests pin the SDK's own behaviour, so a release that changes it is noticed;
the others drive the same case through the app."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from types import SimpleNamespace
from typing import Any

import pytest
from agents import Agent, Runner, RunState
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

from symfonic_django import pauses
from symfonic_django.agents.openai_agents.prompts import check_call_ids
from symfonic_django.exceptions import InvalidAnswer, ToolCallMismatch
from symfonic_django.models import AgentState, Pause, Run, RunStatus
from symfonic_django.runs import queue_continuation
from symfonic_django.turns import execute_run
from tests.testapp.models import Refund

from ..handwritten import continuation_by_hand
from . import agents
from .agents import BODY_RUNS, BUILT, MODEL_CALLS
from .conftest import answer, paused, rows, run_turn

pytestmark = pytest.mark.django_db


# --- the SDK alone --------------------------------------------------------------------------

RAN: list[str] = []


def _sdk_agent() -> Agent[Any]:
    from agents import function_tool

    @function_tool(needs_approval=True)
    def pay(order_id: str) -> str:
        """Pay."""
        RAN.append(order_id)
        return "paid"

    def reply(call: Any) -> list[Any]:
        done = any(isinstance(i, dict) and i.get("type") == "function_call_output"
                   for i in call.input)
        return ([assistant_message("done")] if done
                else [function_call("pay", {"order_id": "A"}, call_id="c1")])

    return Agent(name="sdk", model=ScriptedModel([ModelStep.respond(reply)] * 4), tools=[pay])


async def _sdk_case(case: str) -> tuple[list[str | None], Any]:
    agent = _sdk_agent()
    text = (await Runner.run(agent, "pay A")).to_state().to_string()
    state = await RunState.from_string(agent, text)
    [item] = state.get_interruptions()
    if case == "not_pending":
        raw = item.raw_item.model_copy(update={"call_id": "c9", "id": "c9"})  # type: ignore[union-attr]
        state.approve(dataclasses.replace(item, raw_item=raw))
    elif case == "other_agent_object":
        [other] = (await RunState.from_string(_sdk_agent(), text)).get_interruptions()
        state.approve(other)
    elif case == "approve_then_reject":
        state.approve(item)
        state.reject(item, rejection_message="no")
    result = await Runner.run(agent, state)
    return [i.call_id for i in result.interruptions], result.final_output


@pytest.mark.parametrize(("case", "outcome"), [
    ("not_pending", (["c1"], None)),         # the same interruption back, nothing said
    ("other_agent_object", (["c1"], None)),  # likewise
    ("no_decision", (["c1"], None)),         # likewise
    ("approve_then_reject", ([], "done")),   # the reject won, silently
])
def test_the_sdk_alone_accepts_these_silently(case, outcome):
    RAN.clear()
    assert asyncio.run(_sdk_case(case)) == outcome
    assert RAN == []


def test_the_sdk_alone_runs_an_approved_tool_twice_from_one_state_string():
    async def twice() -> None:
        agent = _sdk_agent()
        text = (await Runner.run(agent, "pay A")).to_state().to_string()
        for _ in range(2):
            state = await RunState.from_string(agent, text)
            state.approve(state.get_interruptions()[0])
            await Runner.run(agent, state)

    RAN.clear()
    asyncio.run(twice())
    assert RAN == ["A", "A"]


# --- through the app ------------------------------------------------------------------------

def _replace_in_state(run: Run, old: str, new: str) -> None:
    row = AgentState.objects.get(run=run)
    assert old in row.state
    AgentState.objects.filter(run=run).update(state=row.state.replace(old, new))


def _continue_refused(pause: Pause, decisions: list[dict[str, Any]], reason: str) -> None:
    """Answer, then run the continuation: refused with ``reason``, the rows as they were."""
    answered = pauses.answer_pause(pause.pk, {"decisions": decisions})
    before = rows()
    execute_run(answered.continuation.pk)
    done = Run.objects.get(pk=answered.continuation.pk)
    assert done.status == RunStatus.FAILED and done.error["code"] == "resume_refused", done.error
    assert done.error["message"].startswith(f"{reason}: "), done.error
    assert rows() == before
    assert AgentState.objects.get(run=pause.run_id).consumed_by_id is None
    assert not Refund.objects.exists() and not BODY_RUNS


def test_a_decision_for_an_item_that_is_not_pending_is_refused():
    """The stored state waits for another call than the one the pause asked about."""
    run, pause = paused("oai_with_lookup", {})
    _replace_in_state(run, '"pay"', '"pay-again"')
    _continue_refused(pause, [{"type": "approve"}], "unknown_interrupt")


def test_a_decision_for_a_call_with_other_arguments_is_refused():
    run, pause = paused("oai_with_lookup", {})
    _replace_in_state(run, '{\\"order_id\\":\\"A\\",\\"amount\\":1}',
                      '{\\"order_id\\":\\"Z\\",\\"amount\\":1}')
    _continue_refused(pause, [{"type": "approve"}], "decisions_mismatch")


def test_a_resume_of_a_completed_state_is_refused_and_the_model_is_not_asked():
    run, pause = paused("oai_with_lookup", {})

    async def completed() -> str:
        agent = Agent(name="oai_with_lookup", model=ScriptedModel([[assistant_message("hi")]]))
        return (await Runner.run(agent, "hello")).to_state().to_string()

    AgentState.objects.filter(run=run).update(state=asyncio.run(completed()))
    asked = MODEL_CALLS["oai_with_lookup"]
    _continue_refused(pause, [{"type": "approve"}], "thread_finished")
    assert MODEL_CALLS["oai_with_lookup"] == asked


def test_a_resume_with_no_decision_is_refused():
    run, pause = paused()
    continuation = continuation_by_hand(run, pause, {})
    before = rows()
    execute_run(continuation.pk)
    continuation.refresh_from_db()
    assert continuation.error["code"] == "resume_refused"
    assert continuation.error["message"].startswith("unknown_interrupt: ")
    assert rows() == before and AgentState.objects.get(run=run).consumed_by_id is None


def test_an_answer_naming_another_pause_is_refused():
    run, pause = paused()
    continuation = continuation_by_hand(run, pause, {
        str(pause.pk): {"decisions": [{"type": "approve"}] * 3},
        str(uuid.uuid4()): {"decisions": [{"type": "approve"}]}})
    before = rows()
    execute_run(continuation.pk)
    continuation.refresh_from_db()
    assert continuation.error["message"].startswith("unknown_interrupt: ")
    assert rows() == before and not Refund.objects.exists()


def test_approve_then_reject_cannot_be_given_one_decision_per_call_is():
    """Impossible by construction: an answer has exactly one decision per call (refused
    when it has more), and the adapter applies each once, to a state stored before any."""
    run, pause = paused("oai_with_lookup", {})
    before = rows()
    with pytest.raises(InvalidAnswer, match="Expected 1 decision"):
        pauses.answer_pause(pause.pk, {"decisions": [{"type": "approve"},
                                                     {"type": "reject", "message": "no"}]})
    assert rows() == before
    assert '"approvals": {}' in AgentState.objects.get(run=run).state.replace('":{}', '": {}')


def test_an_edit_is_not_offered_and_refused_when_given():
    run, pause = paused("oai_with_lookup", {})
    edit = {"type": "edit", "edited_action": {"name": "refund",
                                              "args": {"order_id": "A", "amount": 2}}}
    with pytest.raises(InvalidAnswer):
        pauses.answer_pause(pause.pk, {"decisions": [edit]})
    assert not Refund.objects.exists() and Pause.objects.get(pk=pause.pk).status == "pending"


def test_items_of_another_agent_object_cannot_be_approved_each_turn_restores_its_own():
    """Impossible by construction: the continuation restores the state with its own turn's
    agent (another object than the paused turn's) and decides the items of that state."""
    run, pause = paused("oai_with_lookup", {})
    done = answer(pause, [{"type": "approve"}])
    assert done.status == RunStatus.COMPLETED, done.error
    assert len(BUILT) == 2 and BUILT[0] is not BUILT[1]
    assert BODY_RUNS == {"A": 1}


def test_a_second_continuation_of_the_same_pause_is_refused():
    """A continuation row the pause's answer did not make is refused before it sees the
    state."""
    run, pause = paused()
    first = answer(pause, [{"type": "approve"}] * 3)
    assert first.status == RunStatus.COMPLETED
    second = queue_continuation(run, resumed_from=pause, dispatch=False,
                                answers={str(pause.pk): {"decisions": [{"type": "approve"}] * 3}})
    before = rows()
    execute_run(second.pk)
    second.refresh_from_db()
    assert second.status == RunStatus.FAILED and second.error["code"] == "lineage_refused"
    assert rows() == before and BODY_RUNS == {"A-1": 1, "B-2": 1, "C-3": 1}


def test_one_call_id_for_two_calls_of_a_step_is_refused_before_anything_is_stored():
    """The SDK refuses it first (``ModelBehaviorError``: the turn fails ``agent_error``);
    the adapter's own check refuses it too, should a release let one through."""
    run = run_turn("oai_same_id_twice", {})
    assert run.status == RunStatus.FAILED and "reused a tool call ID" in run.error["message"]
    assert not Pause.objects.exists() and not AgentState.objects.exists()

    item = SimpleNamespace(call_id="dup")
    with pytest.raises(ToolCallMismatch, match="more than one call of one step"):
        check_call_ids([item, item])  # type: ignore[list-item]
    with pytest.raises(ToolCallMismatch, match="longer than 200"):
        check_call_ids([SimpleNamespace(call_id="x" * 201)])  # type: ignore[list-item]


def test_call_ids_of_an_earlier_step_are_refused():
    """The SDK refuses a completed call's id reused; the adapter refuses asking a pause
    about call ids an earlier run of the conversation asked about."""
    run, pause = paused("oai_asks_twice", {})
    done = answer(pause, [{"type": "approve"}])
    assert done.status == RunStatus.FAILED and "reused a completed tool call ID" in \
        done.error["message"]
    assert not AgentState.objects.filter(run=done).exists()
    assert list(Pause.objects.values_list("pk", flat=True)) == [pause.pk]
    assert agents.BODY_RUNS == {"A": 1}


def test_a_pause_about_call_ids_asked_by_an_earlier_run_is_refused(monkeypatch):
    """Should the SDK let a reused call id through, the pause it would ask is an earlier
    run's (one key): refused before the state is stored (the key made equal here)."""
    from symfonic_django.agents.openai_agents import agent as adapter

    run, first = paused("oai_two_steps", {})
    monkeypatch.setattr(adapter, "pause_key", lambda ids: first.idempotency_key)
    done = answer(first, [{"type": "approve"}])
    assert done.status == RunStatus.FAILED and done.error["code"] == "tool_call_mismatch", \
        done.error
    assert not AgentState.objects.filter(run=done).exists()
    assert list(Pause.objects.values_list("pk", flat=True)) == [first.pk]
