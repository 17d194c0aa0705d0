"""Several approvers (docs/design.md section 3): a pause that needs N distinct people to approve it.

The policy here asks two approvers of every approval pause. Each approval is a
``Decision`` of one decision list; the pause leaves ``pending`` on the second
distinct approver of the same list, or on the first answer that lets nothing
run. The same person twice, the run's own starter, and an answer that names
nobody (a token alone) never count, and a refusal changes nothing. Mixed
answers and the surfaces (API, admin, ``resume/``) are replayed in
``tests/test_quorum_findings.py``; concurrent approvals from separate processes
are raced in ``tests/integration/test_quorum_race.py``; random interleavings are
``tests/property/test_quorum.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from symfonic_django import pauses
from symfonic_django.exceptions import (
    AlreadyApproved,
    ApprovalNotCounted,
    InteractionConfigurationError,
    InvalidAnswer,
    PermissionDenied,
)
from symfonic_django.models import Decision, Pause, PauseStatus, Run, RunStatus
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run
from tests.testapp.models import Membership, Tenant

from .conftest import snapshot

pytestmark = pytest.mark.django_db(transaction=True)
API = "/api/symfonic/"


def two_approvers(pause: Pause) -> int:
    return 2


def no_whole_number(pause: Pause) -> Any:
    return "two"


@pytest.fixture(autouse=True)
def policy(settings: Any, tenants: Any) -> None:
    settings.SYMFONIC = {**settings.SYMFONIC,
                         "APPROVAL_POLICY": "tests.test_approvals.two_approvers"}


def reviewer(name: str, tenant: str = "acme") -> Any:
    user = get_user_model().objects.create_user(name, password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(
        content_type__app_label="symfonic_django",
        codename__in=["view_pause", "answer_pause", "start_run"]))
    Membership.objects.create(user=user, tenant=Tenant.objects.get(slug=tenant))
    return user


def paused(started_by: Any = None) -> tuple[Run, Pause]:
    run = start_run("echo", {}, scope="acme", started_by=started_by, dispatch=False)
    assert execute_run(run.pk) == RunStatus.PAUSED
    return run, Pause.objects.get(run=run)


def rows(pause: Pause) -> tuple[Any, ...]:
    return (snapshot(pause), list(Decision.objects.filter(pause=pause).values()),
            Run.objects.count())


def test_the_policy_is_read_when_the_pause_is_made():
    _, pause = paused()
    assert pause.approvals_needed == 2


def test_the_first_approval_counts_and_the_second_distinct_one_continues_the_run():
    alice, carol = reviewer("alice2"), reviewer("carol")
    run, pause = paused()

    first = pauses.approve(pause.pk, actor=alice, via="api")
    assert first.continuation is None
    assert (first.approvals.have, first.approvals.need, first.approvals.by) == (1, 2, ["alice2"])
    assert Pause.objects.get(pk=pause.pk).status == PauseStatus.PENDING

    second = pauses.approve(pause.pk, actor=carol, via="admin")
    assert second.approvals is None and second.continuation is not None
    done = Pause.objects.get(pk=pause.pk)
    assert (done.status, done.answered_by) == (PauseStatus.ANSWERED, carol)
    assert list(Decision.objects.filter(pause=pause).order_by("pk")
                .values_list("action", "actor_label")) == [("approve", "alice2"),
                                                           ("approve", "carol")]
    assert execute_run(second.continuation.pk) == RunStatus.COMPLETED
    assert Run.objects.filter(parent=run).count() == 1


def test_a_second_approval_by_the_same_person_is_refused_and_changes_nothing():
    alice = reviewer("alice2")
    _, pause = paused()
    pauses.approve(pause.pk, actor=alice, via="api")
    before = rows(pause)
    with pytest.raises(AlreadyApproved) as refused:
        pauses.approve(pause.pk, actor=alice, via="admin")
    assert (refused.value.code, refused.value.status) == ("already_approved", 409)
    assert rows(pause) == before


def test_the_runs_starter_never_counts_toward_its_own_quorum():
    alice, carol = reviewer("alice2"), reviewer("carol")
    _, pause = paused(started_by=alice)
    before = rows(pause)
    with pytest.raises(ApprovalNotCounted) as refused:
        pauses.approve(pause.pk, actor=alice, via="api")
    assert (refused.value.code, refused.value.status) == ("approval_not_counted", 403)
    assert rows(pause) == before
    assert pauses.approve(pause.pk, actor=carol, via="api").approvals.have == 1


def test_an_answer_that_names_nobody_cannot_count():
    _, pause = paused()
    before = rows(pause)
    with pytest.raises(PermissionDenied) as refused:
        pauses.approve(pause.pk, actor=None, via="token")
    assert (refused.value.code, refused.value.status) == ("permission_denied", 403)
    assert rows(pause) == before


def test_one_rejection_ends_the_pause_whatever_the_approvals_before():
    alice, carol = reviewer("alice2"), reviewer("carol")
    _, pause = paused()
    pauses.approve(pause.pk, actor=alice, via="api")
    rejected = pauses.reject(pause.pk, actor=carol, via="api", comment="not this one")
    assert rejected.continuation is not None
    done = Pause.objects.get(pk=pause.pk)
    assert done.status == PauseStatus.ANSWERED
    assert done.answer["decisions"][0] == {"type": "reject", "message": "not this one"}


def test_an_edit_is_refused_because_the_others_approved_the_proposal():
    carol = reviewer("carol")
    _, pause = paused()
    before = rows(pause)
    with pytest.raises(InvalidAnswer):
        pauses.approve(pause.pk, actor=carol, via="api", edited_args={"qty": 1})
    assert rows(pause) == before


def test_a_policy_that_returns_no_whole_number_fails_the_turn_before_any_pause(settings):
    settings.SYMFONIC = {**settings.SYMFONIC,
                         "APPROVAL_POLICY": "tests.test_approvals.no_whole_number"}
    with pytest.raises(InteractionConfigurationError):
        pauses.approvals_needed(Pause(kind="approval"))
    run = start_run("echo", {}, scope="acme", dispatch=False)
    assert execute_run(run.pk) == RunStatus.FAILED
    run.refresh_from_db()
    assert run.error["code"] == "configuration_error"
    assert not Pause.objects.exists()


def test_the_review_page_shows_1_of_2_approvals_and_who_approved(client):
    alice, carol = reviewer("alice2"), reviewer("carol")
    _, pause = paused()
    page = f"/admin/symfonic_django/pause/{pause.pk}/change/"
    client.force_login(alice)
    response = client.post(page, {"decision_0": "approve"}, follow=True)
    assert response.status_code == 200
    body = response.content.decode()
    assert "1 of 2 approvals" in body and "by alice2" in body
    assert "Your approval was counted" in body
    assert Pause.objects.get(pk=pause.pk).status == PauseStatus.PENDING

    again = client.post(page, {"decision_0": "approve"}, follow=True)
    assert "You already approved this" in again.content.decode()
    assert Decision.objects.filter(pause=pause).count() == 1

    client.force_login(carol)
    client.post(page, {"decision_0": "approve"})
    assert Pause.objects.get(pk=pause.pk).status == PauseStatus.ANSWERED
    assert "2 of 2 approvals" in client.get(page).content.decode()


@pytest.mark.parametrize(("amount", "needed"), [(12.5, 1), (500, 1), (500.01, 2), (9999, 2)])
def test_the_example_asks_two_approvers_for_a_refund_over_500(settings, amount, needed):
    settings.SYMFONIC = {**settings.SYMFONIC, "APPROVAL_POLICY":
                         "tests.testapp.approvals.two_approvers_over_500"}
    run = start_run("refund", {"order_id": "A-1", "amount": amount}, scope="acme",
                    dispatch=False)
    assert execute_run(run.pk) == RunStatus.PAUSED
    assert Pause.objects.get(run=run).approvals_needed == needed
def test_the_api_202_says_how_many_approvals_it_has_and_needs():
    alice, carol = reviewer("alice2"), reviewer("carol")
    _, pause = paused()
    clients = {}
    for user in (alice, carol):
        clients[user.username] = APIClient()
        clients[user.username].credentials(
            HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")

    first = clients["alice2"].post(f"{API}pauses/{pause.pk}/approve/", {}, format="json")
    assert first.status_code == 202, first.json()
    body = first.json()
    assert (body["run_id"], body["stream"]) == (None, None)
    assert body["approvals"] == {"have": 1, "need": 2, "by": ["alice2"]}
    assert body["pause"]["status"] == "pending"

    again = clients["alice2"].post(f"{API}pauses/{pause.pk}/approve/", {}, format="json")
    assert (again.status_code, again.json()["code"]) == (409, "already_approved")

    second = clients["carol"].post(f"{API}pauses/{pause.pk}/approve/", {}, format="json")
    assert second.status_code == 202
    assert second.json()["run_id"] is not None and "approvals" not in second.json()


def test_the_run_started_over_the_api_records_its_starter():
    alice = reviewer("alice2")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=alice).key}")
    response = client.post(f"{API}runs/", {"agent": "echo", "input": {}}, format="json")
    assert response.status_code == 202, response.json()
    assert Run.objects.get(pk=response.json()["run_id"]).started_by == alice


def test_an_edit_past_the_policys_threshold_is_refused_and_changes_nothing(settings):
    settings.SYMFONIC = {**settings.SYMFONIC, "APPROVAL_POLICY":
                         "tests.testapp.approvals.two_approvers_over_500"}
    alice = reviewer("alice2")
    run = start_run("refund", {"order_id": "A-1", "amount": 40}, scope="acme", dispatch=False)
    execute_run(run.pk)
    pause = Pause.objects.get(run=run)
    assert pause.approvals_needed == 1
    before = rows(pause)
    with pytest.raises(InvalidAnswer) as refused:
        pauses.approve(pause.pk, actor=alice, via="api", edited_args={"order_id": "A-1",
                                                                       "amount": 9999})
    assert "would need 2 approvers" in refused.value.detail
    assert rows(pause) == before
    # Within the threshold, one reviewer edits and approves as before.
    done = pauses.approve(pause.pk, actor=alice, via="api",
                          edited_args={"order_id": "A-1", "amount": 499.99})
    assert done.continuation is not None


def test_the_review_page_offers_no_edit_on_a_pause_that_needs_several_approvers(client):
    alice = reviewer("alice2")
    _, pause = paused()
    client.force_login(alice)
    body = client.get(f"/admin/symfonic_django/pause/{pause.pk}/change/").content.decode()
    assert 'value="approve"' in body and 'value="reject"' in body
    assert 'value="edit"' not in body
    assert pauses.offered_decisions(pause, "ship") == ["approve", "reject"]


# --- one answer: what "the same decision list" means (pauses.same_decisions) ---------------

@pytest.mark.parametrize(("one", "other", "same"), [
    # Key order does not matter; numbers are compared by value, as the database may write
    # them back another way (jsonb reads 1e16 back as 10000000000000000).
    ({"decisions": [{"type": "edit", "edited_action": {"name": "r", "args": {"a": 500, "b": 1}}}]},
     {"decisions": [{"edited_action": {"args": {"b": 1.0, "a": 500.0}, "name": "r"}, "type": "edit"}]},
     True),
    ({"decisions": [{"type": "edit", "edited_action": {"name": "r", "args": {"n": 1e16}}}]},
     {"decisions": [{"type": "edit", "edited_action": {"name": "r", "args": {"n": 10**16}}}]},
     True),
    # true is not 1; another amount, another order of decisions, another message: other lists.
    ({"decisions": [{"type": "edit", "edited_action": {"name": "r", "args": {"f": True}}}]},
     {"decisions": [{"type": "edit", "edited_action": {"name": "r", "args": {"f": 1}}}]}, False),
    ({"decisions": [{"type": "approve"}, {"type": "reject"}]},
     {"decisions": [{"type": "reject"}, {"type": "approve"}]}, False),
    ({"decisions": [{"type": "approve"}, {"type": "reject"}]},
     {"decisions": [{"type": "approve"}, {"type": "reject", "message": "no"}]}, False),
    ({"decisions": [{"type": "approve"}, {"type": "respond", "message": "Ask first"}]},
     {"decisions": [{"type": "approve"}, {"type": "respond", "message": "ask first"}]}, False),
])
def test_the_same_decision_list_is_equal_json_with_messages_exact(one, other, same):
    assert pauses.same_decisions(one, other) is same
    assert pauses.same_decisions(other, one) is same
