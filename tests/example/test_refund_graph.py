"""The example's ``refund_graph`` (docs/design.md section 6): several refunds in one request are
one approval pause with an action per refund; each approved or edited action is one
``Refund`` row, exactly once; a rejected one is none; bad input never becomes a run."""

from __future__ import annotations

import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from langgraph.types import Interrupt
from rest_framework.test import APIClient

from example_project.agents import REFUND_ARGS_SCHEMA
from example_project.graph_agent import RefundDesk
from example_project.shop.management.commands.seed_demo import seed_users
from example_project.shop.models import Refund
from symfonic_django import runs
from symfonic_django.agents.langgraph import pause_request
from symfonic_django.exceptions import InvalidRunInput
from symfonic_django.models import (
    Decision,
    GraphCheckpoint,
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
from ..langgraph.conftest import (
    checkpoint_key,
    continue_run,
    events_of,
    pauses_of,
    run_turn,
    thread_rows,
)

pytestmark = pytest.mark.django_db

API = "/api/symfonic/"
THREE = {"refunds": [{"order_id": "A-1", "amount": 10}, {"order_id": "B-2", "amount": 19.99},
                     {"order_id": "C-3", "amount": 3}]}
#: Approve A-1, edit B-2's amount to 5.50, reject C-3.
EDITED = {"order_id": "B-2", "amount": 5.5}
DECISIONS = [{"type": "approve"},
             {"type": "edit", "edited_action": {"name": "refund", "args": EDITED}},
             {"type": "reject", "message": "already refunded"}]
#: What those decisions leave: the approved refund and the edited one.
RECORDED = [("A-1", Decimal("10.00")), ("B-2", Decimal("5.50"))]
CONFIRMATION = "3 refund(s) reviewed: the approved ones are done, the others were not made."


@pytest.fixture
def users(tenants: Any) -> dict[str, Any]:
    return seed_users()


def alice_over_the_api(users: dict[str, Any]) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {users['alice']['token']}")
    return client


def answer_in_the_admin(pause: Pause) -> None:
    client = Client()
    client.force_login(get_user_model().objects.get(username="alice"))
    response = client.post(reverse("admin:symfonic_django_pause_change", args=[pause.pk]), {
        "decision_0": "approve",
        "decision_1": "edit", "args_1": '{"order_id": "B-2", "amount": 5.5}',
        "decision_2": "reject", "message_2": "already refunded"})
    assert response.status_code == 302, response.content.decode()[:2000]


def answer_over_the_api(pause: Pause, users: dict[str, Any]) -> None:
    response = alice_over_the_api(users).post(
        f"{API}pauses/{pause.pk}/answer/", {"answer": {"decisions": DECISIONS}}, format="json")
    assert response.status_code == 202, response.json()
    assert response.json()["run_id"] == str(Pause.objects.get(pk=pause.pk).continuation_id)


def refunds() -> list[tuple[str, Decimal]]:
    return sorted(Refund.objects.values_list("order_id", "amount"))


def paused_on_three() -> tuple[Run, Pause]:
    run = run_turn("refund_graph", THREE)
    assert run.status == RunStatus.PAUSED
    [pause] = pauses_of(run)
    return run, pause


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
    assert pause.prompt["review_configs"] == [
        {"action_name": "refund", "allowed_decisions": ["approve", "edit", "reject", "respond"],
         "args_schema": REFUND_ARGS_SCHEMA}] * 3
    kinds = [kind for kind, _ in events_of(run)]
    assert kinds[-2:] == ["pause.requested", "turn.paused"]
    assert kinds.count("tool.started") == 3 and "tool.completed" not in kinds
    # Graph state is on the app's saver, on the run's own thread (its id, in its scope).
    assert GraphCheckpoint.objects.filter(thread_id=checkpoint_key(str(run.pk))).exists()
    assert not Refund.objects.exists()


@pytest.mark.parametrize("surface", ["admin", "api"])
def test_approve_edit_reject_records_the_approved_and_the_edited_refund_once(users, surface):
    run, pause = paused_on_three()
    if surface == "admin":
        answer_in_the_admin(pause)
    else:
        answer_over_the_api(pause, users)
    decision = Decision.objects.get(pause=pause)
    assert decision.via == surface and decision.answer == {"decisions": DECISIONS}

    continuation = Pause.objects.get(pk=pause.pk).continuation_id
    done = continue_run(continuation)
    assert done.status == RunStatus.COMPLETED and done.output == CONFIRMATION
    assert refunds() == RECORDED
    # They carry the conversation's root run: the paused turn's id, not the continuation's.
    assert set(Refund.objects.values_list("run_id", flat=True)) == {run.pk}
    results = {d["tool_call_id"]: d["result"] for kind, d in events_of(done)
               if kind == "tool.completed"}
    assert len(results) == 3 and "already refunded" in results["refund-desk-1-call-3"]
    assert results["refund-desk-1-call-1"]["amount"] == "10.00"

    # Redelivered: the run is done, the delivery is skipped, nothing is recorded again.
    events = events_of(done)
    assert execute_run(continuation) == "skipped"
    assert refunds() == RECORDED and events_of(done) == events
    assert ToolResult.objects.filter(root_run_id=run.pk).count() == 2


def test_a_retried_continuation_records_nothing_more(tenants, monkeypatch):
    """The model fails after the refunds were made; the retried continuation picks the
    graph up after them, and the confirmation follows with no refund made twice."""
    run, pause = paused_on_three()
    reply = RefundDesk.reply

    def down_once(self: RefundDesk, messages: Any) -> Any:
        monkeypatch.setattr(RefundDesk, "reply", reply)
        raise RuntimeError("the model is unavailable")

    monkeypatch.setattr(RefundDesk, "reply", down_once)
    continuation = runs.queue_continuation(run, resumed_from=pause, dispatch=False,
                                           answers={str(pause.pk): {"decisions": DECISIONS}})
    failed = continue_run(continuation.pk)
    assert failed.status == RunStatus.FAILED and "model is unavailable" in str(failed.error)
    assert refunds() == RECORDED

    runs.retry(failed.pk, comment="the model is back")
    done = continue_run(failed.pk)
    assert done.status == RunStatus.COMPLETED and done.output == CONFIRMATION
    assert refunds() == RECORDED
    assert ToolResult.objects.filter(root_run_id=run.pk).count() == 2


def many(count: int) -> dict[str, Any]:
    return {"refunds": [{"order_id": f"O-{n}", "amount": 1} for n in range(count)]}


BAD_INPUTS = [
    pytest.param({"refunds": []}, "$.refunds: [] should be non-empty", id="no-refunds"),
    pytest.param(many(6), "is too long", id="six-refunds"),
    pytest.param({"refunds": [{"order_id": "A-1", "amount": 0}]},
                 "$.refunds[0].amount: 0 is less than or equal to the minimum of 0", id="zero"),
    pytest.param({"refunds": [{"order_id": "A-1", "amount": 5}, {"order_id": "B-2",
                                                                   "amount": 1.005}]},
                 "$.refunds[1].amount: 1.005 is not a multiple of 0.01", id="three-decimals"),
    pytest.param({"order_id": "A-1", "amount": 5}, "'refunds' is a required property",
                 id="the-plain-agent's-input"),
]


@pytest.mark.parametrize(("input", "violation"), BAD_INPUTS)
def test_a_bad_input_is_refused_before_any_run_exists(users, input, violation):
    with pytest.raises(InvalidRunInput) as refused:
        start_run("refund_graph", input, scope="acme", dispatch=False)
    assert violation in refused.value.detail

    response = alice_over_the_api(users).post(
        f"{API}runs/", {"agent": "refund_graph", "input": input}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_request"
    assert violation in response.json()["detail"]
    assert not Run.objects.exists() and not TurnEvent.objects.exists()
    assert not GraphCheckpoint.objects.exists()


def test_five_refunds_with_cents_are_accepted(tenants):
    run = run_turn("refund_graph", {"refunds": [
        {"order_id": f"O-{n}", "amount": amount}
        for n, amount in enumerate([0.01, 19.99, 1234.56, 9999.99, 10000])]})
    [pause] = pauses_of(run)
    assert len(pause.prompt["action_requests"]) == 5


@pytest.mark.parametrize(("decisions", "words"), [
    pytest.param(DECISIONS[:2], "Expected 3 decision(s)", id="two-for-three"),
    pytest.param([*DECISIONS, {"type": "approve"}], "Expected 3 decision(s)", id="four"),
    pytest.param([{"type": "approve"},
                  {"type": "edit", "edited_action": {"name": "refund", "args": {
                      "order_id": "B-2", "amount": 0.001}}},
                  {"type": "approve"}], "0.001 is not a multiple of 0.01", id="bad-edit"),
])
def test_an_answer_that_does_not_fit_the_three_actions_is_refused_and_changes_nothing(
        users, decisions, words):
    run, pause = paused_on_three()
    thread, row = thread_rows(str(run.pk)), snapshot(pause)
    response = alice_over_the_api(users).post(
        f"{API}pauses/{pause.pk}/answer/", {"answer": {"decisions": decisions}}, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_answer" and words in response.json()["detail"]
    assert snapshot(pause) == row and row["status"] == PauseStatus.PENDING
    assert thread_rows(str(run.pk)) == thread
    assert not Run.objects.filter(parent=run).exists() and not Decision.objects.exists()
    assert not Refund.objects.exists()


def test_the_adapters_args_schemas_fill_only_the_review_configs_without_a_schema():
    """What gives refund_graph's pause its args_schema: ``args_schemas`` by action name,
    for a review config that has none (an interrupt's own schema is kept)."""
    own = {"type": "object", "properties": {"sku": {"type": "string"}}}
    value = {"action_requests": [{"name": name, "args": {}} for name in ("refund", "ship", "note")],
             "review_configs": [{"action_name": "refund", "allowed_decisions": ["approve"]},
                                {"action_name": "ship", "allowed_decisions": ["approve"],
                                 "args_schema": own},
                                {"action_name": "note", "allowed_decisions": ["approve"]}]}
    schemas = {"refund": REFUND_ARGS_SCHEMA, "ship": {"type": "object"}}
    request = pause_request(Interrupt(value=value, id="i-1"), schemas)
    assert [c.get("args_schema") for c in request.prompt["review_configs"]] == [
        REFUND_ARGS_SCHEMA, own, None]
    assert "args_schema" not in value["review_configs"][0]  # the interrupt's value is kept


#: The example's settings and checks with the [langgraph] extra's packages missing.
WITHOUT_LANGGRAPH = """
import sys
# The other extras' agents (refund_pydantic, refund_openai) are left out too.
for package in ("langgraph", "langchain", "langchain_core", "pydantic_ai", "agents"):
    sys.modules[package] = None  # what an import of a package that is not installed finds
import django
django.setup()
from django.conf import settings
from django.core.management import call_command
call_command("check", fail_level="WARNING")
print(sorted(settings.SYMFONIC["AGENTS"]))
"""


def test_without_the_langgraph_extra_the_example_registers_the_plain_agents_alone():
    env = {**os.environ, "SYMFONIC_DEMO": "1", "DJANGO_SETTINGS_MODULE": "example_project.settings"}
    done = subprocess.run([sys.executable, "-c", WITHOUT_LANGGRAPH], capture_output=True,
                          text=True, timeout=120, env=env,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "['refund', 'shipping', 'slow_refund']"
