"""Reminders and escalations: each pause is reminded once and escalated once.

The sweep (``notifications``) asks for the pauses it found due, and these take the
ones still pending and not yet told, under their row locks (skipping rows another
sweep holds), with a guarded UPDATE and one ``Decision`` each, in the caller's
transaction, so two sweeps racing tell each once. Being told is not a status: these
write only ``reminded_at`` / ``escalated_at``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q

from ..exceptions import AlreadyAnswered
from ..models import AnsweredVia, Decision, Pause
from .machine import PENDING

#: A decision's comment, or how to write one for each pause.
Comment = str | Callable[[Pause], str]


def mark_reminded(pause_ids: list[Any], *, now: datetime, comment: Comment = "") -> list[Pause]:
    """Record the reminder of those of ``pause_ids`` still pending, unexpired and not yet
    reminded, with a ``Decision`` each (``comment``); returns them (with ``claimed_by``).

    Call it inside the ``transaction.atomic()`` that writes what they announce: the
    marks and the deliveries commit together, or neither does.
    """
    return _mark(pause_ids, "reminded_at", Decision.Action.REMIND, now=now, comment=comment)


def mark_escalated(pause_ids: list[Any], *, now: datetime, comment: Comment = "") -> list[Pause]:
    """``mark_reminded`` for the escalation (``escalated_at``)."""
    return _mark(pause_ids, "escalated_at", Decision.Action.ESCALATE, now=now, comment=comment)


def _mark(pause_ids: list[Any], column: str, action: str, *, now: datetime,
          comment: Comment) -> list[Pause]:
    untold = Q(status=PENDING, expires_at__gt=now, **{f"{column}__isnull": True})
    with transaction.atomic():
        chosen = list(Pause.objects.select_for_update(of=("self",), skip_locked=True)
                      .select_related("claimed_by").filter(untold, pk__in=pause_ids)
                      .order_by("expires_at", "pk"))
        if not chosen:
            return []
        marked = Pause.objects.filter(untold, pk__in=[p.pk for p in chosen]).update(
            **{column: now})
        if marked != len(chosen):  # without row locks another sweep got there: tell none
            raise AlreadyAnswered("Another sweep is telling these pauses' reviewers.")
        Decision.objects.bulk_create(
            Decision(pause=pause, scope_key=pause.scope_key, via=AnsweredVia.SYSTEM,
                     action=action, actor_label="system", created_at=now,
                     comment=comment(pause) if callable(comment) else comment)
            for pause in chosen)
    for pause in chosen:
        setattr(pause, column, now)
    return chosen

