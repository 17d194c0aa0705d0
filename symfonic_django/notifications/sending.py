"""How one delivery is sent: its email through the project's email backend, or its
Standard Webhooks POST.

The body is ``{"type", "timestamp", "data"}``, signed with the endpoint's ``whsec_``
secret in ``webhook-id``, ``webhook-timestamp`` and ``webhook-signature``.
``webhook-id`` is the delivery's id, the same on every attempt, so a receiver drops a
repeat (delivery is at least once). A token goes only where a setting asks, minted
at each attempt, never stored.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from datetime import UTC, datetime
from typing import Any

from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.utils.dateparse import parse_datetime
from standardwebhooks import Webhook

from .. import pauses
from ..models import NotificationDelivery, PauseKind
from .settings import Endpoint, NotifySettings
from .types import PAUSE_ESCALATED, PAUSE_REMINDER, PAUSE_REQUESTED, TOKEN_EVENTS


def _templates(name: str) -> dict[str, str]:
    return {"subject": f"symfonic_django/email/{name}_subject.txt",
            "text": f"symfonic_django/email/{name}.txt",
            "html": f"symfonic_django/email/{name}.html"}


#: The templates of each event type that is emailed.
EMAIL_TEMPLATES = {PAUSE_REQUESTED: _templates("pause_requested"),
                   PAUSE_REMINDER: _templates("pause_reminder"),
                   PAUSE_ESCALATED: _templates("pause_escalated")}
USER_AGENT = "symfonic-django-webhooks"


class DeliveryError(Exception):
    """One attempt failed; ``response_status`` is the receiver's HTTP status, if it answered."""

    def __init__(self, message: str, response_status: int | None = None) -> None:
        super().__init__(message)
        self.response_status = response_status


def _with_token(delivery: NotificationDelivery) -> str | None:
    """A token for the delivery's pause, if it is a still pending pause's request or
    reminder (``TOKEN_EVENTS``)."""
    pause = delivery.pause
    if delivery.event_type not in TOKEN_EVENTS or pause is None or not pause.is_pending:
        return None
    return pauses.token_for(pause)


def email_message(delivery: NotificationDelivery, config: NotifySettings
                  ) -> EmailMultiAlternatives:
    """The email of a pause's request, reminder or escalation: text and HTML from the
    templates of its event type (``EMAIL_TEMPLATES``)."""
    data = delivery.payload["data"]
    templates = EMAIL_TEMPLATES[delivery.event_type]
    context = {
        "data": data,
        "kind": PauseKind(data["kind"]).label if data["kind"] in PauseKind.values else "",
        "expires_at": parse_datetime(data["expires_at"] or ""),
        "token": _with_token(delivery) if config.include_token else None,
    }
    # One line, whatever the agent wrote: a header cannot hold a line break.
    subject = " ".join(render_to_string(templates["subject"], context).split())
    message = EmailMultiAlternatives(
        subject=subject, body=render_to_string(templates["text"], context),
        from_email=config.from_email, to=[delivery.target],
        headers={"X-Symfonic-Delivery": str(delivery.pk)})
    message.attach_alternative(render_to_string(templates["html"], context), "text/html")
    return message


def send_email(delivery: NotificationDelivery, config: NotifySettings) -> None:
    # Through the project's default email backend, configured as Django documents it
    # (EMAIL_* settings, or MAILERS on Django 6.1+), its timeout (EMAIL_TIMEOUT) included.
    if email_message(delivery, config).send() != 1:
        raise DeliveryError("The email backend sent nothing.")


def webhook_id(delivery: NotificationDelivery) -> str:
    """The delivery's ``webhook-id``: the same on every attempt (the spec's idempotency key)."""
    return f"msg_{delivery.pk.hex}"


def webhook_body(delivery: NotificationDelivery, endpoint: Endpoint) -> str:
    """The JSON body POSTed to ``endpoint``: the payload, with a token only if it asks."""
    payload = delivery.payload
    token = _with_token(delivery) if endpoint.include_token else None
    if token is not None:
        payload = {**payload, "data": {**payload["data"], "token": token}}
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def signed_headers(delivery: NotificationDelivery, endpoint: Endpoint, body: str,
                   moment: datetime) -> dict[str, str]:
    """The Standard Webhooks headers of ``body`` sent at ``moment`` (an aware datetime)."""
    msg_id = webhook_id(delivery)
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(moment.timestamp())),
        "webhook-signature": Webhook(endpoint.secret).sign(msg_id, moment, body),
    }


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is a failed attempt: the signed body goes only to the configured URL."""

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> None:
        return None


_opener = urllib.request.build_opener(_RefuseRedirects)


def post_webhook(delivery: NotificationDelivery, config: NotifySettings) -> int:
    """POST the delivery to its endpoint; its HTTP status when 2xx, else ``DeliveryError``."""
    endpoint = config.endpoint(delivery.target)
    if endpoint is None:
        raise DeliveryError(f"No webhook endpoint named {delivery.target!r} is configured.")
    body = webhook_body(delivery, endpoint)
    headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT,
               **signed_headers(delivery, endpoint, body, datetime.now(UTC))}
    request = urllib.request.Request(endpoint.url, data=body.encode(), headers=headers,
                                     method="POST")
    try:
        with _opener.open(request, timeout=config.timeout) as response:
            status = int(response.status)
    except urllib.error.HTTPError as exc:
        raise DeliveryError(f"The receiver answered HTTP {exc.code}.", exc.code) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DeliveryError(f"The receiver could not be reached: {reason}") from None
    if not 200 <= status < 300:
        raise DeliveryError(f"The receiver answered HTTP {status}.", status)
    return status
