"""The continuation contract (``human_continuation.txt``), one test per rule C1–C12.

docs/design.md section 5: a pause token is authenticated before the deployment is
asked for its scope, every refusal before the single-use claim leaves the
pause redeemable, exactly one redeemer wins, and the resumed turn streams.
The 32-process race on PostgreSQL lives in ``tests/integration``; C6 here is
the in-process race that runs on both databases.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import threading
import time
import uuid
import zlib
from contextlib import aclosing
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.core import signing
from django.db import connection
from django.test import override_settings

from symfonic_django.checks import check_settings
from symfonic_django.conf import settings as symfonic_settings
from symfonic_django.continuation import (
    DjangoHumanInteraction,
    HostContinuationFactory,
    HumanContinuationService,
    human_continuation,
    redeem_token,
)
from symfonic_django.events import MessageDelta, TurnCompleted
from symfonic_django.exceptions import (
    AlreadyAnswered,
    InvalidAnswer,
    InvalidPauseToken,
    LineageRefused,
    PauseTokenExpired,
    PermissionDenied,
    ScopeMismatch,
    ScopeUnknown,
    SymfonicError,
)
from symfonic_django.models import Decision, Pause, PauseStatus, Run, RunStatus, TurnEvent
from symfonic_django.pauses import claims_for, token_for
from symfonic_django.scopes import scope_for_claims as default_scope_for_claims
from symfonic_django.tokens import mint_token, scope_hash, verify_token

from .conftest import paused_run, snapshot
from .continuations import APPROVE, compose, drain, registered_agent, resume

pytestmark = pytest.mark.django_db


def tampered(token: str, at: int = 12) -> str:
    return token[:at] + ("A" if token[at] != "A" else "B") + token[at + 1:]


def expired_token(pause: Pause) -> str:
    return mint_token(replace(claims_for(pause), exp=int(time.time()) - 1))


def rows(pause: Pause) -> dict[str, Any]:
    """The pause row and the counts a redemption would change."""
    return {"pause": snapshot(pause), "decisions": Decision.objects.count(),
            "runs": Run.objects.count(), "events": TurnEvent.objects.count()}


class RecordingResolver:
    """The default ``scope_for_claims`` route, remembering the claims it was given."""

    def __init__(self, result: Any = "default") -> None:
        self.result = result
        self.seen: list[Any] = []

    def __call__(self, claims: Any) -> Any:
        self.seen.append(claims)
        return default_scope_for_claims(claims) if self.result == "default" else self.result


class RecordingCapability(DjangoHumanInteraction):
    """The host capability, remembering which of its steps it was asked to run."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def admit_lineage(self, claims: Any, scope: Any) -> Pause:
        self.asked.append("admit_lineage")
        return super().admit_lineage(claims, scope)

    def resume(self, claims: Any, answer: Any, **kwargs: Any) -> Any:
        self.asked.append("resume")
        return super().resume(claims, answer, **kwargs)


class RecordingLookup:
    """A host's ``agent_for``, remembering every scope it was asked for."""

    def __init__(self, name: str = "echo", agent: Any = None) -> None:
        self.scopes: list[Any] = []
        self._registered = registered_agent(name)
        self._agent = agent

    async def __call__(self, scope: Any) -> Any:
        self.scopes.append(scope)
        return self._agent if self._agent is not None else await self._registered(scope)


# --- C1 ------------------------------------------------------------------------

class _ResumeOnly:
    def resume(self, claims: Any, answer: Any) -> None: ...


class _DecodeOnly:
    def decode_token(self, token: str) -> None: ...


class _NotCallable:
    resume = "resume"
    decode_token = "decode_token"


@pytest.mark.parametrize(("capability", "missing", "got"), [
    (object(), "resume()", "object"),
    (_DecodeOnly(), "resume()", "_DecodeOnly"),
    (_NotCallable(), "resume()", "_NotCallable"),
    (_ResumeOnly(), "decode_token", "_ResumeOnly"),
])
def test_c1_capability_without_callable_resume_or_decode_token_is_a_type_error_naming_it(
        capability, missing, got):
    with pytest.raises(TypeError) as refused:
        HumanContinuationService(capability=capability, scope_for_claims=default_scope_for_claims,
                                 agent_for=registered_agent("echo"))
    assert missing in str(refused.value)
    assert f"got {got}" in str(refused.value)


def test_c1_the_django_capability_is_accepted():
    service = HumanContinuationService(capability=DjangoHumanInteraction(),
                                       scope_for_claims=default_scope_for_claims,
                                       agent_for=registered_agent("echo"))
    assert isinstance(service, HumanContinuationService)


# --- C2 ------------------------------------------------------------------------

@pytest.mark.parametrize(("make_token", "refusal"), [
    (lambda pause: tampered(token_for(pause)), InvalidPauseToken),
    (lambda pause: tampered(token_for(pause), at=-3), InvalidPauseToken),
    (expired_token, PauseTokenExpired),
], ids=["tampered-payload", "tampered-signature", "expired"])
def test_c2_a_tampered_or_expired_token_never_reaches_scope_for_claims(
        tenants, make_token, refusal):
    _, pause = paused_run()
    resolver = RecordingResolver()
    with pytest.raises(refusal):
        resume(make_token(pause), service=compose(scope_for_claims=resolver))
    assert resolver.seen == []


def test_c2_scope_for_claims_receives_the_verified_claims_of_a_good_token(tenants):
    _, pause = paused_run()
    token = token_for(pause)
    resolver = RecordingResolver()
    resume(token, service=compose(scope_for_claims=resolver))
    assert resolver.seen == [verify_token(token)]
    assert resolver.seen[0].jti == str(pause.pk)


# --- C3 ------------------------------------------------------------------------

def test_c3_an_unknown_scope_is_refused_before_the_capability_or_an_agent_is_asked(tenants):
    _, pause = paused_run()
    before = rows(pause)
    capability, lookup = RecordingCapability(), RecordingLookup()
    service = compose(scope_for_claims=RecordingResolver(result=None), capability=capability,
                      agent_for=lookup)
    with pytest.raises(ScopeUnknown) as refused:
        resume(token_for(pause), service=service)
    assert refused.value.code == "scope_unknown"
    assert capability.asked == [] and lookup.scopes == []
    assert rows(pause) == before


def test_c3_a_scope_deleted_since_the_pause_is_unknown_on_the_default_route(tenants):
    _, pause = paused_run()
    tenants["acme"].delete()
    before = rows(pause)
    with pytest.raises(ScopeUnknown):
        resume(token_for(pause))
    assert rows(pause) == before


# --- C4 ------------------------------------------------------------------------

def readable_part(token: str) -> str:
    """What any holder of a token can read without a key."""
    payload = token.rsplit(":", 1)[0]
    data = signing.b64_decode(payload.lstrip(".").encode())
    return (zlib.decompress(data) if payload.startswith(".") else data).decode()


def test_c4_a_token_carries_a_keyed_hash_of_the_scope_never_the_tenant_key(tenants):
    _, pause = paused_run(scope="acme")
    text = readable_part(token_for(pause))
    assert pause.scope_key == "acme"
    assert "acme" not in text
    assert scope_hash("acme") in text
    # Keyed: not a plain digest anyone could recompute from a guessed tenant name.
    assert scope_hash("acme") != hashlib.sha256(b"acme").hexdigest()
    with override_settings(SECRET_KEY="another-deployment-" + "k" * 40):
        assert scope_hash("acme") not in text


# --- C5 ------------------------------------------------------------------------

def test_c5_resume_stream_redeems_once_then_streams_the_recovered_turn(tenants):
    run, pause = paused_run()
    token = token_for(pause)
    streamed = resume(token)
    pause.refresh_from_db()
    continuation = Run.objects.get(parent=run)
    assert pause.status == PauseStatus.ANSWERED and pause.answered_via == "token"
    assert [e["type"] for e in streamed] == ["turn.started", "message.delta", "turn.completed"]
    stored = list(TurnEvent.objects.filter(run=continuation).values_list("seq", "type"))
    assert [(e["seq"], e["type"]) for e in streamed] == stored
    assert streamed[-1]["data"]["output"]["answers"] == {str(pause.pk): APPROVE}
    assert continuation.status == RunStatus.COMPLETED

    before = rows(pause)
    with pytest.raises(AlreadyAnswered):
        resume(token)
    assert rows(pause) == before


def test_c5_resume_stream_has_the_seed_signature():
    parameters = inspect.signature(HumanContinuationService.resume_stream).parameters
    assert list(parameters) == ["self", "token", "answer", "scope", "admission", "owner_guard",
                                "on_claimed"]
    assert [p.name for p in parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY] == [
        "scope", "admission", "owner_guard", "on_claimed"]
    assert all(parameters[n].default is None
               for n in ("scope", "admission", "owner_guard", "on_claimed"))


def test_c5_a_pause_with_pending_siblings_streams_nothing_until_the_last_is_redeemed(tenants):
    run, first = paused_run("siblings", {"n": 2})
    second = Pause.objects.filter(run=run).exclude(pk=first.pk).get()
    assert resume(token_for(first)) == []
    assert not Run.objects.filter(parent=run).exists()
    streamed = resume(token_for(second))
    assert streamed[-1]["type"] == "turn.completed"
    assert set(streamed[-1]["data"]["output"]["answers"]) == {str(first.pk), str(second.pk)}


# --- C6 ------------------------------------------------------------------------

REDEEMERS = 6


@pytest.mark.django_db(transaction=True)  # each redeemer thread has its own connection
def test_c6_of_concurrent_redeemers_exactly_one_wins_and_the_rest_change_nothing(tenants):
    run, pause = paused_run()
    token = token_for(pause)
    start = threading.Barrier(REDEEMERS)
    outcomes: list[tuple[str, str]] = []

    def redeem() -> None:
        try:
            start.wait()
            outcomes.append(("won", resume(token)[-1]["type"]))
        except SymfonicError as exc:
            outcomes.append(("refused", exc.code))
        except Exception as exc:  # noqa: BLE001  (anything else is a bug: show it)
            outcomes.append(("error", repr(exc)))
        finally:
            connection.close()

    threads = [threading.Thread(target=redeem) for _ in range(REDEEMERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(outcomes) == (
        [("refused", "already_answered")] * (REDEEMERS - 1) + [("won", "turn.completed")])
    assert Decision.objects.filter(pause=pause).count() == 1
    continuation = Run.objects.get(parent=run)
    assert continuation.attempts == 1
    types = list(TurnEvent.objects.filter(run=continuation).values_list("type", flat=True))
    assert types == ["turn.started", "message.delta", "turn.completed"]


# --- C7 ------------------------------------------------------------------------

def test_c7_on_claimed_is_called_once_synchronously_after_winning_before_any_event(tenants):
    _, pause = paused_run()
    token = token_for(pause)
    seen: list[Any] = []
    calls: list[dict[str, Any]] = []

    def on_claimed() -> None:
        try:
            asyncio.get_running_loop()
            on_the_loop = True  # called from the redeeming coroutine, not handed to a thread
        except RuntimeError:
            on_the_loop = False
        calls.append({"events_seen": len(seen), "on_the_loop": on_the_loop})

    async def consume() -> None:
        stream = compose().resume_stream(token, APPROVE, on_claimed=on_claimed)
        async with aclosing(stream):
            async for event in stream:
                seen.append(event)

    async_to_sync(consume)()
    assert calls == [{"events_seen": 0, "on_the_loop": True}]
    assert seen[-1]["type"] == "turn.completed"


def test_c7_on_claimed_is_not_called_on_a_refusal(tenants):
    _, pause = paused_run()
    token = token_for(pause)
    calls: list[str] = []
    with pytest.raises(InvalidAnswer):
        resume(token, {"decisions": []}, on_claimed=lambda: calls.append("bad answer"))
    resume(token)
    with pytest.raises(AlreadyAnswered):
        resume(token, on_claimed=lambda: calls.append("second redeemer"))
    assert calls == []


def test_c7_on_claimed_tells_a_failure_after_the_claim_from_a_refusal(tenants):
    _, pause = paused_run()
    calls: list[str] = []

    async def broken_lookup(scope: Any) -> Any:
        raise RuntimeError("agent registry is down")

    with pytest.raises(RuntimeError):
        resume(token_for(pause), service=compose(agent_for=broken_lookup),
               on_claimed=lambda: calls.append("claimed"))
    pause.refresh_from_db()
    assert calls == ["claimed"]
    assert pause.status == PauseStatus.ANSWERED  # the token is spent: retrying is pointless
    # The turn it started (the claim recorded turn.started) ends failed at once, with
    # its event, not left running.
    continuation = Run.objects.get(parent=pause.run)
    assert continuation.status == RunStatus.FAILED
    assert continuation.error["code"] == "agent_error"
    assert list(TurnEvent.objects.filter(run=continuation).order_by("seq").values_list(
        "type", flat=True)) == ["turn.started", "turn.failed"]


# --- C8 ------------------------------------------------------------------------

async def _refusing_owner_guard(scope: Any, session_id: str, thread_id: str,
                                resuming: bool) -> None:
    raise PermissionDenied("This session does not own the conversation.")


REFUSALS_BEFORE_THE_CLAIM = {
    "bad signature": lambda p, t: (tampered(token_for(p)), {}, {}, InvalidPauseToken),
    "expired": lambda p, t: (expired_token(p), {}, {}, PauseTokenExpired),
    "unknown scope": lambda p, t: (token_for(p), {"scope_for_claims": lambda c: None}, {},
                                   ScopeUnknown),
    "scope mismatch": lambda p, t: (token_for(p), {}, {"scope": t["globex"]}, ScopeMismatch),
    "lineage": lambda p, t: (mint_token(replace(claims_for(p), run_id=str(uuid.uuid4()))),
                             {}, {}, LineageRefused),
    "owner guard": lambda p, t: (token_for(p), {}, {"owner_guard": _refusing_owner_guard},
                                 PermissionDenied),
    "admission": lambda p, t: (token_for(p), {}, {"admission": lambda scope, claims: None},
                               LineageRefused),
    "admission saying no": lambda p, t: (token_for(p), {},
                                         {"admission": lambda scope, claims: False},
                                         LineageRefused),
}


@pytest.mark.parametrize("refusal", list(REFUSALS_BEFORE_THE_CLAIM))
def test_c8_every_refusal_before_the_claim_leaves_the_pause_redeemable(tenants, refusal):
    run, pause = paused_run()
    token, composition, call, expected = REFUSALS_BEFORE_THE_CLAIM[refusal](pause, tenants)
    before = rows(pause)
    claimed: list[str] = []
    with pytest.raises(expected):
        resume(token, service=compose(**composition), on_claimed=lambda: claimed.append("x"),
               **call)
    assert rows(pause) == before
    assert claimed == []
    # Redeemable: the pause's own token still wins the claim and the turn continues.
    assert resume(token_for(pause))[-1]["type"] == "turn.completed"
    assert Run.objects.filter(parent=run).count() == 1


# --- C9 ------------------------------------------------------------------------

def test_c9_admission_plan_and_event_guard_reach_continue_recovered_typed(tenants):
    run, pause = paused_run()

    def admission(scope: Any, claims: Any) -> Any:
        return SimpleNamespace(prepared_plan={"tenant": scope.slug, "pause": claims.jti},
                               event_guard=lambda event: event)

    streamed = resume(token_for(pause), admission=admission)
    output = streamed[-1]["data"]["output"]
    assert output["prepared_plan"] == {"tenant": "acme", "pause": str(pause.pk)}
    assert output["guarded"] is True
    assert Run.objects.get(parent=run).output == output


def test_c9_without_admission_the_agent_gets_no_plan_and_no_guard(tenants):
    _, pause = paused_run()
    output = resume(token_for(pause))[-1]["data"]["output"]
    assert output["prepared_plan"] is None and output["guarded"] is False


# --- C10 -----------------------------------------------------------------------

class ChattyAgent:
    """Streams many deltas; remembers whether its stream was closed."""

    def __init__(self) -> None:
        self.produced = 0
        self.closed = False

    async def continue_recovered_typed(self, continuation: Any, **kwargs: Any):
        try:
            for i in range(100):
                self.produced += 1
                yield MessageDelta(text=f"word {i} ")
            yield TurnCompleted(output="all words")
        except GeneratorExit:
            self.closed = True
            raise


def test_c10_the_agents_event_source_is_closed_when_the_consumer_stops_early(tenants):
    run, pause = paused_run()
    agent = ChattyAgent()
    service = compose(agent_for=RecordingLookup(agent=agent))

    async def read_one_delta_then_stop() -> bool:
        stream = service.resume_stream(token_for(pause), APPROVE)
        async with aclosing(stream):
            async for event in stream:
                if event["type"] == "message.delta":
                    break
        # Checked before the event loop ends: closed by aclosing, not by loop shutdown.
        return agent.closed

    assert async_to_sync(read_one_delta_then_stop)() is True
    assert agent.produced == 1
    continuation = Run.objects.get(parent=run)
    assert continuation.status == RunStatus.FAILED
    assert continuation.error["code"] == "stream_closed"
    types = list(TurnEvent.objects.filter(run=continuation).values_list("type", flat=True))
    assert types == ["turn.started", "message.delta", "turn.failed"]


# --- C11 -----------------------------------------------------------------------

def test_c11_human_continuation_returns_a_factory_that_binds_the_agent_lookup_later(tenants):
    factory = human_continuation(capability=DjangoHumanInteraction(),
                                 scope_for_claims=default_scope_for_claims)
    assert isinstance(factory, HostContinuationFactory)
    _, pause = paused_run()  # composed before any agent lookup exists

    agent = ChattyAgent()
    lookup = RecordingLookup(agent=agent)
    service = factory.bind(lookup)
    assert isinstance(service, HumanContinuationService)
    streamed = drain(service.resume_stream(token_for(pause), APPROVE))
    assert [s.slug for s in lookup.scopes] == ["acme"]
    assert streamed[-1]["data"]["output"] == "all words"


def test_c11_human_continuation_takes_only_keywords():
    parameters = inspect.signature(human_continuation).parameters
    assert list(parameters) == ["capability", "scope_for_claims"]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters.values())
    with pytest.raises(TypeError):
        human_continuation(DjangoHumanInteraction(), default_scope_for_claims)  # type: ignore[misc]


# --- C12 -----------------------------------------------------------------------

def test_c12_an_unknown_symfonic_key_is_a_system_check_error(settings):
    settings.SYMFONIC = {**settings.SYMFONIC, "CHECKPOINT_PATH": "/var/lib/agent/checkpoints.db"}
    errors = check_settings()
    assert [(e.id, e.level) for e in errors] == [("symfonic_django.E001", 40)]
    assert "CHECKPOINT_PATH" in errors[0].msg and "SCOPE_FOR_CLAIMS" in errors[0].hint


def test_c12_scope_resolution_is_the_explicit_scope_for_claims_route(tenants, settings):
    assert symfonic_settings.SCOPE_FOR_CLAIMS is default_scope_for_claims
    _, pause = paused_run()
    before = rows(pause)
    settings.SYMFONIC = {**settings.SYMFONIC,
                         "SCOPE_FOR_CLAIMS": "tests.test_continuation.forgotten_scope"}
    with pytest.raises(ScopeUnknown):
        async_to_sync(redeem_token)(token_for(pause), APPROVE)
    assert rows(pause) == before


def forgotten_scope(claims: Any) -> None:
    """A deployment route that no longer knows any scope."""
    return None


@pytest.mark.django_db
@pytest.mark.parametrize("claim", ["session_id", "thread_id", "checkpoint_id", "pin_hash", "kind"])
def test_a_signed_token_whose_binding_differs_from_its_pause_is_refused(tenants, claim):
    """Only a key holder could mint one; the token still has to be its pause's own."""
    from symfonic_django.continuation import redeem_token

    _, pause = paused_run()
    other = "question" if claim == "kind" else "elsewhere"
    token = mint_token(replace(claims_for(pause), **{claim: other}))
    before = snapshot(pause)
    with pytest.raises(LineageRefused):
        async_to_sync(redeem_token)(token, {"decisions": [{"type": "approve"}]})
    assert snapshot(pause) == before
