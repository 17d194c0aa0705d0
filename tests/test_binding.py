"""The binding contract (``live_binding.txt``), one test per rule B1–B6.

``current_run_binding()`` copies the two run ids out of the active turn and
nothing else; the deployment's own fields are copied through and signed; and
a binding proves nothing, so a run nobody issued is refused at resume.
"""

from __future__ import annotations

import gc
import inspect
import weakref
from typing import Any

import pytest

from symfonic_django import PauseBinding, current_run_binding, request_pause
from symfonic_django.binding import RunIdentity, run_context
from symfonic_django.events import MessageDelta
from symfonic_django.exceptions import (
    InteractionConfigurationError,
    LineageRefused,
    ScopeMismatch,
)
from symfonic_django.models import Decision, Pause, PauseStatus, Run, RunStatus
from symfonic_django.pauses import token_for
from symfonic_django.tokens import pin_hash, scope_hash, verify_token
from symfonic_django.turns import execute_run

from .agents import APPROVE_PROMPT, EchoAgent
from .conftest import paused_run, snapshot
from .continuations import compose, registered_agent, resume

pytestmark = pytest.mark.django_db


class BindingAgent(EchoAgent):
    """Pauses with ``current_run_binding(**input["binding"])``; pauses again when resumed."""

    async def start_typed(self, context: Any, input: Any):
        fields = dict((input or {}).get("binding", {}))
        await request_pause(kind="approval", prompt=APPROVE_PROMPT, idempotency_key="first",
                            binding=lambda: current_run_binding(**fields))
        yield MessageDelta(text="bound")

    async def continue_recovered_typed(self, continuation: Any, **kwargs: Any):
        await request_pause(kind="approval", prompt=APPROVE_PROMPT, idempotency_key="second")
        yield MessageDelta(text="bound again")


class GuessingAgent(EchoAgent):
    """Binds its pause to a real run of the same tenant that is not the one pausing."""

    async def start_typed(self, context: Any, input: Any):
        other = input["other_run_id"]
        await request_pause(kind="approval", prompt=APPROVE_PROMPT, binding=lambda: PauseBinding(
            pin=None, scope=None, run_id=other, root_run_id=other, session_id="",
            thread_id="", checkpoint_id=None))
        yield MessageDelta(text="guessed")


def binding_agent(scope: Any) -> BindingAgent:
    return BindingAgent()


def guessing_agent(scope: Any) -> GuessingAgent:
    return GuessingAgent()


@pytest.fixture
def test_agents(settings: Any) -> None:
    settings.SYMFONIC = {**settings.SYMFONIC, "AGENTS": {
        **settings.SYMFONIC["AGENTS"], "binder": "tests.test_binding.binding_agent",
        "guesser": "tests.test_binding.guessing_agent"}}


def test_b1_run_ids_cannot_be_passed_in():
    parameters = inspect.signature(current_run_binding).parameters
    assert list(parameters) == ["pin", "scope", "session_id", "thread_id", "checkpoint_id"]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters.values())
    with run_context(RunIdentity("the-active-run")):
        for name in ("run_id", "root_run_id"):
            with pytest.raises(TypeError):
                current_run_binding(**{name: "a-run-of-my-choosing"})
        with pytest.raises(TypeError):
            current_run_binding("positional")  # type: ignore[misc]
        assert current_run_binding().run_id == "the-active-run"


def test_b2_run_id_is_the_active_turn_and_root_is_its_root_or_itself():
    with run_context(RunIdentity("top")):
        top = current_run_binding()
    with run_context(RunIdentity("child", "top")):
        child = current_run_binding()
    assert (top.run_id, top.root_run_id) == ("top", "top")
    assert (child.run_id, child.root_run_id) == ("child", "top")


def test_b2_a_resumed_turn_binds_its_own_id_and_the_root_of_its_lineage(tenants, test_agents):
    top, first = paused_run("binder")
    assert (first.bound_run_id, first.bound_root_run_id) == (str(top.pk), str(top.pk))
    resume(token_for(first), service=compose(agent_for=registered_agent("binder")))
    continuation = Run.objects.get(parent=top)
    assert continuation.status == RunStatus.PAUSED
    second = Pause.objects.get(run=continuation)
    assert (second.bound_run_id, second.bound_root_run_id) == (str(continuation.pk), str(top.pk))
    claims = verify_token(token_for(second))
    assert (claims.run_id, claims.root_run_id) == (str(continuation.pk), str(top.pk))


def test_b3_binding_keeps_no_reference_to_the_run_identity():
    identity = RunIdentity("run-1", "root-1")
    alive = weakref.ref(identity)
    with run_context(identity):
        binding = current_run_binding(session_id="s")
    del identity
    gc.collect()
    assert alive() is None  # the binding did not extend the identity's life
    assert (binding.run_id, binding.root_run_id) == ("run-1", "root-1")
    assert type(binding.run_id) is str and type(binding.root_run_id) is str


def test_b4_outside_a_run_raises_with_guidance():
    with pytest.raises(InteractionConfigurationError) as refused:
        current_run_binding(scope="acme")
    assert "no run is active" in str(refused.value)
    assert "call it from the binding callable" in str(refused.value)


def test_b4_after_the_run_context_is_left_it_raises_again():
    with run_context(RunIdentity("run-1")):
        current_run_binding()
    with pytest.raises(InteractionConfigurationError):
        current_run_binding()


def test_b5_deployment_fields_are_copied_through_as_given():
    pin, scope = {"customer": 42}, object()
    with run_context(RunIdentity("run-1")):
        binding = current_run_binding(pin=pin, scope=scope, session_id="sess", thread_id="th",
                                      checkpoint_id="cp-7")
    assert binding.pin is pin and binding.scope is scope
    assert (binding.session_id, binding.thread_id, binding.checkpoint_id) == ("sess", "th", "cp-7")
    with run_context(RunIdentity("run-1")):
        assert current_run_binding().checkpoint_id is None


def test_b5_deployment_fields_are_signed_into_the_pause(tenants, test_agents):
    fields = {"pin": {"customer": 42}, "scope": "globex", "session_id": "sess-9",
              "thread_id": "thread-3", "checkpoint_id": "cp-7"}
    run, pause = paused_run("binder", {"binding": fields}, scope="acme")
    claims = verify_token(token_for(pause))
    assert (claims.session_id, claims.thread_id, claims.checkpoint_id) == (
        "sess-9", "thread-3", "cp-7")
    assert claims.pin_hash == pin_hash({"customer": 42}) != ""
    assert claims.scope_hash == scope_hash("globex")
    assert (pause.scope_key, run.scope_key) == ("globex", "acme")
    # Copied through, not checked: the deployment's own authority catches a wrong scope.
    before = snapshot(pause)
    with pytest.raises(ScopeMismatch):
        resume(token_for(pause))
    assert snapshot(pause) == before


def test_b6_binding_to_unissued_run_pauses_fine_and_is_refused_at_resume(tenants):
    run, pause = paused_run("forged")
    assert run.status == RunStatus.PAUSED and pause.status == PauseStatus.PENDING
    assert pause.run_id == run.pk and pause.bound_run_id == "00000000-0000-0000-0000-000000000000"
    before, decisions, runs = snapshot(pause), Decision.objects.count(), Run.objects.count()
    with pytest.raises(LineageRefused) as refused:
        resume(token_for(pause))
    assert refused.value.code == "lineage_refused"
    assert snapshot(pause) == before
    assert (Decision.objects.count(), Run.objects.count()) == (decisions, runs)


def test_b6_binding_to_another_real_run_is_refused_at_resume(tenants, test_agents):
    other, _ = paused_run("echo")
    run, pause = paused_run("guesser", {"other_run_id": str(other.pk)})
    assert pause.bound_run_id == str(other.pk) != str(run.pk)
    before = snapshot(pause)
    with pytest.raises(LineageRefused):
        resume(token_for(pause))
    assert snapshot(pause) == before
    assert execute_run(run.pk) == "skipped"
