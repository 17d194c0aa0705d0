"""The four-eyes findings of issue 26, replayed through the real surfaces.

1. A mixed answer (``[approve, reject]``) used to end a two-approver pause at once,
   and the approved refund ran with one approver. Now it is one approval of exactly
   that list: the pause stays pending, and a second approver must give the same list
   (another list is 409 ``approval_mismatch`` and changes nothing).
2. Any signed-in account holding a token counted as an approver. Now a decision that
   counts toward a quorum needs a reviewer of the pause's scope at that moment: a
   token alone, a user without the answer permission, a reviewer of another tenant,
   a revoked or deactivated reviewer are refused (403 ``permission_denied``).

Each surface is driven as a client drives it: ``pauses/{id}/answer/``, ``approve/``,
``reject/`` and ``resume/`` over DRF, the admin's review form and bulk action through
Django's test client. No marker: these run on the SQLite and PostgreSQL legs alike.
A refusal is checked to leave every row as it was and no ``Refund`` recorded, even
once every queued run has been driven.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from symfonic_django import hitl, pauses
from symfonic_django.exceptions import PermissionDenied
from symfonic_django.models import Decision, Pause, PauseStatus, Run, RunStatus
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run
from tests.testapp.models import Membership, Refund, Tenant

from .conftest import snapshot

pytestmark = pytest.mark.django_db(transaction=True)

API = "/api/symfonic/"
#: Two refunds in one approval: the large one makes the test app's policy ask two approvers.
LARGE_AND_SMALL = {"refunds": [{"order_id": "BIG-1", "amount": 9999.99},
                               {"order_id": "SMALL-2", "amount": 0.01}]}
APPROVE_REJECT = {"decisions": [{"type": "approve"}, {"type": "reject"}]}
APPROVE_RESPOND = {"decisions": [{"type": "approve"},
                                 {"type": "respond", "message": "call the customer first"}]}
APPROVE_BOTH = {"decisions": [{"type": "approve"}, {"type": "approve"}]}
REVIEWER = ("view_pause", "view_run", "answer_pause", "start_run")


@pytest.fixture(autouse=True)
def four_eyes(settings: Any, tenants: Any) -> None:
    settings.SYMFONIC = {**settings.SYMFONIC, "APPROVAL_POLICY":
                         "tests.testapp.approvals.two_approvers_over_500"}


def person(name: str, tenant: str | None = "acme", perms: tuple[str, ...] = REVIEWER) -> Any:
    user = get_user_model().objects.create_user(name, password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(
        content_type__app_label="symfonic_django", codename__in=perms))
    if tenant:
        Membership.objects.create(user=user, tenant=Tenant.objects.get(slug=tenant))
    return user


@pytest.fixture
def people(tenants: Any) -> dict[str, Any]:
    return {
        "alice": person("alice"), "carol": person("carol"),
        "bob": person("bob", "globex"),
        # A member who may only start runs, and an account with no permission at all.
        "member": person("member", perms=("start_run",)),
        "nobody": person("nobody", tenant=None, perms=()),
    }


def api(user: Any = None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def admin(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def graph_pause(started_by: Any = None) -> Pause:
    """``refund_graph`` with a refund of 9,999.99 and one of 0.01: one pause, two actions."""
    run = start_run("refund_graph", LARGE_AND_SMALL, scope="acme", started_by=started_by,
                    dispatch=False)
    assert execute_run(run.pk) == RunStatus.PAUSED
    pause = Pause.objects.get(run=run)
    assert pause.approvals_needed == 2
    return pause


def drive_queued() -> None:
    """Run every queued turn in-process, as a worker would: what was let run, runs."""
    for pk in Run.objects.filter(status=RunStatus.QUEUED).values_list("pk", flat=True):
        execute_run(pk)


def refunds() -> list[tuple[str, Decimal]]:
    drive_queued()
    return sorted(Refund.objects.values_list("order_id", "amount"))


def rows(pause: Pause) -> tuple[Any, ...]:
    return (snapshot(pause), list(Decision.objects.filter(pause=pause).order_by("pk").values()),
            list(Run.objects.order_by("pk").values_list("pk", "status")),
            Refund.objects.count())


def refused(response: Any, status: int, code: str) -> None:
    assert (response.status_code, response.json()["code"]) == (status, code), response.json()


def answer(client: APIClient, pause: Pause, given: Any) -> Any:
    return client.post(f"{API}pauses/{pause.pk}/answer/", {"answer": given}, format="json")


def resume(client: APIClient, pause: Pause, given: Any) -> Any:
    return client.post(f"{API}resume/", {"token": pauses.token_for(pause), "answer": given},
                       format="json")


# --- finding 1: one answer, approved by N ------------------------------------------------

def test_a_mixed_answer_over_the_api_is_one_approval_and_refunds_nothing(people):
    pause = graph_pause()
    first = answer(api(people["alice"]), pause, APPROVE_REJECT)
    assert first.status_code == 202, first.json()
    assert (first.json()["run_id"], first.json()["approvals"]) == (
        None, {"have": 1, "need": 2, "by": ["alice"]})
    assert Pause.objects.get(pk=pause.pk).status == PauseStatus.PENDING
    assert refunds() == []

    before = rows(pause)
    other = answer(api(people["carol"]), pause, APPROVE_BOTH)
    refused(other, 409, "approval_mismatch")
    assert '[{"type": "approve"}, {"type": "reject"}]' in other.json()["detail"]
    assert rows(pause) == before and refunds() == []

    same = answer(api(people["carol"]), pause, APPROVE_REJECT)
    assert same.status_code == 202 and same.json()["run_id"] is not None
    # Two approvers of [approve, reject]: the approved refund runs, the rejected one does not.
    assert refunds() == [("BIG-1", Decimal("9999.99"))]


def test_approve_after_a_mixed_approval_is_a_mismatch_and_reject_ends_the_pause(people):
    pause = graph_pause()
    assert answer(api(people["alice"]), pause, APPROVE_REJECT).status_code == 202
    before = rows(pause)
    refused(api(people["carol"]).post(f"{API}pauses/{pause.pk}/approve/", {}, format="json"),
            409, "approval_mismatch")
    assert rows(pause) == before

    # An answer that lets nothing run ends the pause from one reviewer, whatever came before.
    ended = api(people["carol"]).post(f"{API}pauses/{pause.pk}/reject/",
                                      {"comment": "no"}, format="json")
    assert ended.status_code == 202 and ended.json()["run_id"] is not None
    assert Pause.objects.get(pk=pause.pk).status == PauseStatus.ANSWERED
    assert refunds() == []


def test_a_mixed_answer_through_resume_counts_only_from_a_reviewer(people):
    pause = graph_pause()
    for caller in (None, people["nobody"], people["bob"], people["member"]):
        before = rows(pause)
        refused(resume(api(caller), pause, APPROVE_REJECT), 403, "permission_denied")
        assert rows(pause) == before
    assert refunds() == []

    counted = resume(api(people["alice"]), pause, APPROVE_REJECT)
    assert counted.status_code == 202 and counted.json()["approvals"]["have"] == 1
    before = rows(pause)
    refused(resume(api(people["carol"]), pause, APPROVE_BOTH), 409, "approval_mismatch")
    assert rows(pause) == before and refunds() == []


def test_the_admin_form_counts_a_mixed_answer_once_and_refuses_another_list(people):
    pause = graph_pause()
    page = reverse("admin:symfonic_django_pause_change", args=[pause.pk])
    admin(people["alice"]).post(page, {"decision_0": "approve", "decision_1": "respond",
                                       "message_1": "call the customer first"})
    assert Pause.objects.get(pk=pause.pk).status == PauseStatus.PENDING
    (approval,) = Decision.objects.filter(pause=pause)
    assert (approval.action, approval.answer) == ("approve", APPROVE_RESPOND)

    before = rows(pause)
    response = admin(people["carol"]).post(page, {"decision_0": "approve",
                                                  "decision_1": "approve"})
    assert response.status_code == 200
    assert "approval already given is of other decisions" in response.content.decode()
    assert rows(pause) == before and refunds() == []

    admin(people["carol"]).post(page, {"decision_0": "approve", "decision_1": "respond",
                                       "message_1": "call the customer first"})
    assert refunds() == [("BIG-1", Decimal("9999.99"))]


def test_bulk_approve_after_a_mixed_approval_is_refused_and_refunds_nothing(people):
    pause = graph_pause()
    assert answer(api(people["alice"]), pause, APPROVE_REJECT).status_code == 202
    before = rows(pause)
    response = admin(people["carol"]).post(
        reverse("admin:symfonic_django_pause_changelist"),
        {"action": "approve_selected", "_selected_action": [str(pause.pk)], "post": "yes"},
        follow=True)
    assert response.status_code == 200
    warnings = [str(m) for m in get_messages(response.wsgi_request) if m.level_tag == "warning"]
    assert len(warnings) == 1 and "approval already given is of other decisions" in warnings[0]
    assert rows(pause) == before and refunds() == []


# --- finding 2: a token never makes an approver --------------------------------------------

def test_a_member_who_may_only_start_runs_cannot_approve_its_own_refund_with_spare_accounts(
        people):
    started = api(people["member"]).post(f"{API}runs/", {
        "agent": "refund", "input": {"order_id": "M-750", "amount": 750}}, format="json")
    assert started.status_code == 202, started.json()
    assert execute_run(started.json()["run_id"]) == RunStatus.PAUSED
    pause = Pause.objects.get(run_id=started.json()["run_id"])
    assert pause.approvals_needed == 2
    approve = {"decisions": [{"type": "approve"}]}
    for caller in (None, people["member"], people["nobody"], people["bob"]):
        before = rows(pause)
        refused(resume(api(caller), pause, approve), 403, "permission_denied")
        assert rows(pause) == before
    assert refunds() == []


def test_the_starter_never_counts_toward_its_own_quorum_even_as_a_reviewer(people):
    pause = graph_pause(started_by=people["alice"])
    before = rows(pause)
    refused(resume(api(people["alice"]), pause, APPROVE_BOTH), 403, "approval_not_counted")
    refused(answer(api(people["alice"]), pause, APPROVE_BOTH), 403, "approval_not_counted")
    assert rows(pause) == before and refunds() == []


@pytest.mark.parametrize("revoke", ["permission", "deactivated", "scope"])
def test_a_reviewer_revoked_since_it_was_loaded_answers_nothing(people, revoke):
    pause = graph_pause()
    alice = get_user_model().objects.get(username="alice")
    assert alice.has_perm("symfonic_django.answer_pause")  # cached on this object from now on
    if revoke == "permission":
        alice.user_permissions.remove(Permission.objects.get(codename="answer_pause"))
    elif revoke == "deactivated":
        get_user_model().objects.filter(pk=alice.pk).update(is_active=False)
    else:
        Membership.objects.filter(user=alice).delete()
    before = rows(pause)
    for move in (lambda: pauses.approve(pause.pk, actor=alice, via="admin"),
                 lambda: pauses.reject(pause.pk, actor=alice, via="api")):
        with pytest.raises(PermissionDenied):
            move()
        assert rows(pause) == before
    assert refunds() == []


def test_a_reviewer_revoked_between_page_load_and_submit_is_refused(people):
    pause = graph_pause()
    page = reverse("admin:symfonic_django_pause_change", args=[pause.pk])
    client = admin(people["alice"])
    assert 'value="approve"' in client.get(page).content.decode()
    people["alice"].user_permissions.remove(Permission.objects.get(codename="answer_pause"))
    before = rows(pause)
    assert client.post(page, {"decision_0": "approve", "decision_1": "approve"}
                       ).status_code == 403
    assert rows(pause) == before and refunds() == []


def test_the_starter_still_answers_a_single_approver_pause_with_its_token_alone(people):
    run = start_run("refund", {"order_id": "S-40", "amount": 40}, scope="acme",
                    started_by=people["member"], dispatch=False)
    execute_run(run.pk)
    pause = Pause.objects.get(run=run)
    assert pause.approvals_needed == 1
    assert resume(api(), pause, {"decisions": [{"type": "approve"}]}).status_code == 202
    assert refunds() == [("S-40", Decimal("40.00"))]


# --- who is told who answered ----------------------------------------------------------------

def test_already_answered_names_the_answerer_only_to_a_reader_of_the_scope(people):
    pause = graph_pause()
    assert api(people["alice"]).post(f"{API}pauses/{pause.pk}/reject/", {},
                                     format="json").status_code == 202
    before = rows(pause)
    to_reader = answer(api(people["carol"]), pause, APPROVE_BOTH)
    refused(to_reader, 409, "already_answered")
    assert "alice" in to_reader.json()["detail"]
    for caller in (None, people["member"]):
        to_holder = resume(api(caller), pause, APPROVE_BOTH)
        refused(to_holder, 409, "already_answered")
        assert "alice" not in to_holder.json()["detail"]
    assert rows(pause) == before


# --- claims -----------------------------------------------------------------------------------

def test_the_claim_of_a_reviewer_who_lost_the_answer_permission_blocks_no_one(people):
    pause = graph_pause()
    pauses.claim(pause.pk, actor=people["alice"], via="admin")
    people["alice"].user_permissions.remove(Permission.objects.get(codename="answer_pause"))
    taken = pauses.claim(pause.pk, actor=people["carol"], via="admin")
    assert taken.claimed_by == people["carol"]
    assert Pause.objects.get(pk=pause.pk).claimed_by_id == people["carol"].pk


# --- the second attack: what it found after the fixes above ---------------------------------

@pytest.mark.parametrize("revoke", ["permission", "deactivated", "scope"])
def test_an_approval_whose_approver_was_revoked_since_no_longer_counts(people, revoke):
    """dave approves, then loses the right to answer; alice's approval is then the only one
    that stands: the pause waits for a second reviewer, and nothing is refunded."""
    dave = person("dave")
    pause = graph_pause()
    assert answer(api(dave), pause, APPROVE_BOTH).status_code == 202
    if revoke == "permission":
        dave.user_permissions.remove(Permission.objects.get(codename="answer_pause"))
    elif revoke == "deactivated":
        get_user_model().objects.filter(pk=dave.pk).update(is_active=False)
    else:
        Membership.objects.filter(user=dave).delete()
    second = answer(api(people["alice"]), pause, APPROVE_BOTH)
    assert second.status_code == 202, second.json()
    assert (second.json()["run_id"], second.json()["approvals"]) == (
        None, {"have": 1, "need": 2, "by": ["alice"]})
    assert Pause.objects.get(pk=pause.pk).status == PauseStatus.PENDING
    assert refunds() == []
    third = answer(api(people["carol"]), pause, APPROVE_BOTH)  # a reviewer who still may
    assert third.status_code == 202 and third.json()["run_id"] is not None
    assert refunds() == [("BIG-1", Decimal("9999.99")), ("SMALL-2", Decimal("0.01"))]


@pytest.mark.parametrize("kind", ["list", "object"])
def test_a_decision_type_that_is_not_a_word_is_an_invalid_answer_on_every_answer_surface(
        people, kind):
    pause = graph_pause()
    bad = {"decisions": [{"type": ["approve"] if kind == "list" else {"a": 1}}] * 2}
    before = rows(pause)
    refused(answer(api(people["alice"]), pause, bad), 400, "invalid_answer")
    refused(resume(api(), pause, bad), 400, "invalid_answer")
    refused(resume(api(people["alice"]), pause, bad), 400, "invalid_answer")
    assert rows(pause) == before and refunds() == []


def test_the_api_offers_no_edit_on_a_pause_that_needs_several_approvers(people):
    """The admin never offered it; the API's pause now says what an answer may give."""
    several = graph_pause()
    shown = api(people["alice"]).get(f"{API}pauses/{several.pk}/").json()
    assert len(shown["offered_decisions"]) == 2
    assert all("edit" not in offered and "approve" in offered
               for offered in shown["offered_decisions"])
    run = start_run("refund_graph", {"refunds": [{"order_id": "ONE-1", "amount": 5}]},
                    scope="acme", dispatch=False)
    assert execute_run(run.pk) == RunStatus.PAUSED
    one = Pause.objects.get(run=run)
    assert one.approvals_needed == 1
    offered = api(people["alice"]).get(f"{API}pauses/{one.pk}/").json()["offered_decisions"]
    assert offered == [hitl.review_config(one.prompt, "refund")["allowed_decisions"]]
    assert "edit" in offered[0]
