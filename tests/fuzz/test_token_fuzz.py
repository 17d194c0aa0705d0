"""Pause tokens under attack: mutated, random, re-signed with another salt, or
correctly signed around garbage claims.

``verify_token`` answers every such input with a typed refusal
(``InvalidPauseToken`` or ``PauseTokenExpired``) and nothing else; ``POST
resume/`` answers it with a 4xx in the pinned ``{"code", "detail"}`` shape and
leaves the pause row as it was.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pytest
from django.core import signing
from django.core.cache import cache
from hypothesis import assume, given
from hypothesis import strategies as st
from rest_framework.test import APIClient

from symfonic_django.exceptions import InvalidPauseToken, PauseTokenExpired
from symfonic_django.models import Pause
from symfonic_django.pauses import claims_for, token_for
from symfonic_django.tokens import TOKEN_SALT, PauseClaims, mint_token, verify_token

from ..conftest import paused_run, snapshot
from . import fuzz_settings

pytestmark = pytest.mark.django_db

RESUME = "/api/symfonic/resume/"
APPROVE = {"decisions": [{"type": "approve"}]}
CLAIM_NAMES = [f.name for f in dataclasses.fields(PauseClaims)]

#: Any JSON value, including the awkward ones: huge numbers, NUL, lone surrogates.
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(min_value=10**20, max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20)
    | st.sampled_from(["\x00", "\ud800", "0" * 40, "", "00000000-0000-0000-0000-000000000000"]),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


def mutations(token: str) -> st.SearchStrategy[str]:
    """``token`` with one byte flipped, cut short, or with text inserted."""
    flip = st.tuples(st.integers(0, len(token) - 1), st.integers(1, 255)).map(
        lambda t: token[:t[0]] + chr(ord(token[t[0]]) ^ t[1]) + token[t[0] + 1:])
    cut = st.integers(0, len(token) - 1).map(lambda n: token[:n])
    insert = st.tuples(st.integers(0, len(token)), st.text(min_size=1, max_size=8)).map(
        lambda t: token[:t[0]] + t[1] + token[t[0]:])
    return st.one_of(flip, cut, insert).filter(lambda t: t != token)


def garbage_claims(valid: list[Any]) -> st.SearchStrategy[Any]:
    """Claim lists (and non-lists) that a correct signature may carry but this app never mints."""
    wrong_value = st.tuples(st.integers(0, len(valid) - 1), json_values).map(
        lambda t: valid[:t[0]] + [t[1]] + valid[t[0] + 1:]).filter(lambda v: v != valid)
    missing = st.integers(0, len(valid) - 1).map(lambda n: valid[:n] + valid[n + 1:])
    extra = st.lists(json_values, min_size=1, max_size=3).map(lambda more: valid + more)
    as_dict = st.just(dict(zip(CLAIM_NAMES, valid, strict=True)))
    return st.one_of(wrong_value, missing, extra, as_dict, json_values)


def wrong_salt_tokens(valid: list[Any]) -> st.SearchStrategy[str]:
    salts = st.text(max_size=30).filter(lambda s: s != TOKEN_SALT)
    return st.tuples(salts, st.sampled_from([valid, "x", {"jti": valid[0]}])).map(
        lambda t: signing.Signer(salt=t[0], algorithm="sha256").sign_object(t[1]))


def signed(values: Any) -> str:
    """``values`` signed exactly as a pause token is: right key, right salt."""
    return signing.Signer(salt=TOKEN_SALT, algorithm="sha256").sign_object(values)


HOSTILE_CLAIMS: tuple[Any, ...] = (None, True, 1.5, 10**30, -1, "", "\x00", "\ud800", [], {},
                                   "not-a-uuid")


def well_typed(claims: PauseClaims) -> bool:
    """Ids canonical UUIDs, times plain ints, every other claim NUL- and surrogate-free text."""
    for name in CLAIM_NAMES:
        value = getattr(claims, name)
        if name in ("jti", "run_id", "root_run_id"):
            if not isinstance(value, str) or str(uuid.UUID(value)) != value:
                return False
        elif name in ("iat", "exp"):
            if type(value) is not int:
                return False
        elif not (value is None and name == "checkpoint_id") and not (
                isinstance(value, str) and "\x00" not in value
                and not any("\ud800" <= c <= "\udfff" for c in value)):
            return False
    return True


def claims_in(token: Any) -> Any:
    """What ``token`` claims, verified or not, for a failure message."""
    try:
        return verify_token(token)
    except (InvalidPauseToken, PauseTokenExpired) as exc:
        return repr(exc)


#: The claims ``resume/`` holds against the pause row: every one but the times.
BINDING_CLAIMS = ("jti", "run_id", "root_run_id", "scope_hash", "session_id", "thread_id",
                  "checkpoint_id", "pin_hash", "kind")


def names_the_pause(token: Any, claims: list[Any]) -> bool:
    """Whether ``token`` is a real credential for the pause: signed with the key (only a
    key holder can make one) and binding the pause as its own token does."""
    try:
        got = verify_token(token)
    except (InvalidPauseToken, PauseTokenExpired):
        return False
    real = dict(zip(CLAIM_NAMES, claims, strict=True))
    return all(getattr(got, name) == real[name] for name in BINDING_CLAIMS)


def hostile_tokens(token: str, claims: list[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        mutations(token),
        st.text(max_size=300),
        st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_:",
                max_size=300),
        wrong_salt_tokens(claims),
        garbage_claims(claims).map(signed),
    )


def test_verify_token_refuses_every_hostile_token_with_a_typed_error(tenants: dict[str, Any]) -> None:
    _, pause = paused_run()
    token = token_for(pause)
    claims = [getattr(claims_for(pause), name) for name in CLAIM_NAMES]
    assert verify_token(token).jti == str(pause.pk)
    seen = {"examples": 0}

    @fuzz_settings(400)
    @given(bad=hostile_tokens(token, claims))
    def refused(bad: Any) -> None:
        seen["examples"] += 1
        try:
            got = verify_token(bad)
        except (InvalidPauseToken, PauseTokenExpired):
            return
        # A correct signature over well-typed claims verifies (the scope and the row are
        # checked later, at resume); whatever verifies is of the types this app mints.
        assert well_typed(got), (bad, got)

    refused()
    print(f"\nverify_token: {seen['examples']} hostile tokens")


def test_signed_claims_with_every_field_wrong_in_turn_are_refused(tenants: dict[str, Any]) -> None:
    """Each claim replaced by each hostile value: the exhaustive corner of the fuzzer above.

    Signed with the real key, a well-typed value (``""`` as a scope hash, a far ``exp``)
    verifies: the signer could mint that token anyway. Anything else is refused.
    """
    _, pause = paused_run()
    claims = claims_for(pause)
    for name in CLAIM_NAMES:
        for value in HOSTILE_CLAIMS:
            if getattr(claims, name) == value or (name == "checkpoint_id" and value is None):
                continue
            changes: dict[str, Any] = {name: value}
            forged = mint_token(dataclasses.replace(claims, **changes))
            try:
                got = verify_token(forged)
            except (InvalidPauseToken, PauseTokenExpired):
                continue
            assert well_typed(got), (name, value)


def test_resume_answers_every_hostile_token_with_a_4xx_and_changes_nothing(tenants: dict[str, Any]) -> None:
    _, pause = paused_run()
    token = token_for(pause)
    claims = [getattr(claims_for(pause), name) for name in CLAIM_NAMES]
    before = snapshot(pause)
    client = APIClient()
    codes: dict[int, int] = {}

    @fuzz_settings(150)
    @given(bad=hostile_tokens(token, claims), answer=st.sampled_from([APPROVE, json_values]))
    def refused(bad: Any, answer: Any) -> None:
        assume(not names_the_pause(bad, claims))
        cache.clear()  # the resume throttle would answer most of these with 429
        if not isinstance(answer, dict) or "decisions" not in answer:
            answer = APPROVE
        response = client.post(RESUME, {"token": bad, "answer": answer}, format="json")
        codes[response.status_code] = codes.get(response.status_code, 0) + 1
        body = response.json()
        assert 400 <= response.status_code < 500, (claims_in(bad), response.status_code, body)
        assert set(body) == {"code", "detail"}, body
        assert snapshot(pause) == before

    refused()
    assert Pause.objects.get(pk=pause.pk).status == "pending"
    print(f"\nresume/: {sum(codes.values())} hostile tokens, statuses {codes}")
