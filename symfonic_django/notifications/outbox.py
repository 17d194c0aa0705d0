"""Who is told, and the delivery rows: one ``NotificationDelivery`` per target, each sent
to the workers by task name (``DELIVER_TASK``, in ``tasks.py``) once the rows commit."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from celery import current_app
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.utils import timezone

from ..models import DeliveryChannel, NotificationDelivery
from .payloads import iso
from .settings import NotifySettings, notify_settings
from .types import PAUSE_REQUESTED

log = logging.getLogger(__name__)

#: The Celery task that makes one attempt (it lives in ``tasks.py``, above this module).
DELIVER_TASK = "symfonic_django.deliver_notification"
#: What one sweep call takes at most: the deliveries ``send_due`` sends again, the pauses
#: ``send_reminders`` reminds (and as many it escalates).
BATCH = 500


def reviewer_addresses(config: NotifySettings, scope_key: str) -> list[str]:
    """The distinct, valid addresses ``REVIEWER_EMAILS`` gives for ``scope_key``."""
    if config.reviewer_emails is None:
        return []
    return _valid_addresses(config.reviewer_emails(scope_key) or (),
                            f"REVIEWER_EMAILS for scope {scope_key!r}")


def escalation_addresses(config: NotifySettings) -> list[str]:
    """The distinct, valid addresses of the active members of the ``ESCALATE_TO`` group."""
    if config.escalate_to is None:
        return []
    users = get_user_model()
    field = users.get_email_field_name()
    given = (users.objects.filter(groups__name=config.escalate_to, is_active=True)
             .exclude(**{field: ""}).order_by(field).values_list(field, flat=True))
    found = _valid_addresses(given, f"the ESCALATE_TO group {config.escalate_to!r}")
    if not found:
        log.warning("the ESCALATE_TO group %r has no active member with an email address: "
                    "escalations are emailed to nobody", config.escalate_to)
    return found


def _valid_addresses(given: Iterable[Any], source: str) -> list[str]:
    found: dict[str, str] = {}
    for value in given:
        address = str(value or "").strip()
        try:
            validate_email(address)
        except ValidationError:
            log.warning("%s gave %r, which is not an email address; it is skipped",
                        source, value)
            continue
        found.setdefault(address.lower(), address)
    return list(found.values())


def announce(event_type: str, data: dict[str, Any], *, run_id: Any, scope_key: str,
             pause_id: Any = None, config: NotifySettings | None = None
             ) -> list[NotificationDelivery]:
    """Store one delivery of ``event_type`` per target, and send each to the workers on commit.

    Targets: the endpoints that take the event and scope, and for ``pause.requested``
    the scope's reviewers' addresses. Nothing is written when there is none.
    """
    config = config or notify_settings()
    emails = reviewer_addresses(config, scope_key) if event_type == PAUSE_REQUESTED else []
    rows = deliveries(event_type, data, run_id=run_id, scope_key=scope_key,
                       pause_id=pause_id, emails=emails, config=config, now=timezone.now())
    return store(rows)


def deliveries(event_type: str, data: dict[str, Any], *, run_id: Any, scope_key: str,
                pause_id: Any, emails: list[str], config: NotifySettings, now: datetime
                ) -> list[NotificationDelivery]:
    """The unsaved deliveries of one event: to each endpoint that takes it, and ``emails``."""
    targets = [(DeliveryChannel.WEBHOOK, e.name) for e in config.webhooks
               if e.takes(event_type, scope_key)]
    targets += [(DeliveryChannel.EMAIL, address) for address in emails]
    payload = {"type": event_type, "timestamp": iso(now), "data": data}
    return [NotificationDelivery(channel=channel, target=target, event_type=event_type,
                                 payload=payload, scope_key=scope_key, run_id=run_id,
                                 pause_id=pause_id, max_attempts=config.max_attempts,
                                 next_attempt_at=now, created_at=now)
            for channel, target in targets]


def store(rows: list[NotificationDelivery]) -> list[NotificationDelivery]:
    """Write ``rows`` in one statement; each is sent to the workers once they commit."""
    if not rows:
        return []
    with transaction.atomic():
        NotificationDelivery.objects.bulk_create(rows)
        transaction.on_commit(lambda: _send_all(rows))
    return rows


def _send_all(rows: list[NotificationDelivery]) -> None:
    for row in rows:
        send(row.pk)


def send(delivery_id: Any) -> None:
    """Send the delivery task by name; a broker that refuses is logged (``send_due`` resends)."""
    try:
        current_app.send_task(DELIVER_TASK, args=[str(delivery_id)])
    except Exception:
        log.exception("could not send notification %s; it is sent again once overdue",
                      delivery_id)

