"""The live viewer's state URL: how a paused run's pauses stand, and where it continues.

The viewer's socket closes after ``turn.paused`` (docs/design.md section 6), so the
page asks ``runs/<id>/live/state/`` until the pauses are resolved and then
follows the continuation. These read as its contract: the same answer
whichever surface answered, the page's scope rule (a 404 for a run the user
may not review, the same as an unknown one), a constant number of queries, and
no 5xx whatever the path. They need no services and run on SQLite as well.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from symfonic_django import pauses
from symfonic_django.models import AnsweredVia, Pause, PauseStatus, Run, RunStatus
from symfonic_django.viewer import state_url, viewer_url
from tests.testapp.models import Membership
from tests.testapp.seed import seed_users

from .conftest import paused_run, snapshot

pytestmark = pytest.mark.django_db

APPROVE = {"decisions": [{"type": "approve"}]}
UNKNOWN = "00000000-0000-0000-0000-000000000009"


@pytest.fixture
def users(tenants: Any) -> dict[str, Any]:
    return seed_users()


def login(name: str) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.get(username=name))
    return client


def state_of(client: Client, run: Any) -> dict[str, Any]:
    response = client.get(state_url(run))
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    assert "no-store" in response["Cache-Control"]  # a poll must never be answered from a cache
    return response.json()


def refund_run(amount: float = 40, order: str = "F-1", scope: str = "acme") -> tuple[Run, Pause]:
    return paused_run("refund", {"order_id": order, "amount": amount}, scope=scope)


# --- what it says ---------------------------------------------------------------------

def test_a_paused_run_waits_for_its_pause_and_has_no_continuation_yet(users):
    run, pause = refund_run()
    state = state_of(login("alice"), run)
    assert state["run"] == {"id": str(run.pk), "status": "paused", "status_label": "Paused"}
    assert state["pending"] == 1 and state["continuation"] is None
    assert state["pauses"] == [{
        "id": str(pause.pk), "status": "pending", "status_label": "Pending",
        "answered_at": None, "answered_by": None, "answered_via": "",
        "answered_via_label": "", "continuation_run_id": None, "approvals": None}]


def answer_in_the_admin(pause: Pause) -> None:
    response = login("alice").post(f"/admin/symfonic_django/pause/{pause.pk}/change/",
                                   {"decision_0": "approve", "args_0": "{}"})
    assert response.status_code == 302


def answer_over_the_api(pause: Pause, users: dict[str, Any]) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {users['alice']['token']}")
    response = client.post(f"/api/symfonic/pauses/{pause.pk}/approve/", {}, format="json")
    assert response.status_code == 202, response.content


def answer_with_the_token(pause: Pause, users: dict[str, Any]) -> None:
    response = APIClient().post("/api/symfonic/resume/",
                                {"token": pauses.token_for(pause), "answer": APPROVE},
                                format="json")
    assert response.status_code == 202, response.content


@pytest.mark.parametrize("surface, via, by", [
    (lambda pause, users: answer_in_the_admin(pause), "admin", "alice"),
    (answer_over_the_api, "api", "alice"),
    (answer_with_the_token, "token", None),
])
def test_an_answer_from_any_surface_names_the_continuation_to_follow(users, surface, via, by):
    run, pause = refund_run()
    surface(pause, users)
    pause.refresh_from_db()
    state = state_of(login("alice"), run)
    assert state["pending"] == 0
    [shown] = state["pauses"]
    assert shown["status"] == "answered" and shown["answered_via"] == via
    assert shown["answered_by"] == by
    assert shown["answered_at"] == pause.answered_at.isoformat()
    continuation = pause.continuation
    assert shown["continuation_run_id"] == str(continuation.pk)
    assert state["continuation"] == {
        "id": str(continuation.pk), "status": continuation.status,
        "status_label": continuation.get_status_display(),
        "created_at": continuation.created_at.isoformat(),
        "resumed_from_pause_id": str(pause.pk),
        "stream_path": f"/ws/symfonic/runs/{continuation.pk}/",
        "viewer_url": viewer_url(continuation),
        "state_url": state_url(continuation),
    }


def test_sibling_pauses_continue_only_once_the_last_is_answered(users):
    run = paused_run("siblings")[0]
    first, second = Pause.objects.filter(run=run).order_by("created_at", "pk")
    alice = login("alice")
    pauses.answer_pause(first.pk, APPROVE, via=AnsweredVia.PYTHON)
    state = state_of(alice, run)
    assert state["pending"] == 1 and state["continuation"] is None
    assert [p["status"] for p in state["pauses"]] == ["answered", "pending"]
    pauses.answer_pause(second.pk, APPROVE, via=AnsweredVia.PYTHON)
    state = state_of(alice, run)
    assert state["pending"] == 0
    assert state["continuation"]["id"] == str(Pause.objects.get(pk=second.pk).continuation_id)


@pytest.fixture
def four_eyes(settings: Any) -> None:
    """The test app's policy: a refund over 500 needs two approvers."""
    settings.SYMFONIC = {**settings.SYMFONIC,
                         "APPROVAL_POLICY": "tests.testapp.approvals.two_approvers_over_500"}


def test_a_pause_that_needs_two_approvers_says_how_many_it_has(users, four_eyes):
    run, pause = refund_run(amount=900)
    assert pause.approvals_needed == 2
    pauses.approve(pause.pk, actor=get_user_model().objects.get(username="alice"),
                   via=AnsweredVia.API)
    state = state_of(login("alice"), run)
    assert state["pending"] == 1 and state["continuation"] is None
    assert state["pauses"][0]["approvals"] == {"have": 1, "need": 2}


def test_a_pause_that_expires_and_fails_the_run_resolves_it_without_a_continuation(users):
    run, pause = refund_run()
    pauses.expire(pause.pk, now=pause.expires_at + timedelta(seconds=1))
    state = state_of(login("alice"), run)
    assert state["pending"] == 0 and state["continuation"] is None
    assert state["run"]["status"] == RunStatus.FAILED
    assert state["pauses"][0]["status"] == PauseStatus.EXPIRED


def test_a_run_that_never_paused_has_no_pauses(users):
    run = Run.objects.create(agent="echo", scope_key="acme", status=RunStatus.COMPLETED, input={})
    state = state_of(login("alice"), run)
    assert state == {"run": {"id": str(run.pk), "status": "completed",
                             "status_label": "Completed"},
                     "pending": 0, "pauses": [], "continuation": None}


def test_the_page_of_an_answered_run_starts_from_its_continuation(users):
    run, pause = refund_run()
    answer_over_the_api(pause, users)
    pause.refresh_from_db()
    response = login("alice").get(viewer_url(run))
    assert response.status_code == 200
    html = response.content.decode()
    # The page hands its script the answered state, so it never shows a "waiting" line.
    assert f'"continuation": {{"id": "{pause.continuation_id}"' in html
    assert '"pending": 0' in html
    assert f'<a href="{viewer_url(pause.continuation_id)}">run {str(pause.continuation_id)[:8]}' in html


# --- who may ask ------------------------------------------------------------------------

def test_anonymous_is_a_401_and_a_user_who_is_not_staff_a_403(users):
    run, _ = refund_run()
    response = Client().get(state_url(run))
    assert response.status_code == 401 and response.json()["code"] == "not_authenticated"
    someone = get_user_model().objects.create_user("someone", password="x")
    client = Client()
    client.force_login(someone)
    response = client.get(state_url(run))
    assert response.status_code == 403 and response.json()["code"] == "permission_denied"


def test_a_run_of_a_scope_the_user_may_not_review_is_the_same_404_as_an_unknown_run(users):
    acme_run, _ = refund_run()
    bob = login("bob")
    hidden = bob.get(state_url(acme_run))
    unknown = bob.get(f"/admin/symfonic/runs/{UNKNOWN}/live/state/")
    assert hidden.status_code == unknown.status_code == 404
    assert hidden.json() == unknown.json() == {"code": "not_found", "detail": "No such run."}
    assert state_of(login("admin"), acme_run)["run"]["id"] == str(acme_run.pk)  # superuser


def test_a_staff_user_of_no_scope_sees_no_run(users, tenants):
    run, _ = refund_run()
    carol = get_user_model().objects.create_user("carol", password="x", is_staff=True)
    client = Client()
    client.force_login(carol)
    assert client.get(state_url(run)).status_code == 404
    Membership.objects.create(user=carol, tenant=tenants["acme"])
    carol.user_permissions.add(*Permission.objects.filter(codename__in=["view_pause", "view_run"]))
    assert state_of(client, run)["run"]["id"] == str(run.pk)


def test_a_reviewer_removed_from_the_scope_loses_it_on_the_next_poll(users, tenants):
    run, _ = refund_run()
    alice = login("alice")
    state_of(alice, run)
    Membership.objects.filter(user__username="alice").delete()
    assert alice.get(state_url(run)).status_code == 404


@pytest.mark.parametrize("path", [
    "/admin/symfonic/runs/not-a-uuid/live/state/",
    "/admin/symfonic/runs/%00/live/state/",
    "/admin/symfonic/runs/" + "9" * 5000 + "/live/state/",
    "/admin/symfonic/runs/00000000-0000-0000-0000-00000000000%ED%A0%80/live/state/",
    "/admin/symfonic/runs/../../../etc/passwd/live/state/",
    "/admin/symfonic/runs/%F0%9F%92%A5/live/state/",
])
def test_a_hostile_path_is_a_404_never_a_5xx(users, path):
    assert login("alice").get(path).status_code == 404


def test_a_pause_id_is_not_a_run_id(users):
    _, pause = refund_run()
    assert login("alice").get(f"/admin/symfonic/runs/{pause.pk}/live/state/").status_code == 404


@pytest.mark.parametrize("query", ["?after=x", "?run=%00", "?" + "a=1&" * 500, "?%ED%A0%80=1"])
def test_a_hostile_query_string_is_ignored(users, query):
    run, _ = refund_run()
    response = login("alice").get(state_url(run) + query)
    assert response.status_code == 200 and response.json()["run"]["id"] == str(run.pk)


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_it_only_reads_and_changes_nothing(users, method):
    run, pause = refund_run()
    before = snapshot(pause)
    response = getattr(login("alice"), method)(state_url(run))
    assert response.status_code == 405
    assert snapshot(pause) == before


# --- what it costs ----------------------------------------------------------------------

def queries_of(client: Client, run: Run) -> int:
    with CaptureQueriesContext(connection) as queries:
        state_of(client, run)
    return len(queries)


def test_a_poll_makes_the_same_few_queries_whatever_the_run_holds(users, four_eyes):
    alice = login("alice")
    one, pause = refund_run()
    baseline = queries_of(alice, one)
    # session, user, its permissions (its own and its groups'), scopes, run, pauses with
    # their answerer and continuation
    assert baseline <= 7

    two = paused_run("siblings")[0]
    assert queries_of(alice, two) == baseline
    first, second = Pause.objects.filter(run=two)
    pauses.answer_pause(first.pk, APPROVE, via=AnsweredVia.PYTHON)
    assert queries_of(alice, two) == baseline
    pauses.answer_pause(second.pk, APPROVE, via=AnsweredVia.PYTHON)
    assert queries_of(alice, two) == baseline

    answer_over_the_api(pause, users)
    assert queries_of(alice, one) == baseline

    quorum, held = refund_run(amount=900, order="F-2")
    pauses.approve(held.pk, actor=get_user_model().objects.get(username="alice"),
                   via=AnsweredVia.API)
    assert queries_of(alice, quorum) == baseline


def test_state_url_reverses_beside_the_viewer(tenants):
    run, _ = refund_run()
    assert state_url(run) == f"/admin/symfonic/runs/{run.pk}/live/state/"
    assert state_url(run.pk) == state_url(run)
    assert state_url(None) is None
