"""The refusal list: every bad input is refused with its typed error and code, changing nothing.

A token is redeemed the way the HTTP API redeems it (``redeem_token``: the
deployment's settings, dispatch to a worker); an answer is refused the same
way whether it comes with a token or through the Python API. Every refusal
leaves the pause row, the audit trail and the runs exactly as they were.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import Permission
from django.core import signing
from django.utils import timezone
from rest_framework.test import APIClient

from symfonic_django import pauses
from symfonic_django.continuation import redeem_token
from symfonic_django.exceptions import (
    AlreadyAnswered,
    InvalidAnswer,
    InvalidPauseToken,
    LineageRefused,
    PauseCancelled,
    PauseExpired,
    PauseTokenExpired,
    PayloadTooLarge,
    ScopeMismatch,
    ScopeUnknown,
    SymfonicError,
)
from symfonic_django.models import (
    Decision,
    IdempotentResponse,
    Pause,
    PauseStatus,
    Run,
    TurnEvent,
)
from symfonic_django.pauses import claims_for, token_for
from symfonic_django.tokens import PauseClaims, mint_token, scope_hash

from .conftest import paused_run, snapshot
from .continuations import APPROVE

pytestmark = pytest.mark.django_db

GOOD_QUESTION_ANSWER = {"color": "red"}


def state(pause: Pause) -> dict[str, Any]:
    return {"pause": snapshot(pause), "decisions": Decision.objects.count(),
            "runs": Run.objects.count(), "events": TurnEvent.objects.count()}


def refused(call: Any, error: type[SymfonicError], code: str, status: int,
            pause: Pause) -> None:
    """``call()`` raises exactly ``error`` with ``code`` and ``status`` and changes no row."""
    before = state(pause)
    with pytest.raises(SymfonicError) as caught:
        call()
    assert type(caught.value) is error
    assert (caught.value.code, caught.value.status) == (code, status)
    assert caught.value.detail  # a sentence for people, never empty
    assert state(pause) == before


def redeem(token: Any, answer: Any = APPROVE) -> Any:
    return async_to_sync(redeem_token)(token, answer)


SURFACES = {
    "python": lambda pause, answer: pauses.answer_pause(pause.pk, answer),
    "token": lambda pause, answer: redeem(token_for(pause), answer),
}


# --- tokens --------------------------------------------------------------------

@pytest.mark.parametrize("where", ["first", "middle", "separator", "signature", "last"])
def test_a_token_with_one_byte_changed_is_invalid(tenants, where):
    _, pause = paused_run()
    token = token_for(pause)
    at = {"first": 0, "middle": len(token) // 2, "separator": token.rindex(":"),
          "signature": token.rindex(":") + 5, "last": len(token) - 1}[where]
    forged = token[:at] + ("A" if token[at] != "A" else "B") + token[at + 1:]
    refused(lambda: redeem(forged), InvalidPauseToken, "invalid_token", 403, pause)


def test_a_token_minted_with_another_salt_is_invalid(tenants):
    _, pause = paused_run()
    values = [getattr(claims_for(pause), f) for f in PauseClaims.__dataclass_fields__]
    forged = signing.Signer(salt="symfonic_django.watch-ticket", algorithm="sha256").sign_object(
        values)
    refused(lambda: redeem(forged), InvalidPauseToken, "invalid_token", 403, pause)


def test_an_expired_token_is_refused_as_expired(tenants):
    _, pause = paused_run()
    expired = mint_token(replace(claims_for(pause), exp=int(time.time()) - 1))
    refused(lambda: redeem(expired), PauseTokenExpired, "expired", 410, pause)


def test_a_token_of_another_scope_is_a_scope_mismatch(tenants):
    _, pause = paused_run(scope="acme")
    other = mint_token(replace(claims_for(pause), scope_hash=scope_hash("globex")))
    refused(lambda: redeem(other), ScopeMismatch, "scope_mismatch", 403, pause)


def test_a_token_of_a_pause_that_no_longer_exists_names_an_unknown_scope(tenants):
    _, pause = paused_run()
    gone = mint_token(replace(claims_for(pause), jti=str(uuid.uuid4())))
    refused(lambda: redeem(gone), ScopeUnknown, "scope_unknown", 403, pause)


def test_a_token_naming_a_run_never_issued_is_refused_by_lineage(tenants):
    _, pause = paused_run("forged")
    refused(lambda: redeem(token_for(pause)), LineageRefused, "lineage_refused", 403, pause)


def test_a_token_naming_another_run_than_its_pause_is_refused_by_lineage(tenants):
    other, _ = paused_run()
    _, pause = paused_run()
    guessed = mint_token(replace(claims_for(pause), run_id=str(other.pk),
                                 root_run_id=str(other.pk)))
    refused(lambda: redeem(guessed), LineageRefused, "lineage_refused", 403, pause)


# --- answers -------------------------------------------------------------------

@pytest.mark.parametrize("surface", list(SURFACES))
@pytest.mark.parametrize("answer", [{"color": "green"}, {}, "red", None, ["red"]],
                         ids=["outside-the-enum", "missing-required", "a-string", "null",
                              "a-list"])
def test_a_question_answer_that_does_not_fit_the_schema_is_invalid(tenants, surface, answer):
    _, pause = paused_run("question")
    refused(lambda: SURFACES[surface](pause, answer), InvalidAnswer, "invalid_answer", 400,
            pause)
    SURFACES[surface](pause, GOOD_QUESTION_ANSWER)  # the same pause takes a fitting answer
    pause.refresh_from_db()
    assert (pause.status, pause.answer) == (PauseStatus.ANSWERED, GOOD_QUESTION_ANSWER)


BAD_APPROVALS = {
    "not-a-hitl-response": "yes",
    "no-decisions-list": {"decision": [{"type": "approve"}]},
    "decisions-not-a-list": {"decisions": "approve"},
    "too-few-decisions": {"decisions": []},
    "too-many-decisions": {"decisions": [{"type": "approve"}, {"type": "approve"}]},
    "unknown-decision-type": {"decisions": [{"type": "maybe"}]},
    "decision-not-an-object": {"decisions": ["approve"]},
    "disallowed-decision-type": {"decisions": [{"type": "respond", "message": "hi"}]},
    "edit-violating-args-schema": {"decisions": [
        {"type": "edit", "edited_action": {"name": "ship", "args": {"qty": 0}}}]},
    "edit-with-args-not-an-object": {"decisions": [
        {"type": "edit", "edited_action": {"name": "ship", "args": [1]}}]},
    "edit-renaming-the-action": {"decisions": [
        {"type": "edit", "edited_action": {"name": "refund", "args": {"qty": 1}}}]},
    "edit-without-edited-action": {"decisions": [{"type": "edit"}]},
    "reject-message-not-a-string": {"decisions": [{"type": "reject", "message": 42}]},
}


@pytest.mark.parametrize("surface", list(SURFACES))
@pytest.mark.parametrize("bad", list(BAD_APPROVALS))
def test_an_approval_answer_that_does_not_fit_is_invalid(tenants, surface, bad):
    _, pause = paused_run("echo")
    refused(lambda: SURFACES[surface](pause, BAD_APPROVALS[bad]), InvalidAnswer,
            "invalid_answer", 400, pause)
    SURFACES[surface](pause, APPROVE)
    pause.refresh_from_db()
    assert pause.status == PauseStatus.ANSWERED


def test_a_respond_needs_a_message(tenants):
    run, _ = paused_run("siblings", {"n": 1})  # every decision type is allowed here
    pause = Pause.objects.get(run=run)
    refused(lambda: pauses.answer_pause(pause.pk, {"decisions": [{"type": "respond"}]}),
            InvalidAnswer, "invalid_answer", 400, pause)


@pytest.mark.parametrize("surface", list(SURFACES))
def test_an_answer_over_max_answer_bytes_is_too_large(tenants, settings, surface):
    _, pause = paused_run("question")
    settings.SYMFONIC = {**settings.SYMFONIC, "MAX_ANSWER_BYTES": 64}
    oversized = {"color": "red", "note": "x" * 64}
    refused(lambda: SURFACES[surface](pause, oversized), PayloadTooLarge, "payload_too_large",
            413, pause)
    SURFACES[surface](pause, GOOD_QUESTION_ANSWER)  # 15 bytes fit
    pause.refresh_from_db()
    assert pause.status == PauseStatus.ANSWERED


# --- closed pauses ---------------------------------------------------------------

def test_an_answer_to_a_pause_past_its_deadline_is_refused_as_expired(tenants):
    _, pause = paused_run()
    Pause.objects.filter(pk=pause.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    pause.refresh_from_db()
    assert pause.status == PauseStatus.PENDING  # not swept yet
    refused(lambda: pauses.answer_pause(pause.pk, APPROVE), PauseExpired, "expired", 410, pause)
    refused(lambda: redeem(token_for(pause)), PauseTokenExpired, "expired", 410, pause)


@pytest.mark.parametrize("surface", list(SURFACES))
def test_an_answer_to_an_expired_pause_is_refused_as_expired(tenants, surface):
    _, pause = paused_run()
    token = token_for(pause)  # minted before the deadline moved: its own exp is still ahead
    Pause.objects.filter(pk=pause.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert pauses.expire_due() == 1
    pause.refresh_from_db()
    assert pause.status == PauseStatus.EXPIRED
    call = {"python": lambda: pauses.answer_pause(pause.pk, APPROVE),
            "token": lambda: redeem(token)}[surface]
    refused(call, PauseExpired, "expired", 410, pause)


@pytest.mark.parametrize("surface", list(SURFACES))
def test_an_answer_to_a_cancelled_pause_is_refused(tenants, surface):
    _, pause = paused_run()
    pauses.cancel(pause.pk, comment="withdrawn")
    refused(lambda: SURFACES[surface](pause, APPROVE), PauseCancelled, "already_answered", 409,
            pause)


@pytest.mark.parametrize("surface", list(SURFACES))
def test_an_answer_to_an_answered_pause_is_refused(tenants, surface):
    _, pause = paused_run()
    pauses.reject(pause.pk, comment="no")
    refused(lambda: SURFACES[surface](pause, APPROVE), AlreadyAnswered, "already_answered", 409,
            pause)
    pause.refresh_from_db()
    assert pause.answer == {"decisions": [{"type": "reject", "message": "no"}]}


# --- hostile HTTP input: a 4xx in the error shape, never a 5xx (finding 2) ---------------------

API = "/api/symfonic/"


def http_state(pause: Pause) -> dict[str, Any]:
    return {**state(pause), "idempotency": IdempotentResponse.objects.count()}


def assert_refused_over_http(response: Any, status: int, code: str) -> None:
    assert response["Content-Type"] == "application/json", response.content[:200]
    body = response.json()
    assert (response.status_code, body.get("code")) == (status, code), body
    assert set(body) == {"code", "detail"} and body["detail"].endswith(".")


@pytest.fixture
def alice(tenants: Any) -> APIClient:
    from django.contrib.contenttypes.models import ContentType

    from tests.testapp.seed import seed_users

    # Until Run's Meta declares start_run (and its migration makes the row), as post_migrate would.
    Permission.objects.get_or_create(codename="start_run",
                                     content_type=ContentType.objects.get_for_model(Run),
                                     defaults={"name": "Can start agent runs"})
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {seed_users()['alice']['token']}")
    return client


def nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


#: Each endpoint that takes a body: (path for a pause, a body template with one hole).
BODY_ENDPOINTS = {
    "resume": ("resume/", '{{"token": {token}, "answer": {hole}}}'),
    "answer": ("pauses/{pk}/answer/", '{{"answer": {hole}}}'),
    "approve": ("pauses/{pk}/approve/", '{{"edited_args": {{"qty": {hole}}}}}'),
    "reject": ("pauses/{pk}/reject/", '{{"comment": {hole}}}'),
    "runs": ("runs/", '{{"agent": "echo", "input": {hole}}}'),
}


def send(client: APIClient, endpoint: str, pause: Pause, hole: str, **extra: Any) -> Any:
    path, template = BODY_ENDPOINTS[endpoint]
    body = template.format(token=json.dumps(token_for(pause)), hole=hole)
    return client.post(API + path.format(pk=pause.pk), body.encode("utf-8", "surrogatepass"),
                       content_type="application/json", **extra)


@pytest.mark.parametrize("endpoint", list(BODY_ENDPOINTS))
@pytest.mark.parametrize("depth", [33, 1000, 20000])
def test_deep_nesting_is_refused_before_it_is_parsed(alice, endpoint, depth, settings):
    settings.DEBUG = True  # the error page that printed DATABASE_URL is never reached
    _, pause = paused_run()
    before = http_state(pause)
    client = APIClient() if endpoint == "resume" else alice
    response = send(client, endpoint, pause, nested(depth))
    assert_refused_over_http(response, 400, "invalid_request")
    assert "MAX_JSON_DEPTH" in response.json()["detail"]
    assert http_state(pause) == before


def test_nesting_within_the_limit_is_parsed_and_judged_on_its_merits(alice):
    _, pause = paused_run("question")
    before = http_state(pause)
    # The envelope is one level, so an answer may nest 31 more: then it is the answer's turn.
    response = send(alice, "answer", pause, nested(31))
    assert_refused_over_http(response, 400, "invalid_answer")
    assert http_state(pause) == before


def test_brackets_inside_strings_do_not_count_as_nesting(alice):
    _, pause = paused_run()
    message = '"' + "[{\\\"" * 600 + '"'  # brackets and escaped quotes, all in one string
    response = send(alice, "reject", pause, message)
    assert response.status_code == 202, response.json()
    assert Pause.objects.get(pk=pause.pk).answer["decisions"][0]["message"].startswith('[{"[{')


def test_max_json_depth_is_a_setting(alice, settings):
    _, pause = paused_run("question")
    settings.SYMFONIC = {**settings.SYMFONIC, "MAX_JSON_DEPTH": 3}
    assert_refused_over_http(send(alice, "answer", pause, '{"color": [[1]]}'),
                             400, "invalid_request")
    assert send(alice, "answer", pause, '{"color": "red"}').status_code == 202


#: Text no JSON column stores, as a client can send it: escaped in JSON, or as raw bytes.
UNSTORABLE = {
    "nul-escape": '"red\\u0000"',
    "lone-high-surrogate": '"red\\ud800"',
    "lone-low-surrogate": '"\\udc00red"',
    "reversed-pair": '"\\ude00\\ud83d"',
    "raw-nul-byte": '"red\x00"',
    "raw-surrogate-bytes": '"red\udcedx"',  # CESU-style bytes: not UTF-8
    "huge-float": "1e400",
    "nan": "NaN",
    "infinity": "-Infinity",
    # Found in the second outside attack: read as 10000.0 and 0.01, silently.
    "more-digits-than-a-float": "10000.0000000000001",
    "rounds-up-to-a-cent": "0.009999999999999999999",
    "a-key-twice": '{"amount": 50000, "amount": 1}',
}


@pytest.mark.parametrize("endpoint", list(BODY_ENDPOINTS))
@pytest.mark.parametrize("value", list(UNSTORABLE))
def test_unstorable_text_and_numbers_are_refused_as_invalid_request(alice, endpoint, value):
    _, pause = paused_run()
    before = http_state(pause)
    client = APIClient() if endpoint == "resume" else alice
    response = send(client, endpoint, pause, UNSTORABLE[value])
    assert_refused_over_http(response, 400, "invalid_request")
    assert http_state(pause) == before


@pytest.mark.parametrize("endpoint", ["answer", "runs"])
def test_unstorable_text_in_a_key_is_refused(alice, endpoint):
    _, pause = paused_run()
    before = http_state(pause)
    response = send(alice, endpoint, pause, '{"\\u0000": 1}')
    assert_refused_over_http(response, 400, "invalid_request")
    assert http_state(pause) == before


def test_a_token_with_a_nul_character_is_refused_as_invalid_request(tenants):
    _, pause = paused_run()
    before = http_state(pause)
    token = json.dumps(token_for(pause))[:-1] + '\\u0000"'
    response = APIClient().post(f"{API}resume/", f'{{"token": {token}, "answer": 1}}',
                                content_type="application/json")
    assert_refused_over_http(response, 400, "invalid_request")
    assert http_state(pause) == before


def test_a_surrogate_pair_is_a_character_like_any_other(alice):
    _, pause = paused_run()
    response = send(alice, "reject", pause, '"too much \\ud83d\\ude00"')
    assert response.status_code == 202, response.json()
    assert Pause.objects.get(pk=pause.pk).answer["decisions"][0]["message"] == "too much 😀"


@pytest.mark.parametrize("query", [
    "after=%C2%B2", "after=%D9%A3", "after=-1", "after=1e3", "after=+1", "after=%201",
    "after=2147483648", "after=" + "9" * 5000, "after=%00", "after=",
], ids=["superscript-two", "arabic-three", "negative", "exponent", "plus", "space",
        "past-32-bits", "5000-digits", "nul", "empty"])
def test_a_malformed_after_on_the_events_is_refused_as_invalid_request(alice, query):
    run, _ = paused_run()
    response = alice.get(f"{API}runs/{run.pk}/events/?{query}")
    assert_refused_over_http(response, 400, "invalid_request")


def test_the_largest_after_is_fine(alice):
    run, _ = paused_run()
    assert alice.get(f"{API}runs/{run.pk}/events/?after=2147483647").json() == {"results": []}


@pytest.mark.parametrize("query", [
    "page_size=%C2%B2", "page_size=0", "page_size=-5", "page_size=x", "page_size=%00",
    "page_size=" + "9" * 5000, "status=%00", "kind=%00", "run=%00", "run=" + "a" * 5000,
    "cursor=%00", "cursor=%FF%FE", "cursor=" + "A" * 5000,
], ids=["superscript", "zero", "negative", "word", "nul", "5000-digits", "status-nul",
        "kind-nul", "run-nul", "run-long", "cursor-nul", "cursor-not-utf8", "cursor-long"])
def test_a_malformed_list_query_is_refused_as_invalid_request(alice, query):
    paused_run()
    assert_refused_over_http(alice.get(f"{API}pauses/?{query}"), 400, "invalid_request")


def test_a_page_size_over_the_maximum_is_capped(alice):
    paused_run()
    response = alice.get(f"{API}pauses/?page_size=100000")
    assert response.status_code == 200 and len(response.json()["results"]) == 1


@pytest.mark.parametrize("claim, value", [
    ("jti", "not-a-uuid"), ("jti", 42), ("jti", "\x00"), ("jti", None),
    ("jti", "A1B2C3D4-0000-0000-0000-000000000000"), ("run_id", "run-1"),
    ("root_run_id", ["x"]), ("scope_hash", 7), ("session_id", "s\x00"),
    ("thread_id", "\ud800"), ("checkpoint_id", 5), ("kind", None), ("iat", "now"),
    ("exp", True), ("exp", 1e20),
])
def test_a_signed_token_with_garbage_claims_is_invalid_not_a_crash(tenants, claim, value):
    _, pause = paused_run()
    forged = mint_token(replace(claims_for(pause), **{claim: value}))
    refused(lambda: redeem(forged), InvalidPauseToken, "invalid_token", 403, pause)
    before = http_state(pause)
    response = APIClient().post(f"{API}resume/", {"token": forged, "answer": APPROVE},
                                format="json")
    assert_refused_over_http(response, 403, "invalid_token")
    assert http_state(pause) == before


def test_an_unforeseen_failure_is_answered_in_the_error_shape_even_with_debug(alice, settings):
    def broken_scope(request: Any) -> Any:
        raise RuntimeError("DATABASE_URL=postgres://secret@db/app")

    settings.DEBUG = True
    settings.SYMFONIC = {**settings.SYMFONIC, "REQUEST_SCOPE": broken_scope}
    response = alice.post(f"{API}runs/", {"agent": "echo", "input": {}}, format="json")
    assert_refused_over_http(response, 500, "server_error")
    assert b"secret" not in response.content and not Run.objects.exists()


def test_a_content_length_that_is_not_a_number_is_no_crash(alice):
    _, pause = paused_run()
    before = http_state(pause)
    response = alice.post(f"{API}pauses/{pause.pk}/answer/", b'{"answer": 1}',
                          content_type="application/json", CONTENT_LENGTH="\u00b2")
    # Django reads no body for a length it cannot read: the answer is missing.
    assert_refused_over_http(response, 400, "invalid_request")
    assert http_state(pause) == before


def test_too_many_query_parameters_are_refused_as_invalid_request(alice):
    paused_run()
    query = "&".join(["status=pending"] * 1500)  # over DATA_UPLOAD_MAX_NUMBER_FIELDS
    assert_refused_over_http(alice.get(f"{API}pauses/?{query}"), 400, "invalid_request")


@pytest.mark.parametrize("endpoint", ["resume", "approve"])
def test_a_nul_in_the_api_token_header_is_refused_in_the_error_shape(tenants, endpoint):
    _, pause = paused_run()
    before = http_state(pause)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token abc\x00def")
    response = send(client, endpoint, pause, '{"decisions": [{"type": "approve"}]}')
    # PostgreSQL refuses the NUL in the token lookup (400); SQLite finds no such token (401).
    assert response.status_code in (400, 401) and set(response.json()) == {"code", "detail"}
    assert http_state(pause) == before


# --- text no database stores, given through the Python API -------------------------------

@pytest.mark.django_db
def test_a_python_comment_with_a_nul_is_a_typed_refusal_and_changes_nothing(tenants):
    from symfonic_django.exceptions import InvalidAnswer

    _, pause = paused_run()
    before = snapshot(pause)
    with pytest.raises(InvalidAnswer, match="The comment contains a NUL character"):
        pauses.approve(pause.pk, comment="ok\x00")
    assert snapshot(pause) == before


@pytest.mark.django_db
def test_a_python_run_input_with_a_lone_surrogate_is_refused_before_a_run_exists(tenants):
    from symfonic_django.exceptions import InvalidRunInput
    from symfonic_django.models import Run
    from symfonic_django.runs import start_run

    with pytest.raises(InvalidRunInput, match="a lone surrogate"):
        start_run("echo", {"note": "\ud800"}, scope="acme", dispatch=False)
    assert not Run.objects.exists()
