"""``make demo`` as a newcomer meets it: its home page, its emails, a turn to watch.

The embedded mode's tests start the server's in-process Celery worker and beat
(``example_project.embedded``) in this process, as ``example_project.asgi``
does, over the in-memory broker; they need no services.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from io import StringIO
from typing import Any

import pytest
from django.core import mail
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from example_project.agents import SlowRefundAgent
from example_project.celery import app
from example_project.embedded import start_embedded_worker_if_needed, stop_embedded_worker
from example_project.shop.management.commands.seed_demo import seed_users
from example_project.shop.models import Refund
from symfonic_django import pauses
from symfonic_django.models import (
    DeliveryStatus,
    NotificationDelivery,
    Pause,
    PauseStatus,
    RunStatus,
    TurnEvent,
)
from symfonic_django.turns import execute_run

from ..conftest import paused_run

pytestmark = pytest.mark.django_db(transaction=True)

INBOX = "admin:symfonic_django_pause_inbox"


def wait_for(check: Callable[[], Any], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(0.05)


# --- the home page -------------------------------------------------------------------------

def test_the_site_root_redirects_to_the_reviewers_inbox():
    response = Client().get("/")
    assert (response.status_code, response["Location"]) == (302, reverse(INBOX))
    assert reverse("home") == "/"


def test_the_admins_view_site_link_lands_a_reviewer_on_the_inbox():
    seed_users()
    client = Client()
    client.login(username="alice", password="alice-demo-pw")
    assert '<a href="/">View site</a>' in client.get(reverse("admin:index")).content.decode()
    landed = client.get("/", follow=True)
    assert landed.status_code == 200
    assert landed.redirect_chain == [(reverse(INBOX), 302)]


# --- the embedded mode runs the beat's work ---------------------------------------------------

def test_the_embedded_mode_emails_the_pauses_seeded_before_it_started():
    call_command("seed_demo", "--json", stdout=StringIO())
    # seed_demo ran in a process of its own, whose in-memory broker ended with it: its
    # messages are lost, the deliveries stay pending in the database.
    app.control.purge()
    seeded = NotificationDelivery.objects.filter(status=DeliveryStatus.PENDING)
    assert seeded.count() == 4 and mail.outbox == []

    assert start_embedded_worker_if_needed()
    try:
        wait_for(lambda: not seeded.exists(), "the seeded deliveries to be sent")
    finally:
        stop_embedded_worker()
    assert set(NotificationDelivery.objects.values_list("status", flat=True)) == {
        DeliveryStatus.DELIVERED}
    assert sorted(message.to[0] for message in mail.outbox) == [
        "alice@example.com"] * 3 + ["bob@example.com"]
    assert all("Approval waiting: Refund" in message.subject for message in mail.outbox)


def test_the_embedded_beat_expires_pauses_at_start_and_then_on_its_schedule(monkeypatch, tenants):
    # The example's schedule, but the expiry every half second: a test does not wait 30 s.
    monkeypatch.setitem(app.conf, "beat_schedule", {
        "symfonic-expire-pauses": {"task": "symfonic_django.expire_pauses", "schedule": 0.5}})
    past = timezone.now() - timedelta(seconds=1)
    _, before = paused_run("echo", {})
    Pause.objects.filter(pk=before.pk).update(expires_at=past)
    _, later = paused_run("echo", {})

    def status(pause: Pause) -> str:
        return Pause.objects.values_list("status", flat=True).get(pk=pause.pk)

    assert start_embedded_worker_if_needed()
    try:
        # The schedule's first run happens at start...
        wait_for(lambda: status(before) == PauseStatus.EXPIRED, "the expiry at start")
        assert status(later) == PauseStatus.PENDING
        # ...and the next ones on the beat's own schedule, in this process.
        Pause.objects.filter(pk=later.pk).update(expires_at=timezone.now())
        wait_for(lambda: status(later) == PauseStatus.EXPIRED, "the beat's expiry", timeout=10)
    finally:
        stop_embedded_worker()


# --- a turn worth watching -----------------------------------------------------------------

def test_slow_refund_streams_its_confirmation_over_seconds_and_refunds_once(tenants):
    _, pause = paused_run("slow_refund", {"order_id": "A-1", "amount": 42})
    continuation = pauses.approve(pause.pk).continuation
    assert execute_run(continuation.pk) == RunStatus.COMPLETED

    deltas = list(TurnEvent.objects.filter(run=continuation, type="message.delta")
                  .order_by("seq").values_list("created_at", "data"))
    spread = deltas[-1][0] - deltas[0][0]
    assert spread >= timedelta(seconds=2)
    said = "".join(data["text"] for _, data in deltas)
    assert said == "".join(SlowRefundAgent(None).confirmation({"order_id": "A-1", "amount": 42}))
    assert said.startswith("Refund of 42 on order A-1 is done.")
    refunds = Refund.objects.all()
    assert [(r.order_id, r.amount, r.run_id) for r in refunds] == [
        ("A-1", Decimal("42.00"), continuation.pk)]


def test_the_showcase_printout_says_where_to_watch_the_slow_refund():
    out = StringIO()
    call_command("seed_demo", "--pauses", "0", "--showcase", stdout=out)
    (watch,) = Pause.objects.filter(run__agent="slow_refund", status=PauseStatus.PENDING)
    assert (f"pending pause {watch.pk} (acme; approval: Refund 42 on order ACME-"
            in out.getvalue())
    assert ("  slow_refund: approve it and the admin shows its continuation streaming in the "
            f"live viewer, /admin/symfonic/runs/{watch.run_id}/live/\n") in out.getvalue()
