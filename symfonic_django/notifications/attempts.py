"""One attempt of a delivery, once per task run.

A conditional UPDATE claims the attempt (so a duplicate message does nothing), the
email is sent or the webhook POSTed, and the outcome is stored as a
``DeliveryAttempt``. A failure is retried with exponential backoff until
``MAX_ATTEMPTS``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from ..models import DeliveryAttempt, DeliveryChannel, NotificationDelivery
from .machine import MACHINE
from .sending import DeliveryError, post_webhook, send_email
from .settings import NotifySettings, notify_settings

#: How much of an error an attempt keeps.
ERROR_CHARS = 2000


@dataclass(frozen=True)
class Outcome:
    """What one call of ``attempt`` did: ``result`` is ``delivered``, ``retrying``,
    ``failed`` or ``skipped`` (not due, or another attempt has it); ``retry_in`` is the
    seconds until the next attempt when ``retrying``."""

    result: str
    retry_in: float | None = None



def attempt(delivery_id: Any) -> Outcome:
    """Make the delivery's next attempt, if it is due, and store how it went."""
    config = notify_settings()
    now = timezone.now()
    with transaction.atomic():
        # The claim: of any number of messages for this attempt, one moves it.
        if not MACHINE.move([delivery_id], "attempt", now=now,
                            guard=Q(next_attempt_at__lte=now), attempts=F("attempts") + 1,
                            next_attempt_at=now + config.attempt_lease):
            return Outcome("skipped")
        delivery = NotificationDelivery.objects.select_related("pause").get(pk=delivery_id)
        row = DeliveryAttempt.objects.create(delivery=delivery, number=delivery.attempts,
                                             started_at=now)
    error, response_status = "", None
    try:
        if delivery.channel == DeliveryChannel.EMAIL:
            send_email(delivery, config)
        else:
            response_status = post_webhook(delivery, config)
    except DeliveryError as exc:
        error, response_status = str(exc), exc.response_status
    except Exception as exc:  # noqa: BLE001  (an SMTP or template error is this attempt's outcome)
        error = f"{type(exc).__name__}: {exc}"
    return _record(delivery, row, error=error[:ERROR_CHARS], response_status=response_status,
                   config=config)


def _record(delivery: NotificationDelivery, row: DeliveryAttempt, *, error: str,
            response_status: int | None, config: NotifySettings) -> Outcome:
    """Store the attempt's outcome and move the delivery on, unless a later attempt has it."""
    now = timezone.now()
    mine = Q(attempts=row.number)  # a later attempt (this one outlived its lease) has the say
    with transaction.atomic():
        DeliveryAttempt.objects.filter(pk=row.pk).update(
            finished_at=now, ok=not error, response_status=response_status, error=error)
        if not error:
            moved = MACHINE.move([delivery.pk], "deliver", now=now, guard=mine,
                                 delivered_at=now, last_error="", next_attempt_at=None)
            return Outcome("delivered" if moved else "skipped")
        if row.number >= delivery.max_attempts:
            moved = MACHINE.move([delivery.pk], "give_up", now=now, guard=mine,
                                 last_error=error, next_attempt_at=None)
            return Outcome("failed" if moved else "skipped")
        wait = config.backoff(row.number)
        moved = MACHINE.move([delivery.pk], "retry", now=now, guard=mine, last_error=error,
                             next_attempt_at=now + wait)
        return Outcome("retrying", wait.total_seconds()) if moved else Outcome("skipped")
