"""The HTTP API's acceptance (docs/design.md section 6, pinned): every row of the error
table, the success shapes, pagination and filters, runs and events,
``Idempotency-Key``, and a list whose query count does not grow with the page.

Every refusal asserts its status, its ``code``, that ``detail`` is a sentence
for a person, and that the pause row is exactly as it was (``snapshot``).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import time
from datetime import timedelta
from typing import Any
from uuid import uuid4

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core import signing
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from symfonic_django import pauses
from symfonic_django.models import Decision, IdempotentResponse, Pause, PauseStatus, Run, RunStatus
from symfonic_django.pauses import claims_for, token_for
from symfonic_django.tokens import mint_token, read_watch_ticket, scope_hash
from symfonic_django.turns import execute_run
from tests.testapp.models import Membership, Tenant
from tests.testapp.seed import seed_users

from .agents import APPROVE_PROMPT
from .conftest import paused_run, snapshot

pytestmark = pytest.mark.django_db

API = "/api/symfonic/"
PAUSE_KEYS = {"id", "kind", "status", "prompt", "answer_schema", "run_id", "root_run_id",
              "session_id", "thread_id", "created_at", "expires_at", "answered_at",
              "answered_by", "answer", "continuation_run_id"}
APPROVE = {"decisions": [{"type": "approve"}]}


# --- fixtures and helpers -------------------------------------------------------

@pytest.fixture(autouse=True)
def fresh_throttle_history():
    """DRF keeps throttle history in the default cache, which outlives a test."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def start_run_permission(db: Any) -> Permission:
    """``symfonic_django.start_run``, which ``POST runs/`` asks for.

    Run's Meta declares it and its migration creates the row; until that lands,
    the row is made here, as Django's ``post_migrate`` would make it.
    """
    content_type = ContentType.objects.get_for_model(Run)
    return Permission.objects.get_or_create(codename="start_run", content_type=content_type,
                                            defaults={"name": "Can start agent runs"})[0]


@pytest.fixture
def users(tenants: dict[str, Any], start_run_permission: Permission
          ) -> dict[str, dict[str, str]]:
    """``admin`` (superuser), ``alice`` (acme) and ``bob`` (globex), as ``seed_demo`` makes them."""
    return seed_users()


def client_for(token: str | None) -> APIClient:
    client = APIClient()
    if token:
        client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


@pytest.fixture
def alice(users: dict[str, Any]) -> APIClient:
    return client_for(users["alice"]["token"])


@pytest.fixture
def bob(users: dict[str, Any]) -> APIClient:
    return client_for(users["bob"]["token"])


@pytest.fixture
def admin(users: dict[str, Any]) -> APIClient:
    return client_for(users["admin"]["token"])


@pytest.fixture
def carol(tenants: dict[str, Any], users: dict[str, Any]) -> APIClient:
    """A reviewer of acme who may look at pauses but lacks ``answer_pause``."""
    user = get_user_model().objects.create_user("carol", password="carol-pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(
        content_type__app_label="symfonic_django", codename__startswith="view_"))
    Membership.objects.create(user=user, tenant=tenants["acme"])
    return client_for(Token.objects.create(user=user).key)


def post(client: APIClient, path: str, body: Any = None, **extra: Any) -> Any:
    return client.post(API + path, body if body is not None else {}, format="json", **extra)


def is_sentence(text: Any) -> bool:
    """A sentence for a person: words, a capital (or a quoted name) first, a full stop."""
    return (isinstance(text, str) and " " in text.strip()
            and (text[:1].isupper() or text[:1] in "'\"") and text.rstrip()[-1:] in ".!?")


def assert_refused(response: Any, status: int, code: str) -> dict[str, Any]:
    body = response.json()
    assert (response.status_code, body.get("code")) == (status, code), body
    assert set(body) == {"code", "detail"}
    assert is_sentence(body["detail"]), body["detail"]
    return body


def assert_accepted(response: Any) -> dict[str, Any]:
    body = response.json()
    assert response.status_code == 202, body
    assert set(body) == {"pause", "run_id", "stream"}
    if body["run_id"] is not None:
        assert set(body["stream"]) == {"path", "ticket"}
        assert body["stream"]["path"] == f"/ws/symfonic/runs/{body['run_id']}/"
        ticket = read_watch_ticket(body["stream"]["ticket"])
        assert ticket is not None and ticket.run_id == body["run_id"]
    return body


def forged_token(pause: Pause, **changes: Any) -> str:
    """A correctly signed token whose claims differ from the pause's in ``changes``."""
    return mint_token(dataclasses.replace(claims_for(pause), **changes))


def many_pauses(n: int, *, scope: str = "acme", kind: str = "approval",
                status: str = PauseStatus.PENDING, answered_by: Any = None) -> Run:
    """One paused run with ``n`` pauses written directly (no agent turn), newest last."""
    run = Run(agent="echo", scope_key=scope, status=RunStatus.PAUSED)
    run.root_id = run.id
    run.save(force_insert=True)
    now = timezone.now().replace(microsecond=0)
    Pause.objects.bulk_create([
        Pause(run=run, root_run=run, scope_key=scope, kind=kind,
              prompt=APPROVE_PROMPT if kind == "approval" else {"question": "Which color?"},
              answer_schema=None if kind == "approval" else {"type": "string"},
              bound_run_id=str(run.id), bound_root_run_id=str(run.id), status=status,
              answered_by=answered_by, answer=APPROVE if status == PauseStatus.ANSWERED else None,
              created_at=now + timedelta(seconds=i), expires_at=now + timedelta(days=1))
        for i in range(n)
    ])
    return run


# --- 400 invalid_answer ------------------------------------------------------------

@pytest.mark.parametrize("answer", [
    {"decisions": [{"type": "bogus"}]},
    {"decisions": [{"type": "approve"}, {"type": "approve"}]},
    {"decisions": [{"type": "edit", "edited_action": {"name": "ship", "args": {"qty": 0}}}]},
    {"decisions": [{"type": "respond", "message": "no"}]},
    {"decisions": [{"type": "reject", "message": 7}]},
    "yes",
], ids=["unknown-decision", "two-decisions-for-one-action", "edit-outside-args-schema",
        "decision-not-allowed-for-the-action", "message-not-a-string", "not-a-hitl-response"])
def test_answer_that_does_not_fit_the_approval_is_refused_as_invalid_answer(alice, answer):
    _, pause = paused_run()
    before = snapshot(pause)
    assert_refused(post(alice, f"pauses/{pause.pk}/answer/", {"answer": answer}),
                   400, "invalid_answer")
    assert snapshot(pause) == before


def test_answer_outside_the_question_schema_is_refused_as_invalid_answer(alice):
    _, pause = paused_run("question")
    before = snapshot(pause)
    response = post(alice, f"pauses/{pause.pk}/answer/", {"answer": {"color": "green"}})
    assert_refused(response, 400, "invalid_answer")
    assert snapshot(pause) == before


def test_approving_a_question_is_refused_as_invalid_answer(alice):
    _, pause = paused_run("question")
    before = snapshot(pause)
    assert_refused(post(alice, f"pauses/{pause.pk}/approve/"), 400, "invalid_answer")
    assert snapshot(pause) == before


def test_edited_args_on_a_several_action_pause_are_refused_as_invalid_answer(alice):
    run, _ = paused_run("siblings", {"n": 1})
    pause = Pause.objects.get(run=run)
    Pause.objects.filter(pk=pause.pk).update(prompt={"action_requests": [
        {"name": "a", "args": {}}, {"name": "b", "args": {}}]})
    before = snapshot(pause)
    response = post(alice, f"pauses/{pause.pk}/approve/", {"edited_args": {"x": 1}})
    assert_refused(response, 400, "invalid_answer")
    assert snapshot(pause) == before


# --- 400 invalid_request -----------------------------------------------------------

@pytest.mark.parametrize("path, body", [
    ("answer/", "{not json"),
    ("answer/", "[1, 2]"),
    ("answer/", "{}"),
    ("approve/", '{"edited_args": "not an object"}'),
    ("reject/", '{"comment": ["not", "a", "string"]}'),
], ids=["malformed-json", "not-an-object", "answer-missing", "edited-args-not-object",
        "comment-not-string"])
def test_malformed_body_is_refused_as_invalid_request(alice, path, body):
    _, pause = paused_run()
    before = snapshot(pause)
    response = alice.post(f"{API}pauses/{pause.pk}/{path}", body,
                          content_type="application/json")
    assert_refused(response, 400, "invalid_request")
    assert snapshot(pause) == before


def test_resume_without_a_token_is_refused_as_invalid_request(tenants):
    _, pause = paused_run()
    before = snapshot(pause)
    assert_refused(post(APIClient(), "resume/", {"answer": APPROVE}), 400, "invalid_request")
    assert snapshot(pause) == before


@pytest.mark.parametrize("query", ["status=bogus", "kind=bogus", "run=not-a-uuid"])
def test_unknown_filter_value_is_refused_as_invalid_request(alice, query):
    assert_refused(alice.get(f"{API}pauses/?{query}"), 400, "invalid_request")


@pytest.mark.parametrize("raw", ["p=not-a-time", "p=2026-13-45 10:00:00", "o=-1", "r=x"])
def test_cursor_the_api_did_not_issue_is_refused_as_invalid_request(alice, raw):
    many_pauses(2)
    cursor = base64.b64encode(raw.encode()).decode()
    assert_refused(alice.get(f"{API}pauses/?cursor={cursor}"), 400, "invalid_request")


def test_starting_a_run_of_an_unknown_agent_is_refused_as_invalid_request(alice):
    response = post(alice, "runs/", {"agent": "no-such-agent", "input": {}})
    assert_refused(response, 400, "invalid_request")
    assert not Run.objects.exists()


# --- 401 not_authenticated ------------------------------------------------------------

@pytest.mark.parametrize("method, path", [
    ("get", "pauses/"), ("get", "pauses/{id}/"), ("post", "pauses/{id}/approve/"),
    ("post", "pauses/{id}/answer/"), ("post", "pauses/{id}/reject/"), ("post", "runs/"),
    ("get", "runs/{run}/"), ("get", "runs/{run}/events/"),
])
def test_request_without_credentials_is_refused_as_not_authenticated(tenants, method, path):
    run, pause = paused_run()
    before = snapshot(pause)
    url = API + path.format(id=pause.pk, run=run.pk)
    response = getattr(APIClient(), method)(url, {"answer": APPROVE}, format="json")
    assert_refused(response, 401, "not_authenticated")
    assert response.headers["WWW-Authenticate"]
    assert snapshot(pause) == before


def test_unknown_api_token_is_refused_as_not_authenticated(tenants):
    _, pause = paused_run()
    before = snapshot(pause)
    response = post(client_for("f" * 40), f"pauses/{pause.pk}/approve/")
    assert_refused(response, 401, "not_authenticated")
    assert snapshot(pause) == before


# --- 403 permission_denied -------------------------------------------------------------

@pytest.mark.parametrize("action, body", [
    ("approve/", {}), ("reject/", {"comment": "no"}), ("answer/", {"answer": APPROVE}),
])
def test_reviewer_without_answer_permission_is_refused_as_permission_denied(carol, action, body):
    _, pause = paused_run()
    before = snapshot(pause)
    assert carol.get(f"{API}pauses/{pause.pk}/").status_code == 200  # she may look
    assert_refused(post(carol, f"pauses/{pause.pk}/{action}", body), 403, "permission_denied")
    assert snapshot(pause) == before
    assert not Decision.objects.filter(pause=pause).exists()


def test_caller_of_no_scope_may_not_start_a_run(admin):
    # The superuser sees every scope but belongs to none a run could start in.
    body = assert_refused(post(admin, "runs/", {"agent": "echo", "input": {}}), 403,
                          "permission_denied")
    assert "SYMFONIC['REQUEST_SCOPE']" in body["detail"]  # it names the setting to look at
    assert not Run.objects.exists()


# --- 403 invalid_token -------------------------------------------------------------------

def _tampered(token: str) -> str:
    value, _, signature = token.rpartition(":")
    return f"{value}:{'A' if signature[0] != 'A' else 'B'}{signature[1:]}"


@pytest.mark.parametrize("make_token", [
    lambda pause: "not-a-token",
    lambda pause: _tampered(token_for(pause)),
    lambda pause: signing.dumps([str(pause.pk)], salt="some.other.salt"),
    lambda pause: signing.Signer(salt="symfonic_django.pause-token", algorithm="sha256",
                                 key="another-secret-key-" * 3).sign_object(
                                     list(dataclasses.astuple(claims_for(pause)))),
    lambda pause: "x" * 3000,
], ids=["garbage", "tampered-signature", "wrong-salt", "wrong-key", "oversized"])
def test_bad_token_is_refused_as_invalid_token(tenants, make_token):
    _, pause = paused_run()
    before = snapshot(pause)
    response = post(APIClient(), "resume/", {"token": make_token(pause), "answer": APPROVE})
    assert_refused(response, 403, "invalid_token")
    assert snapshot(pause) == before


# --- 403 scope_mismatch, scope_unknown, lineage_refused ----------------------------------

def test_token_claiming_another_scope_is_refused_as_scope_mismatch(tenants):
    _, pause = paused_run(scope="acme")
    before = snapshot(pause)
    token = forged_token(pause, scope_hash=scope_hash("globex"))
    response = post(APIClient(), "resume/", {"token": token, "answer": APPROVE})
    assert_refused(response, 403, "scope_mismatch")
    assert snapshot(pause) == before


def test_token_of_a_deleted_tenant_is_refused_as_scope_unknown(tenants):
    _, pause = paused_run(scope="acme")
    token = token_for(pause)
    Tenant.objects.filter(slug="acme").delete()  # SCOPE_LOADER now returns None
    before = snapshot(pause)
    response = post(APIClient(), "resume/", {"token": token, "answer": APPROVE})
    assert_refused(response, 403, "scope_unknown")
    assert snapshot(pause) == before


def test_pause_bound_to_a_run_nobody_issued_is_refused_as_lineage_refused(tenants):
    _, pause = paused_run("forged")
    assert pause.bound_run_id == "00000000-0000-0000-0000-000000000000"
    before = snapshot(pause)
    response = post(APIClient(), "resume/", {"token": token_for(pause), "answer": APPROVE})
    assert_refused(response, 403, "lineage_refused")
    assert snapshot(pause) == before


# --- 404 not_found -------------------------------------------------------------------------

@pytest.mark.parametrize("method, action", [
    ("get", ""), ("post", "approve/"), ("post", "reject/"), ("post", "answer/"),
])
def test_unknown_and_other_tenants_pauses_are_both_not_found(alice, method, action):
    _, theirs = paused_run(scope="globex")
    before = snapshot(theirs)
    call = getattr(alice, method)
    unknown = call(f"{API}pauses/{uuid4()}/{action}", {"answer": APPROVE}, format="json")
    cross = call(f"{API}pauses/{theirs.pk}/{action}", {"answer": APPROVE}, format="json")
    assert_refused(unknown, 404, "not_found")
    assert_refused(cross, 404, "not_found")
    assert cross.json() == unknown.json()  # no existence leak, not even in the sentence
    assert snapshot(theirs) == before


def test_pause_id_that_is_not_a_uuid_is_not_found(alice):
    assert_refused(alice.get(f"{API}pauses/not-a-uuid/"), 404, "not_found")
    assert_refused(post(alice, "pauses/not-a-uuid/approve/"), 404, "not_found")


def test_other_tenants_run_and_its_events_are_not_found(alice, bob):
    run, _ = paused_run(scope="acme")
    assert alice.get(f"{API}runs/{run.pk}/").status_code == 200
    assert_refused(bob.get(f"{API}runs/{run.pk}/"), 404, "not_found")
    assert_refused(bob.get(f"{API}runs/{run.pk}/events/"), 404, "not_found")
    assert_refused(bob.get(f"{API}runs/{uuid4()}/"), 404, "not_found")


def test_other_tenants_pauses_are_absent_from_the_list(alice, bob):
    _, ours = paused_run(scope="acme")
    _, theirs = paused_run(scope="globex")
    assert [p["id"] for p in alice.get(f"{API}pauses/").json()["results"]] == [str(ours.pk)]
    assert [p["id"] for p in bob.get(f"{API}pauses/").json()["results"]] == [str(theirs.pk)]
    assert alice.get(f"{API}pauses/?run={theirs.run_id}").json()["results"] == []


# --- 409 already_answered -------------------------------------------------------------------

def test_second_answer_over_http_is_refused_as_already_answered(alice):
    _, pause = paused_run()
    assert_accepted(post(alice, f"pauses/{pause.pk}/approve/"))
    before = snapshot(pause)
    body = assert_refused(post(alice, f"pauses/{pause.pk}/reject/", {"comment": "late"}),
                          409, "already_answered")
    assert "alice" in body["detail"]
    assert snapshot(pause) == before
    assert Decision.objects.filter(pause=pause).count() == 1


def test_second_redeem_of_a_token_is_refused_as_already_answered(tenants):
    _, pause = paused_run()
    token = token_for(pause)
    assert_accepted(post(APIClient(), "resume/", {"token": token, "answer": APPROVE}))
    before = snapshot(pause)
    response = post(APIClient(), "resume/", {"token": token, "answer": APPROVE})
    assert_refused(response, 409, "already_answered")
    assert snapshot(pause) == before


def test_answer_to_a_cancelled_pause_is_refused_as_already_answered(alice):
    _, pause = paused_run()
    pauses.cancel(pause.pk)
    before = snapshot(pause)
    assert_refused(post(alice, f"pauses/{pause.pk}/approve/"), 409, "already_answered")
    assert snapshot(pause) == before


# --- 410 expired ------------------------------------------------------------------------------

def test_expired_token_is_refused_as_expired(tenants):
    _, pause = paused_run()
    before = snapshot(pause)
    token = forged_token(pause, exp=int(time.time()) - 1)
    response = post(APIClient(), "resume/", {"token": token, "answer": APPROVE})
    assert_refused(response, 410, "expired")
    assert snapshot(pause) == before


def test_answer_to_a_pause_past_its_expiry_is_refused_as_expired(alice):
    _, pause = paused_run()
    Pause.objects.filter(pk=pause.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    before = snapshot(pause)
    assert_refused(post(alice, f"pauses/{pause.pk}/approve/"), 410, "expired")
    assert snapshot(pause) == before


def test_answer_to_an_expired_pause_is_refused_as_expired(alice):
    _, pause = paused_run()
    assert pauses.expire(pause.pk, now=pause.expires_at + timedelta(seconds=1)) is not None
    before = snapshot(pause)
    assert before["status"] == PauseStatus.EXPIRED
    response = post(alice, f"pauses/{pause.pk}/answer/", {"answer": APPROVE})
    assert_refused(response, 410, "expired")
    assert snapshot(pause) == before


# --- 413 payload_too_large -----------------------------------------------------------------------

def small_answers() -> Any:
    return override_settings(SYMFONIC={**django_settings.SYMFONIC, "MAX_ANSWER_BYTES": 128})


def test_answer_over_max_answer_bytes_is_refused_as_payload_too_large(alice):
    _, pause = paused_run()
    before = snapshot(pause)
    big = {"decisions": [{"type": "reject", "message": "x" * 200}]}
    with small_answers():
        response = post(alice, f"pauses/{pause.pk}/answer/", {"answer": big})
    assert_refused(response, 413, "payload_too_large")
    assert snapshot(pause) == before


def test_token_answer_over_max_answer_bytes_is_refused_as_payload_too_large(tenants):
    _, pause = paused_run()
    before = snapshot(pause)
    big = {"decisions": [{"type": "reject", "message": "x" * 200}]}
    with small_answers():
        response = post(APIClient(), "resume/", {"token": token_for(pause), "answer": big})
    assert_refused(response, 413, "payload_too_large")
    assert snapshot(pause) == before


def test_body_far_over_max_answer_bytes_is_refused_before_it_is_parsed(alice):
    _, pause = paused_run()
    before = snapshot(pause)
    with small_answers():
        response = alice.post(f"{API}pauses/{pause.pk}/answer/", "{" * 20000,
                              content_type="application/json")
    assert_refused(response, 413, "payload_too_large")
    assert snapshot(pause) == before


# --- 429 throttled ---------------------------------------------------------------------------------

def test_resume_over_the_rate_limit_is_refused_as_throttled(tenants):
    _, pause = paused_run()
    before = snapshot(pause)
    rates = {**django_settings.REST_FRAMEWORK,
             "DEFAULT_THROTTLE_RATES": {"symfonic_resume": "2/min"}}
    with override_settings(REST_FRAMEWORK=rates):
        for _ in range(2):
            response = post(APIClient(), "resume/", {"token": "not-a-token", "answer": APPROVE})
            assert_refused(response, 403, "invalid_token")
        response = post(APIClient(), "resume/", {"token": token_for(pause), "answer": APPROVE})
    assert_refused(response, 429, "throttled")
    assert int(response.headers["Retry-After"]) > 0
    assert snapshot(pause) == before


# --- 202: the answer endpoints ---------------------------------------------------------------------

def test_approval_is_accepted_with_the_continuation_and_its_stream(alice):
    run, pause = paused_run()
    body = assert_accepted(post(alice, f"pauses/{pause.pk}/approve/", {"comment": "ok"}))
    continuation = Run.objects.get(parent=run)
    assert body["run_id"] == str(continuation.pk)
    assert continuation.status == RunStatus.QUEUED
    assert body["pause"]["id"] == str(pause.pk)
    assert body["pause"]["status"] == "answered" and body["pause"]["answered_by"] == "alice"
    assert body["pause"]["answer"] == APPROVE
    assert body["pause"]["continuation_run_id"] == str(continuation.pk)
    assert Decision.objects.get(pause=pause).via == "api"


def test_approval_with_edited_args_answers_an_edit(alice):
    _, pause = paused_run()
    body = assert_accepted(post(alice, f"pauses/{pause.pk}/approve/",
                                {"edited_args": {"qty": 3}}))
    assert body["pause"]["answer"] == {"decisions": [
        {"type": "edit", "edited_action": {"name": "ship", "args": {"qty": 3}}}]}


def test_rejection_is_accepted_and_carries_the_comment(alice):
    _, pause = paused_run()
    body = assert_accepted(post(alice, f"pauses/{pause.pk}/reject/", {"comment": "too much"}))
    assert body["pause"]["answer"] == {"decisions": [{"type": "reject", "message": "too much"}]}
    assert body["run_id"] is not None


def test_question_answer_is_accepted(alice):
    _, pause = paused_run("question")
    body = assert_accepted(post(alice, f"pauses/{pause.pk}/answer/",
                                {"answer": {"color": "red"}}))
    assert body["pause"]["answer"] == {"color": "red"} and body["pause"]["kind"] == "question"


def test_token_resume_is_accepted_without_a_login(tenants):
    run, pause = paused_run()
    body = assert_accepted(post(APIClient(), "resume/",
                                {"token": token_for(pause), "answer": APPROVE}))
    assert body["run_id"] == str(Run.objects.get(parent=run).pk)
    assert body["pause"]["answered_by"] is None
    assert Pause.objects.get(pk=pause.pk).answered_via == "token"


def test_answered_sibling_has_no_run_or_stream_until_the_last_is_answered(alice):
    run, _ = paused_run("siblings", {"n": 2})
    first, last = Pause.objects.filter(run=run).order_by("created_at")
    body = assert_accepted(post(alice, f"pauses/{first.pk}/approve/"))
    assert body["run_id"] is None and body["stream"] is None
    assert body["pause"]["status"] == "answered"
    assert not Run.objects.filter(parent=run).exists()
    body = assert_accepted(post(alice, f"pauses/{last.pk}/reject/"))
    assert body["run_id"] == str(Run.objects.get(parent=run).pk)


def test_pause_json_has_exactly_the_pinned_keys(alice):
    run, pause = paused_run()
    body = alice.get(f"{API}pauses/{pause.pk}/").json()
    # docs/design.md section 6 allows fields beside the pinned ones; this app adds ``scope``
    # and ``offered_decisions``.
    added = {"scope", "offered_decisions"}
    assert set(body) == PAUSE_KEYS | added
    assert body["id"] == str(pause.pk) and body["run_id"] == str(run.pk)
    assert body["root_run_id"] == str(run.pk) and body["kind"] == "approval"
    assert body["status"] == "pending" and body["prompt"]["action_requests"][0]["name"] == "ship"
    assert body["answered_by"] is body["answer"] is body["answered_at"] is None
    assert body["continuation_run_id"] is None
    assert set(alice.get(f"{API}pauses/").json()["results"][0]) == PAUSE_KEYS | added


def test_a_pause_names_its_scope_to_its_reviewers(alice, bob, admin):
    _, acme_pause = paused_run(scope="acme")
    _, globex_pause = paused_run(scope="globex")
    assert alice.get(f"{API}pauses/{acme_pause.pk}/").json()["scope"] == "acme"
    assert [p["scope"] for p in bob.get(f"{API}pauses/").json()["results"]] == ["globex"]
    assert {p["id"]: p["scope"] for p in admin.get(f"{API}pauses/").json()["results"]} == {
        str(acme_pause.pk): "acme", str(globex_pause.pk): "globex"}
    answered = assert_accepted(post(alice, f"pauses/{acme_pause.pk}/approve/"))
    assert answered["pause"]["scope"] == "acme"


def test_a_token_holder_who_is_no_reviewer_is_not_told_the_scope(tenants):
    """A token carries only a keyed hash of its scope (rule C4); the 202 does not undo that."""
    _, pause = paused_run()
    body = assert_accepted(post(APIClient(), "resume/", {"token": token_for(pause),
                                                         "answer": APPROVE}))
    assert body["pause"]["id"] == str(pause.pk) and body["pause"]["scope"] is None
    assert b"acme" not in json.dumps(body).encode()


def test_a_token_holder_who_reviews_the_scope_is_told_it(alice):
    _, pause = paused_run()
    body = assert_accepted(post(alice, "resume/", {"token": token_for(pause), "answer": APPROVE}))
    assert body["pause"]["scope"] == "acme"


# --- the list: cursor pages and filters ------------------------------------------------------------

def test_pause_list_is_a_cursor_page_that_walks_every_pause_newest_first(alice):
    run = many_pauses(7)
    expected = [str(pk) for pk in Pause.objects.filter(run=run).order_by("-created_at")
                .values_list("pk", flat=True)]
    page = alice.get(f"{API}pauses/?page_size=3").json()
    assert set(page) == {"next", "previous", "results"} and page["previous"] is None
    seen, pages = [], [page]
    while page["next"]:
        page = alice.get(page["next"]).json()
        pages.append(page)
    seen = [p["id"] for pg in pages for p in pg["results"]]
    assert seen == expected and [len(pg["results"]) for pg in pages] == [3, 3, 1]
    back = alice.get(pages[-1]["previous"]).json()
    assert [p["id"] for p in back["results"]] == expected[3:6]


def test_pause_list_filters_by_status_kind_and_run(alice, users):
    approvals = many_pauses(3)
    questions = many_pauses(2, kind="question")
    answered = many_pauses(1, status=PauseStatus.ANSWERED)

    def ids(query: str) -> set[str]:
        response = alice.get(f"{API}pauses/?{query}")
        assert response.status_code == 200, response.json()
        return {p["id"] for p in response.json()["results"]}

    def of(run: Run) -> set[str]:
        return {str(pk) for pk in Pause.objects.filter(run=run).values_list("pk", flat=True)}

    assert ids(f"run={approvals.pk}") == of(approvals)
    assert ids("kind=question") == of(questions)
    assert ids("status=answered") == of(answered)
    assert ids("status=pending&kind=approval") == of(approvals)
    assert ids(f"status=pending&run={answered.pk}") == set()


def test_pause_list_query_count_does_not_grow_with_the_page(alice, users):
    admin_user = get_user_model().objects.get(username="admin")

    def queries_for(n: int) -> int:
        Pause.objects.all().delete()
        many_pauses(n - n // 2)
        many_pauses(n // 2, status=PauseStatus.ANSWERED, answered_by=admin_user)
        with CaptureQueriesContext(connection) as captured:
            response = alice.get(f"{API}pauses/?page_size=50")
        assert len(response.json()["results"]) == n
        return len(captured.captured_queries)

    assert queries_for(5) == queries_for(50)


# --- runs and their events -------------------------------------------------------------------------

def test_run_detail_shows_the_turn(alice):
    run, _ = paused_run()
    body = alice.get(f"{API}runs/{run.pk}/").json()
    assert body["id"] == str(run.pk) and body["status"] == "paused" and body["agent"] == "echo"
    assert body["root_run_id"] == str(run.pk) and body["parent_run_id"] is None


def test_run_events_after_n_replays_only_later_events(alice):
    run, pause = paused_run()
    everything = alice.get(f"{API}runs/{run.pk}/events/").json()["results"]
    assert [e["seq"] for e in everything] == [1, 2, 3, 4]
    assert [e["type"] for e in everything] == ["turn.started", "message.delta",
                                              "pause.requested", "turn.paused"]
    assert {k for e in everything for k in e} == {"seq", "type", "run_id", "root_run_id", "ts",
                                                  "data"}
    later = alice.get(f"{API}runs/{run.pk}/events/?after=2").json()["results"]
    assert later == everything[2:]
    requested = later[0]["data"]
    assert requested["pause_id"] == str(pause.pk) and requested["token"]
    assert alice.get(f"{API}runs/{run.pk}/events/?after=4").json() == {"results": []}
    assert_refused(alice.get(f"{API}runs/{run.pk}/events/?after=-1"), 400, "invalid_request")


def test_a_long_run_replays_in_pages_of_1000_from_any_point(alice):
    from symfonic_django.models import TurnEvent

    run, _ = paused_run()  # 4 events, then 2,096 more: a run longer than two pages
    TurnEvent.objects.bulk_create(TurnEvent(run=run, seq=seq, type="message.delta",
                                            data={"text": str(seq)}, scope_key=run.scope_key) for seq in range(5, 2101))
    pages = [[e["seq"] for e in alice.get(f"{API}runs/{run.pk}/events/?after={after}")
              .json()["results"]] for after in (0, 1000, 2000, 2100, 1099)]
    assert pages[:4] == [list(range(1, 1001)), list(range(1001, 2001)),
                         list(range(2001, 2101)), []]
    assert pages[4] == list(range(1100, 2100))


def test_starting_a_run_is_accepted_in_the_callers_tenant(alice):
    body = assert_accepted(post(alice, "runs/", {"agent": "echo", "input": {"x": 1},
                                                "session_id": "s1"}))
    assert body["pause"] is None
    run = Run.objects.get(pk=body["run_id"])
    assert (run.agent, run.scope_key, run.status, run.session_id) == ("echo", "acme", "queued",
                                                                      "s1")
    assert run.input == {"x": 1}
    detail = alice.get(f"{API}runs/{run.pk}/").json()
    assert detail["status"] == "queued"
    assert execute_run(run.pk) == "paused"
    assert alice.get(f"{API}runs/{run.pk}/").json()["status"] == "paused"



# --- who holds a token: only those who may answer (docs/design.md section 6) ------------------------

def requested_data(client: APIClient, run: Run) -> dict[str, Any]:
    response = client.get(f"{API}runs/{run.pk}/events/")
    assert response.status_code == 200, response.json()
    return next(e["data"] for e in response.json()["results"] if e["type"] == "pause.requested")


def test_a_view_only_reviewer_never_sees_a_token(carol, alice):
    run, pause = paused_run()
    token = token_for(pause)
    seen = [carol.get(f"{API}runs/{run.pk}/events/"), carol.get(f"{API}runs/{run.pk}/"),
            carol.get(f"{API}pauses/"), carol.get(f"{API}pauses/{pause.pk}/")]
    assert [r.status_code for r in seen] == [200] * 4  # she may look at all of it...
    assert "token" not in requested_data(carol, run)  # ...but is given no credential
    assert not any(token.encode() in r.content for r in seen)
    assert requested_data(alice, run)["token"] == token  # an answerer of acme is given it


def test_a_view_only_reviewer_given_no_token_cannot_approve(carol):
    """Finding 1: the token read from the events approved a refund. Now there is none to read."""
    run, pause = paused_run()
    before = snapshot(pause)
    data = requested_data(carol, run)
    response = post(APIClient(), "resume/", {"token": data.get("token", ""), "answer": APPROVE})
    assert_refused(response, 400, "invalid_request")  # an empty token is not a token
    assert snapshot(pause) == before


@pytest.mark.parametrize("how", ["api token", "session"])
def test_a_resume_by_an_authenticated_user_records_that_user(users, how):
    _, pause = paused_run()
    client = APIClient()
    alice_user = get_user_model().objects.get(username="alice")
    if how == "session":
        client.force_login(alice_user)
    else:
        client.credentials(HTTP_AUTHORIZATION=f"Token {users['alice']['token']}")
    body = assert_accepted(post(client, "resume/", {"token": token_for(pause), "answer": APPROVE}))
    assert body["pause"]["answered_by"] == "alice"
    decision = Decision.objects.get(pause=pause)
    assert (decision.actor, decision.actor_label, decision.via) == (alice_user, "alice", "token")
    assert Pause.objects.get(pk=pause.pk).answered_by == alice_user


def test_a_resume_with_unknown_api_credentials_is_not_authenticated(tenants):
    _, pause = paused_run()
    before = snapshot(pause)
    response = post(client_for("f" * 40), "resume/", {"token": token_for(pause), "answer": APPROVE})
    assert_refused(response, 401, "not_authenticated")
    assert snapshot(pause) == before


def test_starting_a_run_needs_the_start_run_permission(carol, users):
    dave = get_user_model().objects.create_user("dave", is_staff=True)
    dave.user_permissions.add(Permission.objects.get(codename="answer_pause"))
    Membership.objects.create(user=dave, tenant=Tenant.objects.get(slug="acme"))
    answerer = client_for(Token.objects.create(user=dave).key)
    for client in (carol, answerer):  # view-only, and an answerer who may not start runs
        response = post(client, "runs/", {"agent": "echo", "input": {"amount": -500}})
        assert_refused(response, 403, "permission_denied")
    assert not Run.objects.exists()


TYPED_INPUT = {
    "type": "object",
    "properties": {"order_id": {"type": "string", "minLength": 1},
                   "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": 10000,
                              "multipleOf": 0.01}},
    "required": ["order_id", "amount"], "additionalProperties": False,
}


def typed_agent(scope: Any) -> Any:
    """The echo agent, declaring the input it takes (the ``input_schema`` convention)."""
    from .agents import echo_agent

    return echo_agent(scope)


typed_agent.input_schema = TYPED_INPUT  # type: ignore[attr-defined]


@pytest.fixture
def typed_agents(settings: Any) -> None:
    settings.SYMFONIC = {**settings.SYMFONIC, "AGENTS": {
        **settings.SYMFONIC["AGENTS"], "typed": f"{__name__}.typed_agent"}}


@pytest.mark.parametrize("given", [
    {"order_id": "A-1", "amount": -500}, {"order_id": "A-1", "amount": 0},
    {"order_id": "A-1", "amount": 0.004}, {"order_id": "A-1", "amount": 1e300},
    {"order_id": "A-1"}, {"order_id": "", "amount": 5}, {"order_id": "A-1", "amount": "5"},
    {"order_id": "A-1", "amount": 5, "extra": True}, "refund 5", True, [],
], ids=["negative", "zero", "three-places", "huge", "no-amount", "empty-order", "amount-text",
        "extra-key", "a-string", "a-boolean", "a-list"])
def test_run_input_outside_the_agents_input_schema_is_refused(alice, typed_agents, given):
    body = assert_refused(post(alice, "runs/", {"agent": "typed", "input": given}),
                          400, "invalid_request")
    assert "input_schema of agent 'typed'" in body["detail"]
    assert not Run.objects.exists()


def test_run_input_that_fits_the_agents_input_schema_is_accepted(alice, typed_agents):
    body = assert_accepted(post(alice, "runs/", {"agent": "typed",
                                                "input": {"order_id": "A-1", "amount": 19.99}}))
    assert Run.objects.get(pk=body["run_id"]).input == {"order_id": "A-1", "amount": 19.99}


def test_a_refund_of_a_negative_amount_is_refused_before_a_run_exists(alice):
    response = post(alice, "runs/", {"agent": "refund",
                                     "input": {"order_id": "A-1", "amount": -500}})
    assert_refused(response, 400, "invalid_request")
    assert not Run.objects.exists()


# --- Idempotency-Key --------------------------------------------------------------------------------

def test_same_idempotency_key_from_the_same_caller_gets_the_original_202(alice):
    run, pause = paused_run()
    first = assert_accepted(post(alice, f"pauses/{pause.pk}/approve/",
                                 HTTP_IDEMPOTENCY_KEY="k-1"))
    before = snapshot(pause)
    again = post(alice, f"pauses/{pause.pk}/approve/", HTTP_IDEMPOTENCY_KEY="k-1")
    assert again.status_code == 202 and again.json() == first
    assert snapshot(pause) == before
    assert Run.objects.filter(parent=run).count() == 1
    assert Decision.objects.filter(pause=pause).count() == 1
    # Without the key the repeat is what it is: a lost claim.
    assert_refused(post(alice, f"pauses/{pause.pk}/approve/"), 409, "already_answered")


def test_same_idempotency_key_from_another_caller_gets_its_own_outcome(alice, admin):
    _, pause = paused_run()
    assert_accepted(post(alice, f"pauses/{pause.pk}/approve/", HTTP_IDEMPOTENCY_KEY="k-2"))
    before = snapshot(pause)
    other = post(admin, f"pauses/{pause.pk}/approve/", HTTP_IDEMPOTENCY_KEY="k-2")
    assert_refused(other, 409, "already_answered")
    assert snapshot(pause) == before


def test_same_idempotency_key_on_another_path_is_refused_as_key_reused(alice):
    # The draft and Stripe: a key names one request; sent with another path it is a
    # client's mistake (422), never a replay of a 202 about another pause.
    _, first = paused_run()
    _, second = paused_run()
    one = assert_accepted(post(alice, f"pauses/{first.pk}/approve/", HTTP_IDEMPOTENCY_KEY="k-4"))
    before = snapshot(second)
    assert_refused(post(alice, f"pauses/{second.pk}/reject/", HTTP_IDEMPOTENCY_KEY="k-4"),
                   422, "idempotency_key_reused")
    assert snapshot(second) == before
    assert one["pause"]["id"] == str(first.pk)


def test_same_idempotency_key_with_another_body_is_refused_as_key_reused(alice):
    run, pause = paused_run()
    first = assert_accepted(post(alice, f"pauses/{pause.pk}/approve/", {"comment": "ok"},
                                 HTTP_IDEMPOTENCY_KEY="k-5"))
    before = snapshot(pause)
    edited = post(alice, f"pauses/{pause.pk}/approve/", {"edited_args": {"qty": 9}},
                  HTTP_IDEMPOTENCY_KEY="k-5")
    assert_refused(edited, 422, "idempotency_key_reused")
    assert snapshot(pause) == before and before["answer"] == APPROVE  # the edit is not taken
    assert Decision.objects.filter(pause=pause).count() == 1
    again = post(alice, f"pauses/{pause.pk}/approve/", {"comment": "ok"},
                 HTTP_IDEMPOTENCY_KEY="k-5")
    assert again.status_code == 202 and again.json() == first


@pytest.mark.parametrize("key", ["x" * 256, "caf\u00e9", "tab\there"])
def test_malformed_idempotency_key_is_refused_as_invalid_request(alice, key):
    _, pause = paused_run()
    before = snapshot(pause)
    response = post(alice, f"pauses/{pause.pk}/approve/", HTTP_IDEMPOTENCY_KEY=key)
    assert_refused(response, 400, "invalid_request")
    assert snapshot(pause) == before
    assert not IdempotentResponse.objects.exists()


def test_idempotency_key_replays_a_token_resume(tenants):
    _, pause = paused_run()
    token = token_for(pause)
    first = assert_accepted(post(APIClient(), "resume/", {"token": token, "answer": APPROVE},
                                 HTTP_IDEMPOTENCY_KEY="r-1"))
    again = post(APIClient(), "resume/", {"token": token, "answer": APPROVE},
                 HTTP_IDEMPOTENCY_KEY="r-1")
    assert again.status_code == 202 and again.json() == first


def test_refusal_is_not_remembered_under_its_idempotency_key(alice):
    _, pause = paused_run()
    bad = post(alice, f"pauses/{pause.pk}/answer/", {"answer": "nope"}, HTTP_IDEMPOTENCY_KEY="k-3")
    assert_refused(bad, 400, "invalid_answer")
    assert not IdempotentResponse.objects.exists()
    good = post(alice, f"pauses/{pause.pk}/answer/", {"answer": APPROVE},
                HTTP_IDEMPOTENCY_KEY="k-3")
    assert_accepted(good)


def test_schema_is_served_as_openapi(alice):
    response = APIClient().get(f"{API}schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = json.loads(response.content)
    assert schema["openapi"].startswith("3.")
    assert "/api/symfonic/pauses/{id}/approve/" in schema["paths"]
