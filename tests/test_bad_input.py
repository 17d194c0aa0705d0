"""The refusal list: every bad input is refused with its typed error and code, changing nothing.

A token is redeemed the way the HTTP API redeems it (``redeem_token``: the
deployment's settings, dispatch to a worker); an answer is refused the same
way whether it comes with a token or through the Python API. Every refusal
leaves the pause row, the audit trail and the runs exactly as they were.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.core import signing
from django.utils import timezone

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
from symfonic_django.models import Decision, Pause, PauseStatus, Run, TurnEvent
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
