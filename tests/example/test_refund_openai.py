"""The example's ``refund_openai`` (an OpenAI Agents SDK agent on its ``ScriptedModel``):
several refunds in one request are one approval pause with an action per refund; each
approved action is one ``Refund`` row, exactly once; a rejected one is none; an edit is
not offered; bad input never becomes a run."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from rest_framework.test import APIClient

from example_project.openai_refund import STEPS
from example_project.shop.management.commands.seed_demo import seed_users
from example_project.shop.models import Refund
from symfonic_django import pauses
from symfonic_django.exceptions import InvalidRunInput
from symfonic_django.models import (
    AgentState,
    Decision,
    Pause,
    PauseKind,
    Run,
    RunStatus,
    ToolResult,
    TurnEvent,
)
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run

from ..conftest import snapshot
from .test_refund_graph import BAD_INPUTS, THREE

pytestmark = pytest.mark.django_db

API = "/api/symfonic/"
#: Approve A-1, reject B-2, respond to C-3.
DECISIONS = [{"type": "approve"}, {"type": "reject", "message": "already refunded"},
             {"type": "respond", "message": "ask the customer which card"}]
CONFIRMATION = "3 refund(s) reviewed: the approved ones are done, the others were not made."


@pytest.fixture
def users(tenants: Any) -> dict[str, Any]:
    return seed_users()


def alice(users: dict[str, Any]) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {users['alice']['token']}")
    return client


def paused_on_three() -> tuple[Run, Pause]:
    run = start_run("refund_openai", THREE, scope="acme", dispatch=False)
    execute_run(run.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.PAUSED, run.error
    [pause] = Pause.objects.filter(run=run)
    return run, pause


def test_three_refunds_are_one_approval_with_an_action_each_held_to_the_tools_schema(tenants):
    run, pause = paused_on_three()
    assert pause.kind == PauseKind.APPROVAL
    assert [(a["args"], a["description"]) for a in pause.prompt["action_requests"]] == [
        ({"order_id": "A-1", "amount": 10}, "Refund 10 on order A-1"),
        ({"order_id": "B-2", "amount": 19.99}, "Refund 19.99 on order B-2"),
        ({"order_id": "C-3", "amount": 3}, "Refund 3 on order C-3")]
    [config] = pause.prompt["review_configs"]
    assert config["allowed_decisions"] == ["approve", "reject", "respond"]
    # The tool's own schema: its Field bounds are the refund schema's.
    amount = config["args_schema"]["properties"]["amount"]
    assert (amount["exclusiveMinimum"], amount["maximum"], amount["multipleOf"]) == (0, 10000,
                                                                                     0.01)
    assert AgentState.objects.filter(run=run, consumed_by=None).exists()
    assert not Refund.objects.exists() and STEPS == 2


@pytest.mark.parametrize("surface", ["api", "python"])
def test_approve_reject_respond_records_exactly_the_approved_refund_once(users, surface):
    run, pause = paused_on_three()
    if surface == "api":
        response = alice(users).post(f"{API}pauses/{pause.pk}/answer/",
                                     {"answer": {"decisions": DECISIONS}}, format="json")
        assert response.status_code == 202, response.json()
    else:
        pauses.answer_pause(pause.pk, {"decisions": DECISIONS})
    decision = Decision.objects.get(pause=pause)
    assert decision.answer == {"decisions": DECISIONS}
    continuation = Pause.objects.get(pk=pause.pk).continuation_id
    execute_run(continuation)
    done = Run.objects.get(pk=continuation)
    assert done.status == RunStatus.COMPLETED and done.output == CONFIRMATION, done.error
    assert list(Refund.objects.values_list("order_id", "amount", "run_id")) == [
        ("A-1", Decimal("10.00"), run.pk)]
    # Redelivered: skipped, nothing recorded again.
    assert execute_run(continuation) == "skipped"
    assert Refund.objects.count() == 1 and ToolResult.objects.count() == 1


def test_an_edit_is_refused_when_given_and_changes_nothing(users):
    run, pause = paused_on_three()
    row = snapshot(pause)
    edit = {"type": "edit", "edited_action": {"name": "refund",
                                              "args": {"order_id": "A-1", "amount": 5}}}
    response = alice(users).post(f"{API}pauses/{pause.pk}/answer/",
                                 {"answer": {"decisions": [edit, *DECISIONS[1:]]}}, format="json")
    assert response.status_code == 400 and response.json()["code"] == "invalid_answer"
    assert snapshot(pause) == row and not Decision.objects.exists()
    assert not Run.objects.filter(parent=run).exists() and not Refund.objects.exists()


@pytest.mark.parametrize(("input", "violation"), BAD_INPUTS)
def test_a_bad_input_is_refused_before_any_run_exists(users, input, violation):
    with pytest.raises(InvalidRunInput) as refused:
        start_run("refund_openai", input, scope="acme", dispatch=False)
    assert violation in refused.value.detail
    response = alice(users).post(f"{API}runs/", {"agent": "refund_openai", "input": input},
                                 format="json")
    assert response.status_code == 400 and violation in response.json()["detail"]
    assert not Run.objects.exists() and not TurnEvent.objects.exists()
    assert not AgentState.objects.exists()


#: The example's settings and checks with the [openai-agents] extra missing.
WITHOUT_OPENAI_AGENTS = """
import sys
sys.modules["agents"] = None  # what an import of a package that is not installed finds
import django
django.setup()
from django.conf import settings
from django.core.management import call_command
call_command("check", fail_level="WARNING")
print(sorted(settings.SYMFONIC["AGENTS"]))
"""


def test_without_the_openai_agents_extra_the_example_does_not_register_refund_openai():
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "SYMFONIC_DEMO": "1", "DJANGO_SETTINGS_MODULE": "example_project.settings"}
    done = subprocess.run([sys.executable, "-c", WITHOUT_OPENAI_AGENTS], capture_output=True,
                          text=True, timeout=120, env=env,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    registered = done.stdout.splitlines()[-1]
    assert "'refund_openai'" not in registered and "'refund_graph'" in registered
