"""The example's ``refund_pydantic``: a Pydantic AI agent behind the app. Several refunds
in one request are one approval pause with an action per refund, held to the tool's own
schema (refund_graph's bounds); each approved or edited action is one ``Refund`` row,
exactly once; a rejected one is none; bad input never becomes a run."""

from __future__ import annotations

import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from example_project.agents import REFUND_ARGS_SCHEMA
from example_project.shop.management.commands.seed_demo import seed_users
from example_project.shop.models import Refund
from symfonic_django import pauses
from symfonic_django.exceptions import InvalidRunInput
from symfonic_django.models import (
    AgentState,
    Decision,
    Pause,
    PauseKind,
    PauseStatus,
    Run,
    RunStatus,
    ToolResult,
    TurnEvent,
)
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run

from ..conftest import snapshot

pytestmark = pytest.mark.django_db

API = "/api/symfonic/"
THREE = {"refunds": [{"order_id": "A-1", "amount": 10}, {"order_id": "B-2", "amount": 19.99},
                     {"order_id": "C-3", "amount": 3}]}
EDITED = {"order_id": "B-2", "amount": 5.5}
#: Approve A-1, edit B-2's amount to 5.50, reject C-3.
DECISIONS = [{"type": "approve"},
             {"type": "edit", "edited_action": {"name": "refund", "args": EDITED}},
             {"type": "reject", "message": "already refunded"}]
RECORDED = [("A-1", Decimal("10.00")), ("B-2", Decimal("5.50"))]
CONFIRMATION = "3 refund(s) reviewed: the approved ones are done, the others were not made."


@pytest.fixture
def users(tenants: Any) -> dict[str, Any]:
    return seed_users()


def alice_over_the_api(users: dict[str, Any]) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {users['alice']['token']}")
    return client


def paused_on_three() -> tuple[Run, Pause]:
    run = start_run("refund_pydantic", THREE, scope="acme", dispatch=False)
    execute_run(run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.PAUSED, run.error
    [pause] = Pause.objects.filter(run=run)
    return run, pause


def refunds() -> list[tuple[str, Decimal]]:
    return sorted(Refund.objects.values_list("order_id", "amount"))


def test_three_refunds_are_one_approval_with_an_action_each_held_to_the_refund_schema(tenants):
    run, pause = paused_on_three()
    assert pause.kind == PauseKind.APPROVAL
    assert pause.prompt["action_requests"] == [
        {"name": "refund", "args": {"order_id": "A-1", "amount": 10},
         "description": "Refund 10 on order A-1"},
        {"name": "refund", "args": {"order_id": "B-2", "amount": 19.99},
         "description": "Refund 19.99 on order B-2"},
        {"name": "refund", "args": {"order_id": "C-3", "amount": 3},
         "description": "Refund 3 on order C-3"}]
    # The tool's own schema, from its type hints: the same bounds as the plain agent's.
    assert pause.prompt["review_configs"] == [
        {"action_name": "refund", "allowed_decisions": ["approve", "edit", "reject", "respond"],
         "args_schema": REFUND_ARGS_SCHEMA}]
    assert AgentState.objects.filter(run=run, consumed_by=None).exists()
    assert not Refund.objects.exists()


@pytest.mark.parametrize("surface", ["python", "api"])
def test_approve_edit_reject_records_the_approved_and_the_edited_refund_once(users, surface):
    run, pause = paused_on_three()
    if surface == "api":
        response = alice_over_the_api(users).post(
            f"{API}pauses/{pause.pk}/answer/", {"answer": {"decisions": DECISIONS}},
            format="json")
        assert response.status_code == 202, response.json()
        continuation = response.json()["run_id"]
    else:
        continuation = pauses.answer_pause(pause.pk, {"decisions": DECISIONS},
                                           dispatch=False).continuation.pk
    assert Decision.objects.get(pause=pause).answer == {"decisions": DECISIONS}
    execute_run(continuation)
    done = Run.objects.get(pk=continuation)
    assert done.status == RunStatus.COMPLETED, done.error
    assert done.output == CONFIRMATION
    assert refunds() == RECORDED
    assert set(Refund.objects.values_list("run_id", flat=True)) == {run.pk}
    assert ToolResult.objects.filter(root_run_id=run.pk).count() == 2
    # Redelivered: skipped, nothing recorded again.
    assert execute_run(continuation) == "skipped" and refunds() == RECORDED


def test_an_edit_outside_the_refund_schema_is_refused_over_the_api_and_changes_nothing(users):
    run, pause = paused_on_three()
    row = snapshot(pause)
    bad = [DECISIONS[0], {"type": "edit", "edited_action": {"name": "refund", "args": {
        "order_id": "B-2", "amount": 0.001}}}, DECISIONS[2]]
    response = alice_over_the_api(users).post(
        f"{API}pauses/{pause.pk}/answer/", {"answer": {"decisions": bad}}, format="json")
    assert response.status_code == 400 and response.json()["code"] == "invalid_answer"
    assert "0.001 is not a multiple of 0.01" in response.json()["detail"]
    assert snapshot(pause) == row and row["status"] == PauseStatus.PENDING
    assert not Run.objects.filter(parent=run).exists() and not Refund.objects.exists()


@pytest.mark.parametrize(("input", "violation"), [
    pytest.param({"refunds": []}, "$.refunds: [] should be non-empty", id="no-refunds"),
    pytest.param({"refunds": [{"order_id": f"O-{n}", "amount": 1} for n in range(6)]},
                 "is too long", id="six-refunds"),
    pytest.param({"refunds": [{"order_id": "A-1", "amount": 1.005}]},
                 "1.005 is not a multiple of 0.01", id="three-decimals"),
    pytest.param({"order_id": "A-1", "amount": 5}, "'refunds' is a required property",
                 id="the-plain-agent's-input"),
])
def test_a_bad_input_is_refused_before_any_run_exists(users, input, violation):
    with pytest.raises(InvalidRunInput) as refused:
        start_run("refund_pydantic", input, scope="acme", dispatch=False)
    assert violation in refused.value.detail
    response = alice_over_the_api(users).post(
        f"{API}runs/", {"agent": "refund_pydantic", "input": input}, format="json")
    assert response.status_code == 400 and violation in response.json()["detail"]
    assert not Run.objects.exists() and not TurnEvent.objects.exists()
    assert not AgentState.objects.exists()


#: The example's settings and checks with the [pydantic-ai] extra missing.
WITHOUT_PYDANTIC_AI = """
import sys
sys.modules["pydantic_ai"] = None  # what an import of a package that is not installed finds
import django
django.setup()
from django.conf import settings
from django.core.management import call_command
call_command("check", fail_level="WARNING")
print(sorted(settings.SYMFONIC["AGENTS"]))
"""


def test_without_the_pydantic_ai_extra_the_example_does_not_register_refund_pydantic():
    env = {**os.environ, "SYMFONIC_DEMO": "1", "DJANGO_SETTINGS_MODULE": "example_project.settings"}
    done = subprocess.run([sys.executable, "-c", WITHOUT_PYDANTIC_AI], capture_output=True,
                          text=True, timeout=120, env=env,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    agents = done.stdout.splitlines()[-1]
    assert "refund_pydantic" not in agents and "'refund'" in agents



def test_a_second_refund_of_one_order_for_another_amount_says_it_was_not_made(users):
    """Two calls for one order (here an edit naming A-1 for 500): the example refunds an
    order once per conversation, and the second call's result says it was not made rather
    than reporting the first refund as its own."""
    run, pause = paused_on_three()
    answer = {"decisions": [{"type": "approve"}, {"type": "edit", "edited_action": {
        "name": "refund", "args": {"order_id": "A-1", "amount": 500}}}, {"type": "reject"}]}
    continuation = pauses.answer_pause(pause.pk, answer, dispatch=False).continuation
    execute_run(continuation.pk)
    continuation.refresh_from_db()
    assert continuation.status == RunStatus.COMPLETED, continuation.error
    assert refunds() == [("A-1", Decimal("10.00"))]
    results = {e.data["tool_call_id"]: e.data["result"] for e in TurnEvent.objects.filter(
        run=continuation, type="tool.completed")}
    first, second = results["refund-desk-1-call-1"], results["refund-desk-1-call-2"]
    assert first == {"refund_id": second["refund_id"], "order_id": "A-1", "amount": "10.00"}
    assert second["refunded"] is False and "500.00 was not made" in second["reason"]
