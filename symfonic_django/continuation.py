"""Redeeming a pause token and streaming the resumed turn (``human_continuation``).

The order of checks is the contract (the rules C1–C12 of docs/design.md section 5):

1. the token is authenticated — signature, then expiry — by the capability;
2. only then is the deployment asked for the scope (``scope_for_claims``);
   ``None`` is refused before any agent is involved;
3. the caller's expected scope, the lineage (the run the token names must be
   one this host issued, and the one that really paused), the owner guard
   and the admission hook may each refuse;
4. the single-use claim: exactly one concurrent redeemer wins;
   ``on_claimed`` runs synchronously right after;
5. the resumed turn streams its typed events.

Every refusal in 1–4 leaves the pause row as it was.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing, suppress
from typing import Any, Protocol

from asgiref.sync import sync_to_async

from . import pauses, runs
from .agent_protocol import Agent
from .events import TurnFailed, aring
from .exceptions import (
    InteractionConfigurationError,
    LineageRefused,
    NotFound,
    ScopeMismatch,
    ScopeUnknown,
)
from .models import AnsweredVia, Pause, Run
from .runs import LeaseLost
from .scopes import scope_key
from .tokens import PauseClaims, scope_hash_matches, verify_token
from .turns import stream_turn, worker_name


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    """Call a deployment hook that may be sync (run off the event loop) or async."""
    if inspect.iscoroutinefunction(fn):
        return await fn(*args)
    result = await sync_to_async(fn)(*args)
    return await result if inspect.isawaitable(result) else result


#: The claims that bind a token to its pause's metadata, compared with the row at resume.
BINDING_CLAIMS = ("session_id", "thread_id", "checkpoint_id", "pin_hash", "kind")


class HumanInteractionCapability(Protocol):
    """What ``HumanContinuationService`` needs of a host (rule C1): both are checked."""

    def decode_token(self, token: str) -> PauseClaims:
        """Authenticate a token (signature, then expiry) and return its claims."""
        ...

    def resume(self, claims: PauseClaims, answer: Any, *, dispatch: bool = True,
               actor: Any = None, via: str = AnsweredVia.TOKEN) -> pauses.Resolution:
        """Spend the pause the claims name: the single-use claim."""
        ...


class DjangoHumanInteraction:
    """The host's human-interaction capability: ``decode_token`` and ``resume``."""

    def decode_token(self, token: str) -> PauseClaims:
        return verify_token(token)

    def admit_lineage(self, claims: PauseClaims, scope: Any) -> Pause:
        """Refuse a pause whose bound run this host never issued (rule B6)."""
        pause = Pause.objects.filter(pk=claims.jti).first()
        if pause is None:
            raise NotFound("No such pause.")
        if not scope_hash_matches(pause.scope_key, claims.scope_hash):
            raise ScopeMismatch()
        issued = Run.objects.filter(pk=pause.run_id).values_list("pk", "root_id").first()
        if (
            issued is None
            or claims.run_id != str(issued[0])
            or claims.root_run_id != str(issued[1] or issued[0])
            or pause.bound_run_id != claims.run_id
        ):
            raise LineageRefused(
                "The pause is bound to a run this host did not issue, so it cannot be resumed."
            )
        run_scope = Run.objects.filter(pk=pause.run_id).values_list("scope_key", flat=True).get()
        if run_scope != pause.scope_key:
            raise ScopeMismatch("The pause was bound to a scope other than its run's.")
        # The rest of the binding the token was minted with (rule B5) must be the pause's
        # too: a token signed with the deployment's key but other metadata is not its token.
        expected = pauses.claims_for(pause)
        if any(getattr(claims, name) != getattr(expected, name) for name in BINDING_CLAIMS):
            raise LineageRefused("The token's binding differs from the pause it names.")
        return pause

    def resume(self, claims: PauseClaims, answer: Any, *, dispatch: bool = True,
               actor: Any = None, via: str = AnsweredVia.TOKEN) -> pauses.Resolution:
        """The single-use claim: answer the pause the claims name."""
        return pauses.answer_pause(claims.jti, answer, actor=actor, via=via, dispatch=dispatch)


class HumanContinuationService:
    """Redeem durable human pauses and route the resulting turn through a host.

    ``scope_for_claims`` receives only claims that passed signature and expiry
    verification. It resolves the deployment's durable scope record and may
    return ``None`` when the scope is no longer known; that is refused before
    the capability or any agent is asked to continue the turn.
    """

    def __init__(
        self,
        *,
        capability: HumanInteractionCapability,
        scope_for_claims: Callable[[PauseClaims], Any],
        agent_for: Callable[[Any], Awaitable[Agent]],
    ) -> None:
        if not callable(getattr(capability, "resume", None)):
            raise TypeError(
                "human continuation needs a HumanInteractionCapability with resume(); "
                f"got {type(capability).__name__}"
            )
        if not callable(getattr(capability, "decode_token", None)):
            raise TypeError(
                "human continuation needs decode_token so an opaque pause can be "
                f"authenticated on a fresh host; got {type(capability).__name__}"
            )
        self._capability = capability
        self._scope_for_claims = scope_for_claims
        self._agent_for = agent_for

    async def redeem(
        self, token: str, answer: Any, *, scope: Any | None = None,
        admission: Callable[[Any, Any], Any] | None = None,
        owner_guard: Callable[[Any, str, str, bool], Awaitable[None]] | None = None,
        on_claimed: Callable[[], None] | None = None, dispatch: bool = True,
        actor: Any = None, via: str = AnsweredVia.TOKEN,
    ) -> tuple[pauses.Resolution, Any, Any]:
        """Steps 1–4; returns the resolution, the resolved scope and the admitted plan.

        With ``dispatch`` the continuation goes to a Celery worker on commit;
        without, the caller runs it (``resume_stream``).
        """
        claims = self._capability.decode_token(token)
        resolved = await _call(self._scope_for_claims, claims)
        if resolved is None:
            raise ScopeUnknown()
        if scope is not None and scope_key(scope) != scope_key(resolved):
            raise ScopeMismatch()
        admit = getattr(self._capability, "admit_lineage", None)
        if admit is not None:
            await sync_to_async(admit)(claims, resolved)
        if owner_guard is not None:
            await _call(owner_guard, resolved, claims.session_id, claims.thread_id, True)
        admitted = None
        if admission is not None:
            admitted = await _call(admission, resolved, claims)
            if admitted is None or admitted is False:
                raise LineageRefused("The admission hook refused to continue this run.")
        resolution = await sync_to_async(self._capability.resume)(
            claims, answer, dispatch=dispatch, actor=actor, via=via)
        if on_claimed is not None:
            on_claimed()
        return resolution, resolved, admitted

    async def resume_stream(
        self, token: str, answer: Any, *, scope: Any | None = None,
        admission: Callable[[Any, Any], Any] | None = None,
        owner_guard: Callable[[Any, str, str, bool], Awaitable[None]] | None = None,
        on_claimed: Callable[[], None] | None = None,
    ) -> AsyncGenerator[dict[str, Any], None]:
        """Redeem once, then stream the recovered turn's typed events.

        ``on_claimed`` is called synchronously once this call has won the
        single-use claim, so a caller can tell a failure after the token was
        spent from a refusal that left it redeemable. When sibling pauses of
        the same turn are still pending, nothing streams: the turn continues
        once the last of them is answered.
        """
        resolution, resolved, admitted = await self.redeem(
            token, answer, scope=scope, admission=admission, owner_guard=owner_guard,
            on_claimed=on_claimed, dispatch=False,
        )
        if resolution.continuation is None:
            return
        worker = worker_name()
        run = await sync_to_async(runs.claim)(resolution.continuation.pk, worker)
        if run is None:
            return
        try:
            agent = await self._agent_for(resolved)
        except Exception as exc:
            # The token is spent and the run is ours: end it failed now, with its
            # turn.failed event, rather than leave it running until its lease lapses.
            seq = run.started_event.seq + 1  # type: ignore[attr-defined]
            with suppress(LeaseLost):
                await sync_to_async(runs.end)(run, run.epoch, seq, TurnFailed(
                    code="agent_error", message=f"agent lookup failed: {type(exc).__name__}"))
                await aring(run.pk, seq)
            raise
        source = stream_turn(
            run, worker=worker, agent=agent, scope=resolved,
            prepared_plan=getattr(admitted, "prepared_plan", None),
            event_guard=getattr(admitted, "event_guard", None),
        )
        async with aclosing(source):
            async for event in source:
                yield event


class HostContinuationFactory:
    """Bind host-owned agent lookup after a deployment has composed its ports."""

    def __init__(self, capability: HumanInteractionCapability,
                 scope_for_claims: Callable[[PauseClaims], Any]) -> None:
        self._capability = capability
        self._scope_for_claims = scope_for_claims

    def bind(self, agent_for: Callable[[Any], Awaitable[Agent]]) -> HumanContinuationService:
        return HumanContinuationService(
            capability=self._capability, scope_for_claims=self._scope_for_claims,
            agent_for=agent_for,
        )

    __call__ = bind


def human_continuation(
    *, capability: HumanInteractionCapability, scope_for_claims: Callable[[PauseClaims], Any]
) -> HostContinuationFactory:
    """Create the factory a host binds its agent lookup to.

    The explicit scope resolver is the migration boundary for a legacy
    checkpoint-path setting: it replaces an accepted-but-inert path with a
    durable token-to-scope route that the deployment owns and can test.
    """
    return HostContinuationFactory(capability, scope_for_claims)


async def _no_in_process_agents(scope: Any) -> Any:
    raise InteractionConfigurationError(
        "the default continuation service hands resumed turns to Celery workers; "
        "compose your own with human_continuation(...).bind(agent_for) to stream in-process"
    )


def default_service() -> HumanContinuationService:
    """The service the HTTP API uses, composed from ``SYMFONIC`` settings."""
    from .conf import settings

    return HumanContinuationService(capability=DjangoHumanInteraction(),
                                    scope_for_claims=settings.SCOPE_FOR_CLAIMS,
                                    agent_for=_no_in_process_agents)


async def redeem_token(token: str, answer: Any, *, actor: Any = None,
                       via: str = AnsweredVia.TOKEN) -> pauses.Resolution:
    """Redeem with the deployment's settings (owner guard, admission) and dispatch to a worker.

    ``actor`` is the signed-in caller, if any, and is who the state machine judges:
    the token answers a pause that needs one approver by itself, but on a pause that
    needs several, an answer that lets an action run counts only from a reviewer of
    the pause's scope at that moment (``pauses``), never from the token alone.
    """
    from .conf import settings

    resolution, _, _ = await default_service().redeem(
        token, answer, owner_guard=settings.OWNER_GUARD, admission=settings.ADMISSION,
        actor=actor, via=via)
    return resolution
