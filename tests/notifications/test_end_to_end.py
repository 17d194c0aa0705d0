"""Notifications end to end: a real Celery worker process delivers them to real servers.

A pause is requested in this process (its first turn, in-process); a
``celery -A tests.testapp worker`` process on Redis makes the deliveries:
the email to a real SMTP server (``aiosmtpd``) through Django's SMTP backend,
and the webhooks to real HTTP receivers on free ports of 127.0.0.1. One
receiver fails three times (HTTP 500) and gets the fourth attempt, through
Celery's retries with the delivery's backoff; each body is verified with
``standardwebhooks``. Only the endpoint configured for it receives the
pause's token; the email and the other webhooks hold it nowhere.
"""

from __future__ import annotations

import email
import email.policy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from django.contrib.auth import get_user_model
from django.urls import reverse
from standardwebhooks import Webhook

from symfonic_django import pauses
from symfonic_django.models import DeliveryAttempt, DeliveryStatus, NotificationDelivery
from symfonic_django.notifications import DELIVER_TASK
from tests.testapp.seed import seed_users

from ..conftest import paused_run
from ..e2e.stack import free_port, wait_for
from ..integration.conftest import Workers, celery_workers  # noqa: F401  (a fixture)
from .conftest import SECRET, SITE_URL, Receiver

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

#: Seconds before the second attempt; 0.4 and 0.8 before the third and fourth.
BACKOFF = 0.2


class Inbox:
    """An ``aiosmtpd`` handler that keeps each message as it arrived."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, list[str], bytes]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
        return "250 Message accepted for delivery"


@pytest.fixture
def smtp_server() -> Iterator[tuple[Inbox, int]]:
    inbox, port = Inbox(), free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield inbox, port
    finally:
        controller.stop()


@pytest.fixture
def receivers() -> Iterator[tuple[Receiver, Receiver]]:
    """A receiver that answers 500 three times, then 200; and one that is sent tokens."""
    failing, trusted = Receiver(fail_first=3).start(), Receiver().start()
    try:
        yield failing, trusted
    finally:
        failing.stop()
        trusted.stop()


def decoded_parts(raw: bytes) -> list[str]:
    """Every text part of a raw email, decoded from its transfer encoding."""
    message = email.message_from_bytes(raw, policy=email.policy.default)
    return [part.get_content() for part in message.walk()
            if part.get_content_maintype() == "text"]


def test_email_and_webhooks_reach_real_servers_a_failing_receiver_gets_the_fourth_attempt(
        tenants: Any, settings: Any, monkeypatch: Any, celery_workers: Workers,  # noqa: F811
        smtp_server: tuple[Inbox, int], receivers: tuple[Receiver, Receiver]) -> None:
    inbox, smtp_port = smtp_server
    failing, trusted = receivers
    notify = {
        "SITE_URL": SITE_URL,
        "REVIEWER_EMAILS": "tests.testapp.scopes.reviewer_emails",
        "RETRY_BACKOFF": BACKOFF, "RETRY_BACKOFF_MAX": 1, "MAX_ATTEMPTS": 4, "TIMEOUT": 5,
        "WEBHOOKS": [
            {"NAME": "flaky", "URL": failing.url, "SECRET": SECRET},
            {"NAME": "trusted", "URL": trusted.url, "SECRET": SECRET, "INCLUDE_TOKEN": True},
        ],
    }
    settings.SYMFONIC = {**settings.SYMFONIC, "NOTIFY": notify}
    for name, value in {"SYMFONIC_TEST_NOTIFY": json.dumps(notify),
                        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                        "EMAIL_HOST": "127.0.0.1", "EMAIL_PORT": str(smtp_port)}.items():
        monkeypatch.setenv(name, value)
    seed_users()
    get_user_model().objects.filter(username="alice").update(email="alice@example.com")
    worker = celery_workers.start("notify", settings="tests.notifications.worker_settings")

    _, pause = paused_run("refund", {"order_id": "A-1001", "amount": 42.5}, scope="acme")
    token = pauses.token_for(pause)
    rows = {d.target: d for d in NotificationDelivery.objects.filter(pause=pause)}
    assert sorted(rows) == ["alice@example.com", "flaky", "trusted"]
    # This process sent them through its own broker setting, which no worker reads: the
    # test hands them to its worker's queue, as a broker would.
    for row in rows.values():
        celery_workers.send(DELIVER_TASK, str(row.pk))

    def settled() -> bool:
        states = NotificationDelivery.objects.filter(pause=pause).values_list("status", flat=True)
        return all(state != DeliveryStatus.PENDING for state in states)

    wait_for(settled, timeout=60, what="every delivery to settle", detail=worker.log)

    # The email, on the SMTP server: to alice alone, with the link, without the token.
    (sender, recipients, raw), = inbox.messages
    assert recipients == ["alice@example.com"] and sender == "reviews@example.com"
    link = SITE_URL + reverse("admin:symfonic_django_pause_change", args=[pause.pk])
    parts = decoded_parts(raw)
    assert len(parts) == 2 and all(link in part for part in parts)  # text and HTML
    assert token.encode() not in raw and not any(token in part for part in parts)

    # The flaky receiver: three 500s, then the fourth attempt, the same signed message.
    flaky = NotificationDelivery.objects.get(pk=rows["flaky"].pk)
    assert (flaky.status, flaky.attempts) == (DeliveryStatus.DELIVERED, 4)
    assert len(failing.received) == 4
    assert {r.headers["webhook-id"] for r in failing.received} == {f"msg_{flaky.pk.hex}"}
    for received in failing.received:
        payload = Webhook(SECRET).verify(received.body, received.headers)
        assert payload["type"] == "pause.requested"
        assert payload["data"]["pause_id"] == str(pause.pk)
        assert payload["data"]["review_url"] == link and "token" not in payload["data"]
        assert token.encode() not in received.body
    attempts = list(DeliveryAttempt.objects.filter(delivery=flaky).order_by("number"))
    assert [(a.ok, a.response_status) for a in attempts] == [
        (False, 500), (False, 500), (False, 500), (True, 200)]
    gaps = [(b.started_at - a.started_at).total_seconds()
            for a, b in zip(attempts, attempts[1:], strict=False)]
    assert all(gap >= wait * 0.9 for gap, wait in zip(gaps, (0.2, 0.4, 0.8), strict=True)), gaps

    # Only the endpoint configured for it is sent the token.
    (received,) = trusted.received
    assert Webhook(SECRET).verify(received.body, received.headers)["data"]["token"] == token
    assert NotificationDelivery.objects.get(pk=rows["trusted"].pk).status == "delivered"
    assert all(token not in json.dumps(row.payload)
               for row in NotificationDelivery.objects.all())  # never stored
