"""Pause tokens (docs/design.md section 4): signed, expiring, bounded, typed failures, never stored."""

from __future__ import annotations

import json
import math
import time
import uuid
from dataclasses import replace
from typing import Any

import pytest
from django.apps import apps
from django.core import signing
from django.test import override_settings

from symfonic_django.exceptions import InvalidPauseToken, PauseTokenExpired
from symfonic_django.pauses import claims_for, token_for
from symfonic_django.tokens import (
    MAX_TOKEN_LENGTH,
    TICKET_SALT,
    TOKEN_SALT,
    PauseClaims,
    WatchTicket,
    claimed_pause_id,
    mint_token,
    mint_watch_ticket,
    read_watch_ticket,
    scope_hash,
    scope_hash_matches,
    verify_token,
)

from .conftest import paused_run
from .continuations import resume

OLD_KEY = "the-old-secret-key-" + "o" * 40
NEW_KEY = "the-new-secret-key-" + "n" * 40


def claims(**changes: Any) -> PauseClaims:
    now = int(time.time())
    base = PauseClaims(
        jti=str(uuid.uuid4()), run_id=str(uuid.uuid4()), root_run_id=str(uuid.uuid4()),
        scope_hash=scope_hash("acme"), session_id="s", thread_id="t", checkpoint_id=None,
        pin_hash="", kind="approval", iat=now, exp=now + 600)
    return replace(base, **changes)


def short_claims() -> PauseClaims:
    """A small sample, so every one of its positions can be tried."""
    return replace(claims(), jti="j", run_id="r", root_run_id="r", scope_hash="h",
                   session_id="", thread_id="")


def test_a_minted_token_verifies_to_the_same_claims():
    original = claims(checkpoint_id="cp-1", pin_hash="p" * 64)
    assert verify_token(mint_token(original)) == original


def test_a_token_with_any_single_character_changed_is_invalid():
    token = mint_token(short_claims())
    accepted = []
    for at, char in enumerate(token):
        for other in {"A" if char != "A" else "B", ":" if char != ":" else "-"}:
            forged = token[:at] + other + token[at + 1:]
            try:
                verify_token(forged)
            except InvalidPauseToken:
                continue
            accepted.append((at, other))
    assert accepted == []
    assert len(token) < 300  # the sample stays short enough to try every position


@pytest.mark.parametrize("cut", ["drop the last character", "drop the signature",
                                 "append a character"])
def test_a_truncated_or_extended_token_is_invalid(cut):
    token = mint_token(claims())
    forged = {"drop the last character": token[:-1],
              "drop the signature": token.rsplit(":", 1)[0],
              "append a character": token + "A"}[cut]
    with pytest.raises(InvalidPauseToken):
        verify_token(forged)


def test_a_token_signed_with_another_salt_is_invalid():
    values = [getattr(claims(), f) for f in PauseClaims.__dataclass_fields__]
    for salt in ("symfonic_django.watch-ticket", "django.core.signing", TOKEN_SALT + "x"):
        forged = signing.Signer(salt=salt, algorithm="sha256").sign_object(values)
        with pytest.raises(InvalidPauseToken):
            verify_token(forged)


def test_a_token_signed_with_another_algorithm_is_invalid():
    values = [getattr(claims(), f) for f in PauseClaims.__dataclass_fields__]
    forged = signing.Signer(salt=TOKEN_SALT, algorithm="sha1").sign_object(values)
    with pytest.raises(InvalidPauseToken):
        verify_token(forged)


def test_an_expired_token_is_refused_as_expired():
    token = mint_token(claims(exp=int(time.time()) - 1))
    with pytest.raises(PauseTokenExpired) as refused:
        verify_token(token)
    assert refused.value.code == "expired"


def test_a_token_expires_at_its_exp_second():
    exp = int(time.time()) + 100
    token = mint_token(claims(exp=exp))
    assert verify_token(token, now=exp - 1).exp == exp
    with pytest.raises(PauseTokenExpired):
        verify_token(token, now=exp)


def test_a_tampered_expired_token_is_invalid_not_expired():
    token = mint_token(claims(exp=int(time.time()) - 1))
    with pytest.raises(InvalidPauseToken):
        verify_token(token[:5] + ("A" if token[5] != "A" else "B") + token[6:])


def test_an_oversized_token_is_refused_before_any_cryptography():
    with pytest.raises(InvalidPauseToken):
        verify_token("A" * (MAX_TOKEN_LENGTH + 1))
    signed_but_huge = mint_token(claims(session_id="s" * MAX_TOKEN_LENGTH))
    with pytest.raises(InvalidPauseToken):
        verify_token(signed_but_huge)


@pytest.mark.parametrize("token", [None, b"bytes", "", 42, ["a"], ":", "no-separator"])
def test_a_token_that_is_not_a_signed_string_is_invalid(token):
    with pytest.raises(InvalidPauseToken):
        verify_token(token)


@pytest.mark.parametrize("values", [[], ["too", "few"], {"jti": "x"}, "a string",
                                    [None] * 11])
def test_signed_claims_of_the_wrong_shape_are_invalid(values):
    forged = signing.Signer(salt=TOKEN_SALT, algorithm="sha256").sign_object(values)
    with pytest.raises(InvalidPauseToken):
        verify_token(forged)


def test_a_token_minted_before_key_rotation_verifies_after_it():
    with override_settings(SECRET_KEY=OLD_KEY, SECRET_KEY_FALLBACKS=[]):
        original = claims(scope_hash=scope_hash("acme"))
        token = mint_token(original)
    with override_settings(SECRET_KEY=NEW_KEY, SECRET_KEY_FALLBACKS=[OLD_KEY]):
        assert verify_token(token) == original
        assert scope_hash_matches("acme", original.scope_hash)
        assert not scope_hash_matches("globex", original.scope_hash)
        assert scope_hash("acme") != original.scope_hash  # new tokens use the new key
    with override_settings(SECRET_KEY=NEW_KEY, SECRET_KEY_FALLBACKS=[]):
        with pytest.raises(InvalidPauseToken):
            verify_token(token)
        assert not scope_hash_matches("acme", original.scope_hash)


@pytest.mark.django_db
def test_a_pause_minted_before_key_rotation_is_redeemable_after_it(tenants):
    with override_settings(SECRET_KEY=OLD_KEY, SECRET_KEY_FALLBACKS=[]):
        _, pause = paused_run()
        token = token_for(pause)
    with override_settings(SECRET_KEY=NEW_KEY, SECRET_KEY_FALLBACKS=[OLD_KEY]):
        assert resume(token)[-1]["type"] == "turn.completed"


@pytest.mark.django_db
def test_the_token_is_never_stored(tenants):
    run, pause = paused_run()
    token = token_for(pause)
    signature = token.rsplit(":", 1)[1]
    resume(token)
    assert verify_token(token).jti == str(pause.pk)
    stored = {model.__name__: json.dumps(list(model.objects.values()), default=str)
              for model in apps.get_app_config("symfonic_django").get_models()}
    assert set(stored) >= {"Run", "Pause", "TurnEvent", "Decision"}
    assert all(str(pause.pk) in stored[name] for name in ("Pause", "TurnEvent", "Decision"))
    holding = [name for name, rows in stored.items() if token in rows or signature in rows]
    assert holding == []


@pytest.mark.django_db
def test_claims_rebuilt_from_the_row_are_the_claims_the_token_carries(tenants):
    _, pause = paused_run()
    pause.refresh_from_db()
    assert verify_token(token_for(pause)) == claims_for(pause)
    # Rounded up to the second: the token never dies before the row does.
    assert claims_for(pause).exp == math.ceil(pause.expires_at.timestamp())


class _Run:
    """What a ticket is minted from: a run's id and its root's."""

    def __init__(self, pk: str, root_id: str) -> None:
        self.pk, self.root_id = pk, root_id


class _User:
    def __init__(self, pk: Any) -> None:
        self.pk = pk


def test_a_watch_ticket_names_its_user_its_run_and_its_tree():
    run = _Run(str(uuid.uuid4()), str(uuid.uuid4()))
    assert read_watch_ticket(mint_watch_ticket(run, user=_User(42))) == WatchTicket(
        root_run_id=run.root_id, run_id=run.pk, user_pk="42", pause_id=None)
    pause_id = str(uuid.uuid4())
    assert read_watch_ticket(mint_watch_ticket(run, pause_id=pause_id)) == WatchTicket(
        root_run_id=run.root_id, run_id=run.pk, user_pk=None, pause_id=pause_id)


def test_a_watch_ticket_names_exactly_one_of_a_user_and_a_spent_pause():
    run = _Run(str(uuid.uuid4()), str(uuid.uuid4()))
    with pytest.raises(ValueError):
        mint_watch_ticket(run)
    with pytest.raises(ValueError):
        mint_watch_ticket(run, user=_User(1), pause_id=str(uuid.uuid4()))


def test_a_tampered_expired_or_foreign_watch_ticket_reads_as_nothing():
    run = _Run(str(uuid.uuid4()), str(uuid.uuid4()))
    ticket = mint_watch_ticket(run, user=_User(1))
    assert read_watch_ticket(ticket[:-1] + ("A" if ticket[-1] != "A" else "B")) is None
    assert read_watch_ticket(ticket, max_age=-1) is None
    assert read_watch_ticket(mint_token(claims())) is None
    # A ticket of the earlier form (the run id alone) is not a ticket any more.
    old = signing.TimestampSigner(salt=TICKET_SALT, algorithm="sha256").sign(run.pk)
    assert read_watch_ticket(old) is None
    assert read_watch_ticket("x" * (MAX_TOKEN_LENGTH + 1)) is None
    assert read_watch_ticket(None) is None


@pytest.mark.parametrize("values", [
    ["not-a-uuid", str(uuid.uuid4()), "user", "1"],
    [str(uuid.uuid4()), str(uuid.uuid4()), "pause", "not-a-uuid"],
    [str(uuid.uuid4()), str(uuid.uuid4()), "group", "1"],
    [str(uuid.uuid4()), str(uuid.uuid4()), "user", "1\x00"],
    [str(uuid.uuid4()), str(uuid.uuid4()), "user", 1],
    [str(uuid.uuid4()), str(uuid.uuid4()), "user"],
    {"run": str(uuid.uuid4())},
])
def test_a_signed_watch_ticket_of_another_shape_reads_as_nothing(values):
    """Signed with this deployment's key but not minted by this code: refused all the same."""
    forged = signing.TimestampSigner(salt=TICKET_SALT, algorithm="sha256").sign_object(values)
    assert read_watch_ticket(forged) is None


def test_a_watch_ticket_stays_within_the_ticket_alphabet_and_size():
    from symfonic_django.consumers import TICKET

    run = _Run(str(uuid.uuid4()), str(uuid.uuid4()))
    for ticket in (mint_watch_ticket(run, user=_User(2**63)),
                   mint_watch_ticket(run, pause_id=str(uuid.uuid4()))):
        assert TICKET.fullmatch(ticket) and len(ticket) < 400


@pytest.mark.parametrize("claim, value", [
    ("jti", "not-a-uuid"), ("jti", 42), ("jti", "\x00"), ("jti", None), ("jti", ""),
    ("jti", "{12345678-1234-5678-1234-567812345678}"), ("run_id", "r"), ("root_run_id", 1),
    ("scope_hash", None), ("session_id", "\x00"), ("thread_id", "\udfff"), ("pin_hash", []),
    ("checkpoint_id", {"a": 1}), ("kind", 3), ("iat", "0"), ("iat", False), ("exp", 1e12),
    ("exp", "9999999999"),
])
def test_correctly_signed_claims_of_the_wrong_type_are_invalid(claim, value):
    """A signature proves who signed, not what: garbage claims are a bad token, not a crash."""
    forged = mint_token(claims(**{claim: value}))
    with pytest.raises(InvalidPauseToken):
        verify_token(forged)


def test_claims_with_a_checkpoint_id_of_none_or_text_verify():
    for checkpoint_id in (None, "", "cp-1"):
        original = claims(checkpoint_id=checkpoint_id)
        assert verify_token(mint_token(original)) == original


def test_the_claimed_pause_is_read_without_verifying_and_only_from_a_token_shape():
    original = claims()
    token = mint_token(original)
    assert claimed_pause_id(token) == original.jti
    tampered = token[:-3] + ("AAA" if not token.endswith("AAA") else "BBB")
    assert claimed_pause_id(tampered) == original.jti  # forged: still names its pause
    for garbage in (None, 42, "", "no-separator", "!!!:sig", "x" * 5000 + ":s",
                    mint_token(claims(jti="not-a-uuid")),
                    signing.Signer(salt=TOKEN_SALT).sign_object({"jti": original.jti})):
        assert claimed_pause_id(garbage) is None, garbage
