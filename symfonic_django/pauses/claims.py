"""Review claims: "Being reviewed by alice until 07:40:00 UTC".

A claim tells other reviewers someone is on it. It informs and locks nothing: anyone
who may answer the pause still can, and an answer ends the claim's meaning with the
pause. A claim is not a status, so these write only ``claimed_by`` /
``claimed_until``, each under the pause's row lock with a guarded UPDATE (the claim
on SQLite, which has no row locks), and a ``Decision``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from ..conf import ALL_SCOPES, settings
from ..exceptions import ClaimHeld, ClaimNotHeld, PermissionDenied
from ..models import AnsweredVia, Decision, Pause
from .guards import clock, label, lookup, refuse_closed, reviewer_now
from .machine import PENDING


def _claimable(pause_id: Any, actor: Any, visible: Any, now: datetime) -> Pause:
    """``pause_id`` locked, pending and in time, claimed or released by a signed-in user."""
    if getattr(actor, "pk", None) is None:
        raise PermissionDenied("A claim names the reviewer who holds it: sign in to claim "
                               "or release a pause.")
    pause = lookup(pause_id, visible)
    pause = (Pause.objects.select_for_update(of=("self",))
             .select_related("answered_by", "claimed_by").get(pk=pause.pk))
    if pause.status != PENDING or pause.expires_at <= now:
        refuse_closed(pause, now, caller=actor)
    return pause


def claim(pause_id: Any, *, actor: Any, via: str = AnsweredVia.PYTHON,
          visible: Any = ALL_SCOPES, now: datetime | None = None) -> Pause:
    """Claim a pending pause for ``actor`` for ``CLAIM_SECONDS``; the holder may claim again
    to extend it. Returns the pause as claimed.

    Refused, changing nothing: ``ClaimHeld`` while another reviewer's claim has not
    lapsed; ``AlreadyAnswered`` / ``PauseCancelled`` / ``PauseExpired`` for a closed pause;
    ``NotFound`` outside ``visible``; ``PermissionDenied`` for no user.

    A claim whose holder may no longer answer the pause (deactivated, the answer
    permission or the scope taken away) has lapsed: it blocks nobody.
    """
    now = now or timezone.now()
    until = now + timedelta(seconds=settings.CLAIM_SECONDS)
    with transaction.atomic():
        pause = _claimable(pause_id, actor, visible, now)
        holder = pause.claimant_at(now)
        free = Q(claimed_by__isnull=True) | Q(claimed_by=actor.pk) | Q(claimed_until__lte=now)
        if holder is not None and holder.pk != actor.pk:
            if reviewer_now(holder, pause.scope_key):
                raise ClaimHeld(f"Being reviewed by {label(holder)} until "
                                f"{clock(pause.claimed_until or now)}.")
            free |= Q(claimed_by=holder.pk)  # revoked since it claimed: taken over
        if not Pause.objects.filter(free, pk=pause.pk, status=PENDING).update(
                claimed_by=actor.pk, claimed_until=until, updated_at=now):
            # SQLite, without row locks: another reviewer claimed it since it was read.
            raise ClaimHeld("Another reviewer claimed this pause a moment ago.")
        Decision.objects.create(pause=pause, scope_key=pause.scope_key, actor=actor,
                                actor_label=label(actor), via=via,
                                action=Decision.Action.CLAIM, comment=f"until {clock(until)}",
                                created_at=now)
    pause.claimed_by, pause.claimed_until, pause.updated_at = actor, until, now
    return pause


def release(pause_id: Any, *, actor: Any, via: str = AnsweredVia.PYTHON,
            visible: Any = ALL_SCOPES, now: datetime | None = None) -> Pause:
    """Give up ``actor``'s claim on a pending pause before it lapses. Returns the pause.

    Refused, changing nothing: ``ClaimNotHeld`` when ``actor`` holds no live claim on
    it (another reviewer's, a lapsed one, none), and as ``claim`` for the rest.
    """
    now = now or timezone.now()
    with transaction.atomic():
        pause = _claimable(pause_id, actor, visible, now)
        holder = pause.claimant_at(now)
        if holder is not None and holder.pk != actor.pk:
            raise ClaimNotHeld(f"You hold no claim on this pause: it is being reviewed by "
                               f"{label(holder)} until {clock(pause.claimed_until or now)}.")
        mine = Q(claimed_by=actor.pk, claimed_until__gt=now)
        if holder is None or not Pause.objects.filter(mine, pk=pause.pk, status=PENDING).update(
                claimed_by=None, claimed_until=None, updated_at=now):
            raise ClaimNotHeld("You hold no claim on this pause (or it has lapsed).")
        Decision.objects.create(pause=pause, scope_key=pause.scope_key, actor=actor,
                                actor_label=label(actor), via=via,
                                action=Decision.Action.RELEASE, created_at=now)
    pause.claimed_by, pause.claimed_until, pause.updated_at = None, None, now
    return pause

