"""A paused run's framework state is taken by one continuation, and a recorded tool call
is the call id with its tool and arguments (``agents.stored_state``, ``agents.recorded``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from symfonic_django import pauses, runs
from symfonic_django.agents import stored_state
from symfonic_django.models import AgentState, Pause, Run, RunStatus, ToolResult
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run
from tests.testapp.models import Refund

from .agents import BODY_RUNS

pytestmark = pytest.mark.django_db


def paused(input: dict[str, Any], agent: str = "stateful") -> Run:
    run = start_run(agent, input, scope="acme", dispatch=False)
    execute_run(run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.PAUSED, run.error
    return run


def approve(run: Run) -> Run:
    [pause] = Pause.objects.filter(run=run)
    continuation = pauses.answer_pause(pause.pk, {"decisions": [{"type": "approve"}]})
    execute_run(continuation.continuation.pk)
    return Run.objects.get(pk=continuation.continuation.pk)


def rows() -> tuple[Any, ...]:
    return (list(AgentState.objects.values_list("run_id", "consumed_by_id", "state")),
            list(ToolResult.objects.values_list("tool_call_id", "result")),
            Refund.objects.count())


def test_the_state_is_stored_before_the_pause_and_taken_by_the_continuation():
    run = paused({"orders": ["A", "B"]})
    row = AgentState.objects.get(run=run)
    assert row.framework == "test" and json.loads(row.state)["orders"] == ["A", "B"]
    assert row.consumed_by_id is None
    done = approve(run)
    assert done.status == RunStatus.COMPLETED, done.error
    row.refresh_from_db()
    assert row.consumed_by_id == done.pk and row.consumed_at is not None
    assert sorted(Refund.objects.values_list("order_id", flat=True)) == ["A", "B"]


def second_continuation(run: Run, first: Run | None, answer: Any) -> Run:
    """A continuation row written by hand (an answer replayed, a forged row)."""
    [pause] = Pause.objects.filter(run=run)
    return Run.objects.create(agent="stateful", scope_key=run.scope_key, parent=run,
                              root_id=run.root_id or run.pk, resumed_from=pause,
                              input={"answers": {str(pause.pk): answer}})


def test_a_continuation_the_pauses_did_not_make_is_refused_and_changes_nothing():
    run = paused({"orders": ["A"]})
    first = approve(run)
    before = rows()
    second = second_continuation(run, first, {"decisions": [{"type": "approve"}]})
    execute_run(second.pk)
    second.refresh_from_db()
    assert second.status == RunStatus.FAILED and second.error["code"] == "lineage_refused"
    assert rows() == before and first.status == RunStatus.COMPLETED
    assert BODY_RUNS == {"call-A": 1}


def test_a_forged_continuation_run_first_does_not_take_the_state_from_the_real_one():
    """Its answers are its own (approve what the reviewer may reject): it never sees the
    state, and the continuation the answer made still takes it."""
    run = paused({"orders": ["A"]})
    forged = second_continuation(run, None, {"decisions": [{"type": "approve"}]})
    execute_run(forged.pk)
    forged.refresh_from_db()
    assert forged.error["code"] == "lineage_refused"
    assert AgentState.objects.get(run=run).consumed_by_id is None and not Refund.objects.exists()
    done = approve(run)
    assert done.status == RunStatus.COMPLETED and BODY_RUNS == {"call-A": 1}


def test_a_state_taken_is_not_handed_to_the_pauses_next_continuation():
    """Should the pauses name another continuation after the first took the state (a row
    changed by hand), that one is refused state_consumed."""
    run = paused({"orders": ["A"]})
    first = approve(run)
    before = rows()
    second = second_continuation(run, first, {"decisions": [{"type": "approve"}]})
    Pause.objects.filter(run=run).update(continuation=second)
    execute_run(second.pk)
    second.refresh_from_db()
    assert second.status == RunStatus.FAILED and second.error["code"] == "state_consumed"
    assert rows() == before and BODY_RUNS == {"call-A": 1}


def test_the_same_continuation_claimed_again_retakes_the_state_and_replays_its_calls():
    run = paused({"orders": ["A", "B"]})
    done = approve(run)
    # As if its worker died after the effects: the run is failed and retried.
    Run.objects.filter(pk=done.pk).update(status=RunStatus.FAILED)
    runs.retry(done.pk, comment="again")
    execute_run(done.pk)
    done.refresh_from_db()
    assert done.status == RunStatus.COMPLETED, done.error
    assert BODY_RUNS == {"call-A": 1, "call-B": 1}
    assert Refund.objects.count() == 2


def test_a_turn_that_runs_again_finds_the_state_it_paused_with():
    run = paused({"orders": ["A"]})
    AgentState.objects.filter(run=run).update(state=json.dumps({"orders": ["kept"], "ids": None}))
    Run.objects.filter(pk=run.pk).update(status=RunStatus.FAILED)
    runs.retry(run.pk, comment="again")
    execute_run(run.pk)
    assert json.loads(AgentState.objects.get(run=run).state)["orders"] == ["kept"]


def test_a_call_id_reused_for_other_arguments_is_refused_before_it_runs():
    run = paused({"orders": ["A", "B"], "ids": ["same", "same"]})
    done = approve(run)
    assert done.status == RunStatus.FAILED and done.error["code"] == "tool_call_mismatch"
    # The first call ran and is recorded; the second was not answered with its result.
    assert BODY_RUNS == {"same": 1}
    assert list(Refund.objects.values_list("order_id", flat=True)) == ["A"]


@pytest.mark.parametrize("call_id", ["", "x" * 201, "nul<NUL>id"])
def test_a_call_id_that_cannot_key_a_record_is_refused(call_id):
    run = paused({"orders": ["A"], "ids": [call_id]})
    done = approve(run)
    assert done.status == RunStatus.FAILED and done.error["code"] == "tool_call_mismatch"
    assert not ToolResult.objects.exists() and not Refund.objects.exists()


@pytest.mark.parametrize("state", ["nul<NUL>", "x" * (stored_state.MAX_STATE_CHARS + 1)])
def test_a_state_that_cannot_be_stored_fails_the_turn_and_stores_nothing(state):
    run = start_run("stateful", {"orders": ["A"], "raw_state": state}, scope="acme",
                    dispatch=False)
    execute_run(run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.error["code"] == "configuration_error"
    assert not AgentState.objects.exists() and not Pause.objects.exists()


def test_another_frameworks_agent_does_not_read_the_state():
    run = paused({"orders": ["A"]})
    Run.objects.filter(pk=run.pk).update(agent="other_framework")
    done = approve(run)
    assert done.status == RunStatus.FAILED and "register the agent" in done.error["message"]
    assert AgentState.objects.get(run=run).consumed_by_id is None and not Refund.objects.exists()
