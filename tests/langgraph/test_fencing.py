"""``fenced_tool``: a tool's side effect happens once per root run and tool call, however
often LangGraph runs its node, and never after its worker lost the run's lease."""

from __future__ import annotations

from typing import Any

import pytest

from symfonic_django import pauses, runs
from symfonic_django.agents.fencing import fenced_tool
from symfonic_django.exceptions import InteractionConfigurationError
from symfonic_django.models import RunStatus, ToolResult
from tests.testapp.models import Refund

from .conftest import continue_run, events_of, pauses_of, run_turn
from .graphs import CALLS, FAIL_ONCE, refund

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("tool", ["ship", "async_refund"])
def test_a_side_effect_after_interrupt_happens_once_when_its_tool_node_runs_again(tool):
    """A sync and an async tool: the effect commits, a sibling tool then crashes the task,
    and the retried continuation runs the whole ToolNode again."""
    agent = "lg_tool_node" if tool == "ship" else "lg_async_tool"
    run = run_turn(agent, {"orders": ["A"], "check": ["A"], "tool": tool})
    [pause] = pauses_of(run)
    FAIL_ONCE.add("flaky_check")

    continuation = pauses.answer_pause(pause.pk, "yes").continuation
    failed = continue_run(continuation.pk)
    assert failed.status == RunStatus.FAILED and "checker crashed" in failed.error["message"]
    assert Refund.objects.filter(order_id="A").count() == 1
    assert ToolResult.objects.get(tool_call_id="ship-A").is_completed

    runs.retry(failed.pk, comment="the checker is back")
    done = continue_run(failed.pk)
    assert done.status == RunStatus.COMPLETED
    assert Refund.objects.filter(order_id="A").count() == 1
    counted = "ship:A" if tool == "ship" else "async_refund"
    assert CALLS[counted] == 1  # the body ran once after the answer; the retry replayed it
    results = {d["tool_call_id"]: d["result"] for kind, d in events_of(done)
               if kind == "tool.completed"}
    assert results["ship-A"] == ToolResult.objects.get(tool_call_id="ship-A").result
    assert results["check-A"] == "A checked"


def lost_lease(run_input: dict[str, Any]) -> None:
    run = run_turn("lg_plain_tools", {"orders": ["L-1"], "tool": "frozen_refund", **run_input})
    assert not Refund.objects.exists()
    assert not ToolResult.objects.filter(tool_call_id="ship-L-1", completed_at__isnull=False)
    # The reaper owns the run's ending: it failed it, and no later write of the worker landed.
    assert run.status == RunStatus.FAILED and run.error["code"] == "lease_expired"
    assert [kind for kind, _ in events_of(run)][-1] == "turn.failed"


@pytest.mark.django_db(transaction=True)
def test_a_worker_that_lost_its_lease_before_the_tool_does_not_run_it(tenants):
    lost_lease({"reap_before": True, "args": {"freeze": False}})
    assert CALLS["frozen_refund"] == 0


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_worker_that_lost_its_lease_during_the_tool_commits_no_effect(tenants):
    """On PostgreSQL the reaper can fail the run while the effect runs (the fence locks the
    run row only to commit); on SQLite the fence's IMMEDIATE transaction holds the
    database's write lock, so the reaper waits for the commit instead."""
    lost_lease({})
    assert CALLS["frozen_refund"] == 1


def test_a_result_that_is_not_json_is_refused_and_its_effect_rolled_back():
    run = run_turn("lg_plain_tools", {"orders": ["J-1"], "tool": "unrecordable"})
    assert run.status == RunStatus.FAILED
    assert "which is not JSON" in run.error["message"]
    assert not Refund.objects.exists() and not ToolResult.objects.exists()


def test_a_fenced_tool_refuses_to_run_outside_an_agent_turn():
    call = {"name": "refund", "args": {"order_id": "X", "amount": 1}, "id": "c-1",
            "type": "tool_call"}
    with pytest.raises(InteractionConfigurationError, match="outside an agent turn"):
        refund.invoke(call)
    assert not Refund.objects.exists()


def test_the_model_sees_the_functions_own_arguments_and_no_call_id():
    assert refund.name == "refund" and refund.description == "Refund an order."
    schema = refund.tool_call_schema.model_json_schema()
    assert set(schema["properties"]) == {"order_id", "amount"}


def test_a_function_that_takes_the_call_id_itself_is_refused():
    def tool(order_id: str, tool_call_id: str) -> Any:
        return order_id

    with pytest.raises(InteractionConfigurationError, match="injects it"):
        fenced_tool(tool)


def test_a_call_id_the_model_reuses_for_other_arguments_is_refused_not_answered_twice():
    """Two calls under one id: the second is not handed the first one's result."""
    run = run_turn("lg_plain_tools", {"orders": ["D-1", "D-2"], "tool": "frozen_refund",
                                      "args": {"freeze": False},
                                      "ids": {"D-1": "dup", "D-2": "dup"}})
    assert run.status == RunStatus.FAILED and run.error["code"] == "tool_call_mismatch", run.error
    assert CALLS["frozen_refund"] == 1
    [recorded] = ToolResult.objects.all()
    assert recorded.tool_call_id == "dup" and recorded.result["order_id"] in ("D-1", "D-2")
    assert Refund.objects.count() == 1
