"""The reminders and escalations sweep (the beat's ``send_reminders``, ``manage.py
symfonic_remind``): ``pause.reminder`` ``REMIND_BEFORE`` a pause's expiry, to the scope's
reviewers, and ``pause.escalated`` ``ESCALATE_BEFORE`` it, to the members of the
``ESCALATE_TO`` group; email and webhook, once per pause each."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from .. import pauses
from ..models import Pause
from .outbox import BATCH, deliveries, escalation_addresses, reviewer_addresses, store
from .payloads import pause_data
from .settings import NotifySettings, notify_settings
from .types import PAUSE_ESCALATED, PAUSE_REMINDER


@dataclass(frozen=True)
class Sweep:
    """What one ``send_reminders`` call did: how many pauses it reminded and escalated."""

    reminded: int
    escalated: int


def send_reminders(*, now: datetime | None = None, limit: int = BATCH) -> Sweep:
    """Remind the reviewers of pending pauses that near their expiry, then escalate those
    that come nearer still, each pause once; at most ``limit`` pauses of each.

    A pause is due for its reminder once it expires within ``REMIND_BEFORE`` (and was
    asked before that window opened), and for its escalation within ``ESCALATE_BEFORE``.
    Each batch is a few queries whatever its size (one more per distinct scope, for its
    reviewers' addresses): the due pauses read from the partial index of pending pauses
    by expiry, then marked, audited and their deliveries written in one transaction
    (``pauses.mark_reminded`` skips the rows another sweep holds, so two sweeps racing
    tell each pause once).
    """
    config = notify_settings()
    now = now or timezone.now()
    reminded = escalated = 0
    if config.remind_before is not None and (
            config.reviewer_emails is not None or _takes_anywhere(config, PAUSE_REMINDER)):
        reminded = _sweep(PAUSE_REMINDER, config.remind_before, config=config, now=now,
                          limit=limit)
    if config.escalate_before is not None and (
            config.escalate_to is not None or _takes_anywhere(config, PAUSE_ESCALATED)):
        escalated = _sweep(PAUSE_ESCALATED, config.escalate_before, config=config, now=now,
                           limit=limit)
    return Sweep(reminded=reminded, escalated=escalated)


def _takes_anywhere(config: NotifySettings, event_type: str) -> bool:
    return any(event_type in e.events for e in config.webhooks)


def _sweep(event_type: str, before: timedelta, *, config: NotifySettings, now: datetime,
           limit: int) -> int:
    reminder = event_type == PAUSE_REMINDER
    column = "reminded_at" if reminder else "escalated_at"
    due = list(Pause.objects.nearing_expiry(now, before).filter(**{f"{column}__isnull": True})
               .order_by("expires_at").values_list("pk", "scope_key")[:limit])
    if not due:
        return 0
    # Who is told, read before any row is locked: the scopes' reviewers, or the group.
    if reminder:
        emails = {key: reviewer_addresses(config, key) for key in {key for _, key in due}}
    else:
        group = escalation_addresses(config)
        emails = {key: group for _, key in due}

    def comment(pause: Pause) -> str:
        hooks = sum(e.takes(event_type, pause.scope_key) for e in config.webhooks)
        told = [f"{len(emails[pause.scope_key])} email(s)", f"{hooks} webhook(s)"]
        whom = ("to the scope's reviewers" if reminder
                else f"to the group {config.escalate_to!r}" if config.escalate_to
                else "to no group (ESCALATE_TO is unset)")
        return f"{event_type} {whom}: {', '.join(told)}"

    mark = pauses.mark_reminded if reminder else pauses.mark_escalated
    sent_at = timezone.now()  # the deliveries' own clock: ``now`` says what is due
    with transaction.atomic():
        told = mark([pk for pk, _ in due], now=now, comment=comment)
        rows = [row for pause in told for row in deliveries(
            event_type, _nearing_data(pause, event_type, config, now), run_id=pause.run_id,
            scope_key=pause.scope_key, pause_id=pause.pk, emails=emails[pause.scope_key],
            config=config, now=sent_at)]
        store(rows)
    return len(told)


def _nearing_data(pause: Pause, event_type: str, config: NotifySettings, now: datetime
                  ) -> dict[str, Any]:
    """``pause_data`` and what a reminder or an escalation adds: the seconds left, who
    claimed it, and for an escalation the group told."""
    holder = pause.claimant_at(now)
    data = {**pause_data(pause, config),
            "seconds_left": max(0, int((pause.expires_at - now).total_seconds())),
            "claimed_by": holder.get_username() if holder is not None else None}
    if event_type == PAUSE_ESCALATED:
        data["escalated_to"] = config.escalate_to
    return data
