"""The callables a deployment plugs in through ``SYMFONIC``: one ``Protocol`` each.

Each setting below names a dotted path (or holds the callable itself); ``conf``
imports it once. A deployment's function satisfies its protocol when mypy accepts
it for a variable annotated with the protocol::

    from symfonic_django import hooks

    scope_key: hooks.ScopeKey = myproject.tenants.tenant_key

Parameters are positional-only here, so an implementation names its own. The
scope is the deployment's own type (a model instance, a string): ``Any`` here.

The settings, their protocols and what leaving them unset means:

- ``SCOPE_KEY``: ``ScopeKey`` (default ``scopes.default_scope_key``)
- ``SCOPE_LOADER``: ``ScopeLoader`` (default ``scopes.default_scope_loader``)
- ``SCOPE_FOR_CLAIMS``: ``ScopeForClaims`` (default ``scopes.scope_for_claims``)
- ``REVIEWER_SCOPES``: ``ReviewerScopes`` (default ``scopes.superusers_see_all``)
- ``REQUEST_SCOPE``: ``RequestScope`` (None: ``POST runs/`` is refused)
- ``OWNER_GUARD``: ``OwnerGuard`` (None: no guard)
- ``ADMISSION``: ``Admission`` (None: every resume is admitted, with no plan)
- ``APPROVAL_POLICY``: ``ApprovalPolicy`` (None: one approver)
- ``NOTIFY["REVIEWER_EMAILS"]``: ``ReviewerEmails`` (None: no email)

``AGENTS`` maps names to ``agent_for(scope) -> Agent`` factories (sync or async):
``agent_protocol`` has the ``Agent`` protocol they return.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from rest_framework.request import Request

from .models import Pause
from .tokens import PauseClaims

__all__ = ["Admission", "AdmittedPlan", "ApprovalPolicy", "OwnerGuard", "RequestScope",
           "ReviewerEmails", "ReviewerScopes", "ScopeForClaims", "ScopeKey", "ScopeLoader"]


class ScopeKey(Protocol):
    """``SCOPE_KEY``: the durable key of a scope, stored on its runs and pauses."""

    def __call__(self, scope: Any, /) -> str:
        """Return the key of ``scope``: the same key for the same tenant, for ever."""
        ...


class ScopeLoader(Protocol):
    """``SCOPE_LOADER``: a stored key back into the deployment's scope."""

    def __call__(self, key: str, /) -> Any:
        """Return the scope of ``key``, or None when there is none (any more)."""
        ...


class ScopeForClaims(Protocol):
    """``SCOPE_FOR_CLAIMS``: the explicit route from a verified token to its scope (C12)."""

    def __call__(self, claims: PauseClaims, /) -> Any:
        """Return the scope the pause of ``claims`` belongs to, or None (``scope_unknown``).

        May be a coroutine function. Raise ``ScopeMismatch`` when the scope is known but
        is not the one the token was minted for.
        """
        ...


class ReviewerScopes(Protocol):
    """``REVIEWER_SCOPES``: the scopes whose pauses and runs a user may review."""

    def __call__(self, user: Any, /) -> Iterable[str]:
        """Return the keys of the scopes ``user`` reviews, or ``conf.ALL_SCOPES`` for all.

        Called for authenticated users only.
        """
        ...


class RequestScope(Protocol):
    """``REQUEST_SCOPE``: the scope a run started over HTTP (``POST runs/``) belongs to."""

    def __call__(self, request: Request, /) -> Any:
        """Return the scope of the caller of ``request``, or None to refuse the run."""
        ...


class OwnerGuard(Protocol):
    """``OWNER_GUARD``: a last word on who may resume a session's thread."""

    def __call__(self, scope: Any, session_id: str, thread_id: str, resuming: bool, /
                 ) -> Awaitable[None] | None:
        """Return (or be awaited) to let the resume go on; raise to refuse it.

        Usually a coroutine function; a plain function runs off the event loop.
        """
        ...


@dataclass(frozen=True)
class AdmittedPlan:
    """What an ``ADMISSION`` hook returns to admit a resume.

    Both fields reach the agent's ``continue_recovered_typed(continuation, *,
    prepared_plan=..., event_guard=...)`` (contract C9) when the turn runs in the
    caller's process (``resume_stream``); the app reads neither. A resume sent to a
    worker (the HTTP API) is admitted or refused, and the plan goes no further.
    """

    #: Whatever the deployment prepared for the continued turn (a plan, a budget, ...).
    prepared_plan: Any = None
    #: Whatever the agent should check its events with before emitting them.
    event_guard: Any = None


class Admission(Protocol):
    """``ADMISSION``: admits a resume, with a plan for the continued turn, or refuses it."""

    def __call__(self, scope: Any, claims: PauseClaims, /
                 ) -> AdmittedPlan | None | Awaitable[AdmittedPlan | None]:
        """Return an ``AdmittedPlan`` to admit, None to refuse (``lineage_refused``).

        May be a coroutine function. Called after the token verified and its scope
        resolved, before the pause is answered: a refusal leaves the token unspent.
        """
        ...


class ApprovalPolicy(Protocol):
    """``APPROVAL_POLICY``: how many distinct reviewers must approve an approval pause."""

    def __call__(self, pause: Pause, /) -> int:
        """Return a whole number from 1 to ``pauses.MAX_APPROVERS`` (four eyes: 2).

        Read once, when the pause is made, after its actions were checked against their
        ``args_schema``. The run's starter never counts among the approvers.
        """
        ...


class ReviewerEmails(Protocol):
    """``NOTIFY["REVIEWER_EMAILS"]``: who is emailed about the pauses of a scope."""

    def __call__(self, scope_key: str, /) -> Iterable[str]:
        """Return the addresses of the reviewers of ``scope_key``; invalid ones are skipped.

        Those addresses may be sent the pause's token (``NOTIFY["INCLUDE_TOKEN"]``):
        return only people who may answer the scope's pauses.
        """
        ...
