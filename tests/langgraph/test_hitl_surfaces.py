"""``create_agent`` agents with ``HumanInTheLoopMiddleware``, unchanged, answered by a
reviewer in the admin and over the API, in both interrupt modes."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from symfonic_django.models import Decision, Pause, PauseKind, Run, RunStatus
from tests.testapp.models import Refund
from tests.testapp.seed import seed_users

from .conftest import continue_run, events_of, pauses_of, run_turn

pytestmark = pytest.mark.django_db

API = "/api/symfonic/"
TWO_REFUNDS = {"refunds": [{"order_id": "A-1", "amount": 10}, {"order_id": "B-2", "amount": 20}]}


@pytest.fixture
def users(tenants: Any) -> dict[str, Any]:
    return seed_users()


def admin_client() -> Client:
    client = Client()
    client.force_login(get_user_model().objects.get(username="alice"))
    return client


def api_client(users: dict[str, Any]) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {users['alice']['token']}")
    return client


def admin_answer(pause: Pause, data: dict[str, str]) -> None:
    page = reverse("admin:symfonic_django_pause_change", args=[pause.pk])
    response = admin_client().post(page, data)
    assert response.status_code == 302, response.content.decode()[:2000]


def refunds() -> list[tuple[str, Decimal]]:
    return sorted(Refund.objects.values_list("order_id", "amount"))


def finish(pause: Pause) -> Run:
    done = continue_run(Pause.objects.get(pk=pause.pk).continuation_id)
    assert done.status == RunStatus.COMPLETED and done.output == "All refunds are handled."
    return done


def test_batched_is_one_approval_with_an_action_per_call_answered_in_the_admin(users):
    run = run_turn("lg_batched", TWO_REFUNDS)
    [pause] = pauses_of(run)
    assert pause.kind == PauseKind.APPROVAL
    assert [a["args"] for a in pause.prompt["action_requests"]] == [
        {"order_id": "A-1", "amount": 10}, {"order_id": "B-2", "amount": 20}]
    admin_answer(pause, {"decision_0": "edit", "args_0": '{"order_id": "A-1", "amount": 7.5}',
                         "decision_1": "reject", "message_1": "duplicate"})
    assert Decision.objects.get(pause=pause).via == "admin"
    done = finish(pause)
    assert refunds() == [("A-1", Decimal("7.50"))]
    completed = {d["tool_call_id"]: d for kind, d in events_of(done) if kind == "tool.completed"}
    # The model's call is kept as it made it; the middleware tells it a reviewer edited it.
    assert completed["call-0-A-1"]["args"] == {"order_id": "A-1", "amount": 10}
    assert "human reviewer replaced this tool call" in completed["call-0-A-1"]["result"]
    assert "duplicate" in completed["call-1-B-2"]["result"]


def test_batched_approved_over_the_api_runs_every_action_once(users):
    run = run_turn("lg_batched", TWO_REFUNDS)
    [pause] = pauses_of(run)
    response = api_client(users).post(f"{API}pauses/{pause.pk}/approve/", {}, format="json")
    assert response.status_code == 202
    assert response.json()["run_id"] == str(Pause.objects.get(pk=pause.pk).continuation_id)
    finish(pause)
    assert refunds() == [("A-1", Decimal("10")), ("B-2", Decimal("20"))]


def test_per_call_is_one_approval_per_call_answered_in_the_admin(users):
    run = run_turn("lg_per_call", TWO_REFUNDS)
    first, second = pauses_of(run)
    config = first.prompt["review_configs"][0]
    assert config["allowed_decisions"] == ["approve", "edit", "reject"]
    assert set(config["args_schema"]["properties"]) == {"order_id", "amount"}  # the tool's
    admin_answer(first, {"decision_0": "approve", "args_0": "{}"})
    assert Pause.objects.get(pk=first.pk).continuation_id is None  # waits for the other
    admin_answer(second, {"decision_0": "edit", "args_0": '{"order_id": "B-2", "amount": 2}'})
    finish(second)
    assert refunds() == [("A-1", Decimal("10")), ("B-2", Decimal("2"))]


def test_per_call_answered_over_the_api_continues_once_with_both_answers(users):
    run = run_turn("lg_per_call", TWO_REFUNDS)
    first, second = pauses_of(run)
    client = api_client(users)
    first_response = client.post(f"{API}pauses/{first.pk}/answer/",
                                 {"answer": {"decisions": [{"type": "reject"}]}}, format="json")
    assert first_response.status_code == 202 and first_response.json()["run_id"] is None
    assert client.post(f"{API}pauses/{second.pk}/answer/",
                       {"answer": {"decisions": [{"type": "approve"}]}},
                       format="json").status_code == 202
    assert Run.objects.filter(parent=run).count() == 1
    finish(second)
    assert refunds() == [("B-2", Decimal("20"))]


def test_an_agent_inbox_interrupt_is_an_approval_answered_as_a_human_response(users):
    run = run_turn("lg_inbox")
    [pause] = pauses_of(run)
    assert pause.prompt["action_requests"] == [
        {"name": "refund", "args": {"order_id": "I-1", "amount": 3}, "description": "Refund I-1?"}]
    assert pause.prompt["review_configs"][0]["allowed_decisions"] == ["approve", "edit", "reject"]
    admin_answer(pause, {"decision_0": "edit", "args_0": '{"order_id": "I-1", "amount": 1}'})
    done = continue_run(Pause.objects.get(pk=pause.pk).continuation_id)
    assert done.output["answers"] == [
        {"type": "edit", "args": {"action": "refund", "args": {"order_id": "I-1", "amount": 1}}}]
