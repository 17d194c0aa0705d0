"""Default scope routes: how a deployment's tenant becomes a key and back.

A *scope* is whatever object a deployment uses for a tenant boundary (a model
instance, a string). Runs and pauses store only its key; tokens carry only a
keyed hash of that key (rule C4). Every route here is a default a deployment
replaces through ``SYMFONIC`` — explicitly, and testably (rule C12).
"""

from __future__ import annotations

import copy
import time
from typing import Any

from django.core.signals import setting_changed

from .conf import ALL_SCOPES, SETTING_NAME, settings
from .exceptions import ScopeMismatch
from .models import Pause, PauseQuerySet, Run, RunQuerySet
from .tokens import PauseClaims, scope_hash_matches

__all__ = ["ALL_SCOPES", "ANSWER_PERMISSION", "VIEW_PAUSE_PERMISSION", "VIEW_RUN_PERMISSION",
           "is_active_user", "load_scope", "load_scope_for_turn", "may_answer", "may_read_pauses",
           "may_read_run", "may_review", "readable_pauses", "readable_runs",
           "readable_scope_keys", "reads_anything", "reviewer_scope_keys", "scope_for_claims",
           "scope_key", "started_run"]


def default_scope_key(scope: Any) -> str:
    """A string is its own key; an object offers ``scope_key`` or its ``pk``."""
    if isinstance(scope, str):
        return scope
    key = getattr(scope, "scope_key", None)
    if key is None:
        key = getattr(scope, "pk", None)
    if key is None:
        raise TypeError(
            f"Cannot derive a scope key from {type(scope).__name__}; give it a "
            "'scope_key' attribute or set SYMFONIC['SCOPE_KEY']."
        )
    return str(key)


def default_scope_loader(key: str) -> Any:
    """Without a loader, the key is the scope."""
    return key


def scope_key(scope: Any) -> str:
    return str(settings.SCOPE_KEY(scope))


def load_scope(key: str) -> Any:
    return settings.SCOPE_LOADER(key)


#: Scopes workers loaded for turns: key -> (monotonic expiry, scope). Per process.
_turn_scopes: dict[str, tuple[float, Any]] = {}
#: Past this many keys the cache starts over rather than grow without bound.
TURN_SCOPES_MAX = 1024


def load_scope_for_turn(key: str) -> Any:
    """``load_scope`` for a worker's turn, kept ``SCOPE_CACHE_SECONDS`` per process.

    With the default 0 this is ``load_scope``. Otherwise a scope loaded for
    one turn serves the turns of the same key that this process runs in the
    next seconds (tenants change rarely, and a query per turn was a large
    share of a short one). Each turn gets its own shallow copy, so an agent
    that sets attributes on its scope does not leak them into the next turn.
    A key the loader does not know (``None``) is never kept. Only turns read
    this cache: token and API scope checks always load afresh.
    """
    seconds = settings.SCOPE_CACHE_SECONDS
    if not seconds:
        return load_scope(key)
    now = time.monotonic()
    kept = _turn_scopes.get(key)
    if kept is None or kept[0] <= now:
        scope = load_scope(key)
        if scope is None:
            return None
        if len(_turn_scopes) >= TURN_SCOPES_MAX:
            _turn_scopes.clear()
        kept = _turn_scopes[key] = (now + seconds, scope)
    return copy.copy(kept[1])


def clear_scope_cache() -> None:
    """Forget every scope kept for turns (in this process)."""
    _turn_scopes.clear()


def _forget_on_settings_change(*, setting: str, **kwargs: Any) -> None:
    if setting == SETTING_NAME:
        clear_scope_cache()


setting_changed.connect(_forget_on_settings_change)


def scope_for_claims(claims: PauseClaims) -> Any:
    """Load the scope of the pause the (already verified) claims name.

    Returns ``None`` when the pause is gone or the loader no longer knows the
    scope (``scope_unknown``). Raises ``ScopeMismatch`` when the pause's scope
    does not hash to the claims' ``scope_hash``: the scope is known, but it is
    not the one the token was minted for.
    """
    key = Pause.objects.filter(pk=claims.jti).values_list("scope_key", flat=True).first()
    if key is None:
        return None
    if not scope_hash_matches(key, claims.scope_hash):
        raise ScopeMismatch("The token was minted for another scope than its pause's.")
    return load_scope(key)


def superusers_see_all(user: Any) -> Any:
    """Default ``REVIEWER_SCOPES``: superusers see every scope, others none."""
    if getattr(user, "is_active", False) and getattr(user, "is_superuser", False):
        return ALL_SCOPES
    return ()


def reviewer_scope_keys(user: Any) -> Any:
    """``ALL_SCOPES`` or a frozenset of the scope keys ``user`` may review."""
    if user is None or not getattr(user, "is_authenticated", False):
        return frozenset()
    granted = settings.REVIEWER_SCOPES(user)
    if granted == ALL_SCOPES:
        return ALL_SCOPES
    return frozenset(str(k) for k in granted)


def may_review(user: Any, key: str) -> bool:
    granted = reviewer_scope_keys(user)
    return granted == ALL_SCOPES or key in granted


#: The permission that lets a reviewer answer the pauses of the scopes they see.
ANSWER_PERMISSION = "symfonic_django.answer_pause"


def may_answer(user: Any, key: str | None = None) -> bool:
    """Whether ``user`` may answer pauses (of scope ``key``, when given)."""
    if not (user is not None and getattr(user, "is_authenticated", False)
            and user.has_perm(ANSWER_PERMISSION)):
        return False
    return key is None or may_review(user, key)


# --- who may read -------------------------------------------------------------------
#
# One rule, read by every surface that shows pauses, runs or events (the API, the
# websocket, the viewer, the admin): reading a scope's rows needs the view permission of
# that kind of row *and* the scope among the user's scopes (``REVIEWER_SCOPES``). Being
# a member who may start runs is not enough. The one exception is the starter of a run:
# it may read its own run tree (the runs of one root, which all carry its
# ``started_by``) without the view permission, as long as it is active and the run's
# scope is still one of its scopes; removing it from the tenant ends that right.

#: Reading a scope's pauses (and their decisions).
VIEW_PAUSE_PERMISSION = "symfonic_django.view_pause"
#: Reading a scope's runs and their events.
VIEW_RUN_PERMISSION = "symfonic_django.view_run"


def is_active_user(user: Any) -> bool:
    """An authenticated user whose account is switched on."""
    return (user is not None and getattr(user, "is_authenticated", False)
            and getattr(user, "is_active", False))


def readable_scope_keys(user: Any, permission: str) -> Any:
    """``ALL_SCOPES`` or the frozenset of scope keys whose rows ``permission`` lets ``user`` read.

    ``permission`` is a model's view permission (``VIEW_PAUSE_PERMISSION``,
    ``VIEW_RUN_PERMISSION``, or another model's ``view_...`` in the admin).
    """
    if not is_active_user(user) or not user.has_perm(permission):
        return frozenset()
    return reviewer_scope_keys(user)


def may_read_pauses(user: Any, key: str) -> bool:
    """Whether ``user`` may read the pauses of scope ``key``."""
    granted = readable_scope_keys(user, VIEW_PAUSE_PERMISSION)
    return granted == ALL_SCOPES or key in granted


def started_run(user: Any, run: Run) -> bool:
    """Whether ``user`` is the still-entitled starter of ``run``'s tree (see above)."""
    return (is_active_user(user) and run.started_by_id is not None
            and run.started_by_id == user.pk and may_review(user, run.scope_key))


def may_read_run(user: Any, run: Run) -> bool:
    """Whether ``user`` may read ``run`` and its events: the view permission in its scope,
    or being its (still entitled) starter."""
    granted = readable_scope_keys(user, VIEW_RUN_PERMISSION)
    return granted == ALL_SCOPES or run.scope_key in granted or started_run(user, run)


def reads_anything(user: Any) -> bool:
    """Whether ``user`` may read some runs at all: the view permission in a scope, or a
    scope it could have started runs in. A refusal for a user who reads nothing is a
    403; for anyone else a run they cannot read is a 404, exactly as an unknown one."""
    return bool(readable_scope_keys(user, VIEW_RUN_PERMISSION)) or bool(
        is_active_user(user) and reviewer_scope_keys(user))


def readable_pauses(user: Any) -> PauseQuerySet:
    """The pauses ``user`` may read."""
    return Pause.objects.in_scopes(readable_scope_keys(user, VIEW_PAUSE_PERMISSION))


def readable_runs(user: Any) -> RunQuerySet:
    """The runs ``user`` may read: its readable scopes', or else the runs it started.

    Holding the view permission covers every scope of the user, so its own runs
    (which the starter rule keeps to its scopes) are already among them: the two
    never need joining with ``OR``.
    """
    granted = readable_scope_keys(user, VIEW_RUN_PERMISSION)
    if granted:
        return Run.objects.in_scopes(granted)
    if not is_active_user(user):
        return Run.objects.none()
    return Run.objects.in_scopes(reviewer_scope_keys(user)).filter(started_by_id=user.pk)
