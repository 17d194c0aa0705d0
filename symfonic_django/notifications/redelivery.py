"""Delivering a notification again: a person's redelivery (audited), and the sweep that
sends again what a lost message or a dead worker left due."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from ..exceptions import NotRedeliverable
from ..models import AnsweredVia, NotificationDelivery, Redelivery
from .machine import EDGES, MACHINE, PENDING
from .outbox import BATCH, send

#: ``send_due`` sends again only what has been due this long: a message is then lost, not
#: merely waiting in a busy queue.
SEND_DUE_GRACE = timedelta(minutes=5)


def redeliver(delivery_id: Any, *, actor: Any = None, via: str = AnsweredVia.PYTHON,
              comment: str = "") -> NotificationDelivery:
    """Attempt a delivered or failed notification once more (audited as a ``Redelivery``).

    Raises ``NotRedeliverable``, changing nothing, for a pending or unknown delivery.
    """
    now = timezone.now()
    with transaction.atomic():
        delivery = NotificationDelivery.objects.select_for_update().filter(pk=delivery_id).first()
        if delivery is None or delivery.status not in EDGES["redeliver"].sources:
            state = "unknown" if delivery is None else delivery.status
            raise NotRedeliverable("Only a delivered or failed notification can be delivered "
                                   f"again; this one is {state}.")
        if not MACHINE.move([delivery.pk], "redeliver", now=now,
                            max_attempts=delivery.attempts + 1, next_attempt_at=now):
            raise NotRedeliverable("The notification changed while it was being redelivered.")
        user = actor if getattr(actor, "pk", None) is not None else None
        label = actor.get_username() if hasattr(actor, "get_username") else str(actor or "")
        Redelivery.objects.create(delivery=delivery, actor=user, actor_label=label or via,
                                  via=via, comment=comment, previous_status=delivery.status,
                                  attempts_before=delivery.attempts, created_at=now)
        transaction.on_commit(lambda: send(delivery_id))
    delivery.refresh_from_db()
    return delivery


def send_due(*, now: datetime | None = None) -> int:
    """Send again the pending deliveries overdue by ``SEND_DUE_GRACE`` (their message was
    lost, or their worker died mid-attempt); a duplicate message is skipped by the claim."""
    now = now or timezone.now()
    overdue = list(NotificationDelivery.objects
                   .filter(status=PENDING, next_attempt_at__lte=now - SEND_DUE_GRACE)
                   .order_by("next_attempt_at").values_list("pk", flat=True)[:BATCH])
    for delivery_id in overdue:
        send(delivery_id)
    return len(overdue)
