"""Notifications (``symfonic_django.notifications``): who is told what, signed, retried, stored.

Transitions run as the app runs them (a turn in-process, an answer, the
expirer); the tests are transactional, so the signals arrive on commit as in
production. Each delivery is then attempted in-process with
``notifications.attempt``, the body of the Celery task; emails land in
Django's locmem outbox and webhooks on a real local HTTP receiver, whose
signature is verified with ``standardwebhooks``.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from standardwebhooks import Webhook

from symfonic_django import notifications, pauses
from symfonic_django.models import (
    DeliveryAttempt,
    DeliveryStatus,
    NotificationDelivery,
    Pause,
    Redelivery,
    Run,
    RunStatus,
)
from symfonic_django.notifications import NotRedeliverable
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run

from ..conftest import paused_run
from .conftest import SECRET, SITE_URL, Receiver, endpoint

pytestmark = pytest.mark.django_db(transaction=True)

REVIEWER_EMAILS = "tests.testapp.scopes.reviewer_emails"


def deliveries(event_type: str | None = None, **filters: Any) -> list[NotificationDelivery]:
    rows = NotificationDelivery.objects.filter(**filters).order_by("created_at", "target")
    return list(rows.filter(event_type=event_type) if event_type else rows)


def attempt_all(event_type: str | None = None) -> list[str]:
    """One attempt of each pending delivery (of ``event_type``); their results."""
    return [notifications.attempt(d.pk).result
            for d in deliveries(event_type, status=DeliveryStatus.PENDING)]


def make_due(delivery: NotificationDelivery) -> None:
    """Time passes: the delivery's next attempt is due now."""
    NotificationDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())


def review_url(pause: Pause) -> str:
    return SITE_URL + reverse("admin:symfonic_django_pause_change", args=[pause.pk])


def verified(received: Any) -> dict[str, Any]:
    """The payload of one received webhook, after ``standardwebhooks`` verified it."""
    payload: dict[str, Any] = Webhook(SECRET).verify(received.body, received.headers)
    return payload


# --- email ----------------------------------------------------------------------------------

def test_a_requested_pause_emails_each_reviewer_of_its_scope_a_link_and_no_token(
        notify: Any, reviewers: Any) -> None:
    notify(REVIEWER_EMAILS=REVIEWER_EMAILS)
    _, pause = paused_run("echo", scope="acme")

    assert attempt_all() == ["delivered"]
    # alice answers acme; bob reviews globex; carol is in acme but may not answer.
    assert [m.to for m in mail.outbox] == [["alice@example.com"]]
    message = mail.outbox[0]
    html = message.alternatives[0][0]
    assert "[acme]" in message.subject and "Approval waiting" in message.subject
    assert review_url(pause) in message.body and f'href="{review_url(pause)}"' in html
    token = pauses.token_for(pause)
    assert token not in message.subject + message.body + html
    assert message.extra_headers["X-Symfonic-Delivery"] == str(deliveries()[0].pk)


def test_one_email_per_reviewer_each_addressed_to_that_reviewer_alone(
        notify: Any, settings: Any, reviewers: Any) -> None:
    def two_reviewers(scope_key: str) -> list[str]:
        return ["alice@example.com", "ALICE@example.com", "dave@example.com", "not an address"]

    notify(REVIEWER_EMAILS=two_reviewers)
    paused_run("echo", scope="acme")
    assert sorted(d.target for d in deliveries()) == ["alice@example.com", "dave@example.com"]
    assert attempt_all() == ["delivered", "delivered"]
    assert sorted(m.to[0] for m in mail.outbox) == ["alice@example.com", "dave@example.com"]
    assert all(len(m.to) == 1 and not m.cc and not m.bcc for m in mail.outbox)


def test_with_include_token_the_email_carries_the_pause_token(
        notify: Any, reviewers: Any) -> None:
    notify(REVIEWER_EMAILS=REVIEWER_EMAILS, INCLUDE_TOKEN=True)
    _, pause = paused_run("echo", scope="acme")
    attempt_all()
    token = pauses.token_for(pause)
    assert token in mail.outbox[0].body and token in mail.outbox[0].alternatives[0][0]
    assert token not in json.dumps(deliveries()[0].payload)  # never stored


def test_a_pause_answered_before_its_email_went_out_is_sent_without_a_token(
        notify: Any, reviewers: Any) -> None:
    notify(REVIEWER_EMAILS=REVIEWER_EMAILS, INCLUDE_TOKEN=True)
    _, pause = paused_run("echo", scope="acme")
    pauses.approve(pause.pk)
    attempt_all()
    assert pauses.token_for(pause) not in mail.outbox[0].body


def test_without_notification_settings_nothing_is_written_or_sent(reviewers: Any,
                                                                 settings: Any) -> None:
    settings.SYMFONIC = {**settings.SYMFONIC, "NOTIFY": {}}
    _, pause = paused_run("echo", scope="acme")
    pauses.approve(pause.pk)
    assert deliveries() == [] and mail.outbox == []


def test_a_notification_that_raises_never_breaks_the_transition(
        notify: Any, reviewers: Any, caplog: Any) -> None:
    def broken(scope_key: str) -> list[str]:
        raise RuntimeError("the reviewer directory is down")

    notify(REVIEWER_EMAILS=broken)
    run, pause = paused_run("echo", scope="acme")
    assert run.status == RunStatus.PAUSED and pause.is_pending
    assert deliveries() == []
    assert "the reviewer directory is down" in caplog.text


# --- webhooks -------------------------------------------------------------------------------

def _requested() -> tuple[Run, Pause]:
    return paused_run("echo", scope="acme")


def _answered() -> tuple[Run, Pause]:
    run, pause = paused_run("echo", scope="acme")
    pauses.approve(pause.pk, actor="reviewer-7")
    return run, pause


def _expired() -> tuple[Run, Pause]:
    run, pause = paused_run("echo", scope="acme")
    Pause.objects.filter(pk=pause.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert pauses.expire_due() == 1
    return run, pause


def _completed() -> tuple[Run, None]:
    run = start_run("noop", {}, scope="acme", dispatch=False)
    assert execute_run(run.pk) == RunStatus.COMPLETED
    return run, None


def _failed() -> tuple[Run, None]:
    run = start_run("boom", {}, scope="acme", dispatch=False)
    assert execute_run(run.pk) == RunStatus.FAILED
    return run, None


PAUSE_FIELDS = {"pause_id", "run_id", "root_run_id", "scope", "kind", "status", "summary",
                "created_at", "expires_at", "review_url"}
RUN_FIELDS = {"run_id", "root_run_id", "scope", "agent", "status", "review_url"}


@pytest.mark.parametrize("event_type, happen, fields", [
    ("pause.requested", _requested, PAUSE_FIELDS),
    ("pause.answered", _answered,
     PAUSE_FIELDS | {"decision", "answered_by", "answered_via", "continuation_run_id"}),
    ("pause.expired", _expired, PAUSE_FIELDS | {"continuation_run_id"}),
    ("run.completed", _completed, RUN_FIELDS),
    ("run.failed", _failed, RUN_FIELDS | {"error"}),
])
def test_each_event_type_is_a_signed_standard_webhook(
        notify: Any, receiver: Receiver, tenants: Any, event_type: str, happen: Any,
        fields: set[str]) -> None:
    notify(WEBHOOKS=[endpoint(receiver.url, EVENTS=[event_type])])
    run, pause = happen()

    delivery, = deliveries()
    assert attempt_all() == ["delivered"]
    got, = receiver.received
    payload = verified(got)
    assert payload == delivery.payload
    assert payload["type"] == event_type and payload["timestamp"].endswith("Z")
    data = payload["data"]
    assert set(data) == fields and data["scope"] == "acme" and data["run_id"] == str(run.pk)
    assert got.headers["webhook-id"] == f"msg_{delivery.pk.hex}"
    assert got.headers["content-type"] == "application/json"
    if pause is not None:
        assert data["pause_id"] == str(pause.pk) and data["review_url"] == review_url(pause)
        assert data["summary"] and pauses.token_for(pause) not in got.body.decode()
    if event_type == "pause.answered":
        assert data["decision"] == "approve" and data["answered_by"] == "reviewer-7"
        assert data["continuation_run_id"] == str(Run.objects.get(parent=run).pk)
    if event_type == "run.failed":
        assert data["error"]["code"] == "agent_error"


def test_a_webhook_signed_with_another_secret_does_not_verify(
        notify: Any, receiver: Receiver, tenants: Any) -> None:
    notify(WEBHOOKS=[endpoint(receiver.url)])
    _requested()
    attempt_all()
    got, = receiver.received
    other = "whsec_" + "A" * 43 + "="
    with pytest.raises(Exception, match="No matching signature"):
        Webhook(other).verify(got.body, got.headers)


def test_an_endpoint_that_asks_for_tokens_gets_one_with_pause_requested_only(
        notify: Any, receiver: Receiver, tenants: Any) -> None:
    notify(WEBHOOKS=[endpoint(receiver.url, INCLUDE_TOKEN=True)])
    _, pause = paused_run("echo", scope="acme")
    attempt_all("pause.requested")
    pauses.approve(pause.pk)
    attempt_all("pause.answered")

    requested, answered = (verified(r) for r in receiver.received)
    assert requested["type"] == "pause.requested"
    assert requested["data"]["token"] == pauses.token_for(pause)
    assert answered["type"] == "pause.answered" and "token" not in answered["data"]
    assert all("token" not in d.payload["data"] for d in deliveries())  # never stored


def test_endpoints_take_only_their_events_and_scopes(
        notify: Any, receiver: Receiver, tenants: Any) -> None:
    notify(WEBHOOKS=[
        endpoint(receiver.url, NAME="acme-pauses", EVENTS=["pause.requested"], SCOPES=["acme"]),
        endpoint(receiver.url, NAME="everything"),
    ])
    paused_run("echo", scope="acme")
    paused_run("echo", scope="globex")
    targets = sorted((d.target, d.scope_key, d.event_type) for d in deliveries())
    assert targets == [("acme-pauses", "acme", "pause.requested"),
                       ("everything", "acme", "pause.requested"),
                       ("everything", "globex", "pause.requested")]


# --- retries, attempts, redelivery -------------------------------------------------------------

def test_a_failing_receiver_is_retried_with_backoff_and_every_attempt_is_stored(
        notify: Any, receiver: Receiver, tenants: Any) -> None:
    receiver.fail_first = 3
    notify(WEBHOOKS=[endpoint(receiver.url)], MAX_ATTEMPTS=4, RETRY_BACKOFF=10)
    _requested()
    delivery, = deliveries()

    waits = []
    for _ in range(3):
        before = timezone.now()
        outcome = notifications.attempt(delivery.pk)
        assert outcome.result == "retrying"
        waits.append(outcome.retry_in)
        # Not due yet: a duplicate message does nothing.
        assert notifications.attempt(delivery.pk).result == "skipped"
        delivery.refresh_from_db()
        assert delivery.next_attempt_at >= before + timedelta(seconds=outcome.retry_in)
        assert delivery.status == DeliveryStatus.PENDING
        assert delivery.last_error == "The receiver answered HTTP 500."
        make_due(delivery)
    assert waits == [10, 20, 40]
    assert notifications.attempt(delivery.pk).result == "delivered"

    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.DELIVERED and delivery.attempts == 4
    assert delivery.last_error == "" and delivery.delivered_at is not None
    stored = list(DeliveryAttempt.objects.filter(delivery=delivery).order_by("number")
                  .values_list("number", "ok", "response_status"))
    assert stored == [(1, False, 500), (2, False, 500), (3, False, 500), (4, True, 200)]
    # The same message every time: one webhook-id, one body.
    assert len({r.headers["webhook-id"] for r in receiver.received}) == 1
    assert len({r.body for r in receiver.received}) == 1 and len(receiver.received) == 4


def test_a_delivery_is_given_up_after_its_last_attempt(
        notify: Any, receiver: Receiver, tenants: Any) -> None:
    receiver.fail_first = 99
    notify(WEBHOOKS=[endpoint(receiver.url)], MAX_ATTEMPTS=2, RETRY_BACKOFF=1)
    _requested()
    delivery, = deliveries()
    assert notifications.attempt(delivery.pk).result == "retrying"
    make_due(delivery)
    assert notifications.attempt(delivery.pk) == notifications.Outcome("failed")
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.next_attempt_at) == (
        DeliveryStatus.FAILED, 2, None)
    assert notifications.attempt(delivery.pk).result == "skipped"
    assert len(receiver.received) == 2


def test_a_redirect_is_a_failed_attempt_and_is_not_followed(
        notify: Any, receiver: Receiver, tenants: Any) -> None:
    receiver.fail_first, receiver.status_after = 0, 302
    notify(WEBHOOKS=[endpoint(receiver.url)])
    _requested()
    assert attempt_all() == ["retrying"]
    attempt, = DeliveryAttempt.objects.all()
    assert (attempt.ok, attempt.response_status) == (False, 302)


def test_an_unreachable_receiver_is_a_failed_attempt(notify: Any, tenants: Any) -> None:
    notify(WEBHOOKS=[endpoint("http://127.0.0.1:9/nothing-listens")], TIMEOUT=2)
    _requested()
    assert attempt_all() == ["retrying"]
    assert deliveries()[0].last_error.startswith("The receiver could not be reached")


def test_send_due_sends_again_what_a_lost_message_left_due(
        notify: Any, receiver: Receiver, tenants: Any) -> None:
    notify(WEBHOOKS=[endpoint(receiver.url)])
    _requested()
    assert notifications.send_due() == 0  # just created: its message is on its way
    later = timezone.now() + notifications.SEND_DUE_GRACE + timedelta(seconds=1)
    assert notifications.send_due(now=later) == 1


def test_redeliver_in_the_admin_attempts_once_more_and_is_audited(
        notify: Any, receiver: Receiver, reviewers: Any) -> None:
    receiver.fail_first = 1
    notify(WEBHOOKS=[endpoint(receiver.url)], MAX_ATTEMPTS=1)
    _requested()
    delivery, = deliveries()
    assert notifications.attempt(delivery.pk).result == "failed"

    client = Client()
    client.force_login(reviewers["admin"])
    changelist = reverse("admin:symfonic_django_notificationdelivery_changelist")
    response = client.post(changelist, {"action": "redeliver_selected",
                                        "_selected_action": [str(delivery.pk)]}, follow=True)
    assert response.status_code == 200
    assert "Redelivered 1 notification." in response.content.decode()

    delivery.refresh_from_db()
    assert (delivery.status, delivery.max_attempts) == (DeliveryStatus.PENDING, 2)
    audit, = Redelivery.objects.filter(delivery=delivery)
    assert audit.actor == reviewers["admin"] and audit.via == "admin"
    assert (audit.previous_status, audit.attempts_before) == (DeliveryStatus.FAILED, 1)
    assert notifications.attempt(delivery.pk).result == "delivered"
    assert len(receiver.received) == 2

    page = client.get(reverse("admin:symfonic_django_notificationdelivery_change",
                              args=[delivery.pk])).content.decode()
    assert "The receiver answered HTTP 500." in page and "admin on" in page


def test_a_pending_delivery_is_not_redelivered_and_nothing_changes(
        notify: Any, receiver: Receiver, tenants: Any) -> None:
    notify(WEBHOOKS=[endpoint(receiver.url)])
    _requested()
    delivery, = deliveries()
    before = NotificationDelivery.objects.filter(pk=delivery.pk).values().get()
    with pytest.raises(NotRedeliverable) as refused:
        notifications.redeliver(delivery.pk, actor="ops")
    assert refused.value.code == "not_redeliverable"
    assert NotificationDelivery.objects.filter(pk=delivery.pk).values().get() == before
    assert not Redelivery.objects.exists()


def test_reviewers_see_only_their_scopes_deliveries_and_may_not_redeliver_without_permission(
        notify: Any, receiver: Receiver, reviewers: Any) -> None:
    notify(WEBHOOKS=[endpoint(receiver.url)])
    paused_run("echo", scope="acme")
    paused_run("echo", scope="globex")
    acme, = deliveries(scope_key="acme")
    globex, = deliveries(scope_key="globex")
    client = Client()
    client.force_login(reviewers["alice"])

    listing = client.get(reverse("admin:symfonic_django_notificationdelivery_changelist"))
    assert listing.status_code == 200
    assert str(acme.pk) in listing.content.decode()
    assert str(globex.pk) not in listing.content.decode()
    change = "admin:symfonic_django_notificationdelivery_change"
    assert client.get(reverse(change, args=[acme.pk])).status_code == 200
    assert client.get(reverse(change, args=[globex.pk])).status_code == 404
    assert "redeliver_selected" not in listing.content.decode()
