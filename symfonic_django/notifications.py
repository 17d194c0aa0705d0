"""Email and signed webhooks about pauses and runs, sent from the app's signals.

What is told, and to whom (``SYMFONIC["NOTIFY"]``, see ``conf.NOTIFY_DEFAULTS``):

- ``pause.requested``: an email to each reviewer of the pause's scope
  (``REVIEWER_EMAILS``), and a webhook to each endpoint that takes it;
- ``pause.answered``, ``pause.expired``, ``run.completed``, ``run.failed``: webhooks;
- ``pause.reminder`` (``REMIND_BEFORE`` its expiry, to the scope's reviewers) and
  ``pause.escalated`` (``ESCALATE_BEFORE`` it, to the members of the ``ESCALATE_TO``
  group): email and webhook, once per pause each, from the ``send_reminders`` sweep
  (a beat task and ``manage.py symfonic_remind``), not from a signal.

The receivers below only write one ``NotificationDelivery`` row per target and
send the delivery task by name (``DELIVER_TASK``, in ``tasks.py``) once the
rows commit. The signals arrive after the transition committed, through
``send_robust``: a receiver that fails is logged and the transition stands.

A delivery is attempted by ``attempt()``, once per task run: a conditional
UPDATE claims the attempt (so a duplicate message does nothing), the email is
sent or the webhook POSTed, and the outcome is stored as a ``DeliveryAttempt``.
A failure is retried with exponential backoff until ``MAX_ATTEMPTS``. The
delivery's own state machine, every write of its ``status``::

    pending   --attempt-->   pending     (claims one attempt: attempts + 1)
    pending   --deliver-->   delivered
    pending   --retry-->     pending     (next_attempt_at: now + backoff)
    pending   --give_up-->   failed      (the last allowed attempt failed)
    delivered --redeliver--> pending     (a person asked, audited: one more attempt)
    failed    --redeliver--> pending

Webhooks follow the Standard Webhooks specification: the body is
``{"type", "timestamp", "data"}``, signed with the endpoint's ``whsec_``
secret in ``webhook-id``, ``webhook-timestamp`` and ``webhook-signature``.
``webhook-id`` is the delivery's id, the same on every attempt, so a
receiver drops a repeat (delivery is at least once).

A pause token is a bearer credential for answering (docs/design.md section 6, "Who
holds a token"). No notification carries one unless a setting asks
(``INCLUDE_TOKEN`` for email, an endpoint's ``INCLUDE_TOKEN``), and then
only ``pause.requested`` or ``pause.reminder`` of a pause still pending (their
emails go to the scope's reviewers); never ``pause.escalated``, whose group
need not review the scope. A token is minted at each attempt, never stored. Like ``delivery``, this is a surface that delivers
events, so it sits beside it in the layers: above the pause state machine
(``pauses.token_for``), below the tasks and the admin that call it.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from celery import current_app
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.mail import EmailMultiAlternatives
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import F, Q
from django.dispatch import receiver
from django.template.loader import render_to_string
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.module_loading import import_string
from django.utils.text import Truncator
from standardwebhooks import Webhook

from . import hitl, pauses, signals
from .conf import NOTIFY_DEFAULTS, settings
from .exceptions import NotRedeliverable
from .models import (
    AnsweredVia,
    DeliveryAttempt,
    DeliveryChannel,
    DeliveryStatus,
    NotificationDelivery,
    Pause,
    PauseKind,
    Redelivery,
    Run,
)

log = logging.getLogger(__name__)

#: The Celery task that makes one attempt (it lives in ``tasks.py``, above this module).
DELIVER_TASK = "symfonic_django.deliver_notification"

PAUSE_REQUESTED = "pause.requested"
PAUSE_ANSWERED = "pause.answered"
PAUSE_EXPIRED = "pause.expired"
RUN_COMPLETED = "run.completed"
RUN_FAILED = "run.failed"
PAUSE_REMINDER = "pause.reminder"
PAUSE_ESCALATED = "pause.escalated"
#: Every event type a webhook endpoint may take (its ``EVENTS``; all by default).
EVENT_TYPES = (PAUSE_REQUESTED, PAUSE_ANSWERED, PAUSE_EXPIRED, RUN_COMPLETED, RUN_FAILED,
               PAUSE_REMINDER, PAUSE_ESCALATED)
#: The events that may carry a pause's token (to an endpoint or an email that asks):
#: their emails go to the reviewers of the pause's scope, who may answer it.
TOKEN_EVENTS = frozenset({PAUSE_REQUESTED, PAUSE_REMINDER})


def _templates(name: str) -> dict[str, str]:
    return {"subject": f"symfonic_django/email/{name}_subject.txt",
            "text": f"symfonic_django/email/{name}.txt",
            "html": f"symfonic_django/email/{name}.html"}


#: The templates of each event type that is emailed.
EMAIL_TEMPLATES = {PAUSE_REQUESTED: _templates("pause_requested"),
                   PAUSE_REMINDER: _templates("pause_reminder"),
                   PAUSE_ESCALATED: _templates("pause_escalated")}
USER_AGENT = "symfonic-django-webhooks"
#: How much of a pause's words a notification carries.
SUMMARY_CHARS = 200
#: How much of an error an attempt keeps.
ERROR_CHARS = 2000
#: A claimed attempt that has not finished after this many times ``TIMEOUT`` counts as lost
#: (its worker died): the delivery is due again.
ATTEMPT_LEASE_TIMEOUTS = 6
#: ``send_due`` sends again only what has been due this long: a message is then lost, not
#: merely waiting in a busy queue.
SEND_DUE_GRACE = timedelta(minutes=5)
#: Deliveries one ``send_due`` call sends at most.
BATCH = 500

PENDING, DELIVERED, FAILED = (DeliveryStatus.PENDING, DeliveryStatus.DELIVERED,
                              DeliveryStatus.FAILED)


@dataclass(frozen=True)
class Edge:
    sources: frozenset[str]
    target: str


#: The allowed edges, by name. Nothing else changes a delivery's status.
EDGES: dict[str, Edge] = {
    "attempt": Edge(frozenset({PENDING}), PENDING),
    "deliver": Edge(frozenset({PENDING}), DELIVERED),
    "retry": Edge(frozenset({PENDING}), PENDING),
    "give_up": Edge(frozenset({PENDING}), FAILED),
    "redeliver": Edge(frozenset({DELIVERED, FAILED}), PENDING),
}


class DeliveryError(Exception):
    """One attempt failed; ``response_status`` is the receiver's HTTP status, if it answered."""

    def __init__(self, message: str, response_status: int | None = None) -> None:
        super().__init__(message)
        self.response_status = response_status


# --- settings ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Endpoint:
    """One webhook endpoint of ``NOTIFY["WEBHOOKS"]``."""

    name: str
    url: str
    secret: str
    events: frozenset[str]
    #: The scope keys it is told about; None: every scope.
    scopes: frozenset[str] | None
    include_token: bool

    def takes(self, event_type: str, scope_key: str) -> bool:
        return event_type in self.events and (self.scopes is None or scope_key in self.scopes)


@dataclass(frozen=True)
class NotifySettings:
    """``SYMFONIC["NOTIFY"]`` with its defaults, read afresh at each use (it is small)."""

    site_url: str
    reviewer_emails: Callable[[str], Iterable[str]] | None
    from_email: str | None
    include_token: bool
    webhooks: tuple[Endpoint, ...]
    max_attempts: int
    retry_backoff: float
    retry_backoff_max: float
    timeout: float
    #: How long before a pause's expiry its reminder and its escalation go out (None: never),
    #: and the group whose members are emailed the escalation.
    remind_before: timedelta | None = None
    escalate_before: timedelta | None = None
    escalate_to: str | None = None

    def endpoint(self, name: str) -> Endpoint | None:
        return next((e for e in self.webhooks if e.name == name), None)

    def backoff(self, attempts: int) -> timedelta:
        """How long after its ``attempts``-th failed attempt a delivery is tried again."""
        return timedelta(seconds=min(self.retry_backoff_max,
                                     self.retry_backoff * 2 ** (attempts - 1)))

    @property
    def attempt_lease(self) -> timedelta:
        return timedelta(seconds=self.timeout * ATTEMPT_LEASE_TIMEOUTS)


def notify_settings() -> NotifySettings:
    """The notification settings (validated at startup by the system checks)."""
    given = {**NOTIFY_DEFAULTS, **(settings.NOTIFY or {})}
    emails = given["REVIEWER_EMAILS"]
    return NotifySettings(
        site_url=str(given["SITE_URL"] or "").rstrip("/"),
        reviewer_emails=import_string(emails) if isinstance(emails, str) else emails,
        from_email=given["FROM_EMAIL"],
        include_token=bool(given["INCLUDE_TOKEN"]),
        webhooks=tuple(
            Endpoint(name=hook["NAME"], url=hook["URL"], secret=hook["SECRET"],
                     events=frozenset(hook.get("EVENTS") or EVENT_TYPES),
                     scopes=(frozenset(hook["SCOPES"]) if hook.get("SCOPES") is not None
                             else None),
                     include_token=bool(hook.get("INCLUDE_TOKEN", False)))
            for hook in given["WEBHOOKS"]),
        max_attempts=int(given["MAX_ATTEMPTS"]),
        retry_backoff=float(given["RETRY_BACKOFF"]),
        retry_backoff_max=float(given["RETRY_BACKOFF_MAX"]),
        timeout=float(given["TIMEOUT"]),
        remind_before=_seconds(given["REMIND_BEFORE"]),
        escalate_before=_seconds(given["ESCALATE_BEFORE"]),
        escalate_to=given["ESCALATE_TO"] or None,
    )


def _seconds(value: float | None) -> timedelta | None:
    return None if value is None else timedelta(seconds=value)


# --- what is said --------------------------------------------------------------------------

def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _link(config: NotifySettings, view: str, pk: Any) -> str | None:
    """The absolute URL of an admin page (relative without ``SITE_URL``; check W101)."""
    try:
        path = reverse(view, args=[pk])
    except NoReverseMatch:  # the project does not mount the admin
        return None
    return f"{config.site_url}{path}"


def summary(pause: Pause) -> str:
    """One line: each proposed action's description (or name and arguments), or the question."""
    if pause.kind == PauseKind.APPROVAL and isinstance(pause.prompt, dict):
        parts = []
        for action in pause.prompt.get("action_requests") or []:
            description = action.get("description")
            if isinstance(description, str) and description.strip():
                parts.append(description)
            else:
                args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}"
                                 for k, v in (action.get("args") or {}).items())
                parts.append(f"{action.get('name')}({args})")
        text = "; ".join(parts)
    else:
        text = hitl.question_text(pause.prompt)
    return Truncator(" ".join(text.split())).chars(SUMMARY_CHARS)


def pause_data(pause: Pause, config: NotifySettings) -> dict[str, Any]:
    """What every pause event says about its pause (no token: see ``_with_token``)."""
    return {
        "pause_id": str(pause.pk), "run_id": str(pause.run_id),
        "root_run_id": str(pause.root_run_id), "scope": pause.scope_key, "kind": pause.kind,
        "status": pause.status, "summary": summary(pause),
        "created_at": _iso(pause.created_at), "expires_at": _iso(pause.expires_at),
        "review_url": _link(config, "admin:symfonic_django_pause_change", pause.pk),
    }


def run_data(run: Run, config: NotifySettings) -> dict[str, Any]:
    """What every run event says about its run (its output is fetched with the API)."""
    return {
        "run_id": str(run.pk), "root_run_id": run.root_run_id, "scope": run.scope_key,
        "agent": run.agent, "status": run.status,
        "review_url": _link(config, "admin:symfonic_django_run_change", run.pk),
    }


# --- the receivers: one delivery row per target ------------------------------------------

@receiver(signals.pause_requested, dispatch_uid="symfonic_django.notifications.requested")
def _pause_requested(sender: Any, pause: Pause, **arguments: Any) -> None:
    config = notify_settings()
    announce(PAUSE_REQUESTED, pause_data(pause, config), run_id=pause.run_id,
             scope_key=pause.scope_key, pause_id=pause.pk, config=config)


@receiver(signals.pause_answered, dispatch_uid="symfonic_django.notifications.answered")
def _pause_answered(sender: Any, pause: Pause, decision: Any, continuation: Run | None,
                    **arguments: Any) -> None:
    config = notify_settings()
    if not _has_webhooks(config, PAUSE_ANSWERED, pause.scope_key):
        return
    data = {**pause_data(pause, config), "decision": decision.action,
            "answered_by": decision.actor_label, "answered_via": pause.answered_via,
            "continuation_run_id": str(continuation.pk) if continuation else None}
    announce(PAUSE_ANSWERED, data, run_id=pause.run_id, scope_key=pause.scope_key,
             pause_id=pause.pk, config=config)


@receiver(signals.pause_expired, dispatch_uid="symfonic_django.notifications.expired")
def _pause_expired(sender: Any, pause: Pause, continuation: Run | None,
                   **arguments: Any) -> None:
    config = notify_settings()
    if not _has_webhooks(config, PAUSE_EXPIRED, pause.scope_key):
        return
    data = {**pause_data(pause, config),
            "continuation_run_id": str(continuation.pk) if continuation else None}
    announce(PAUSE_EXPIRED, data, run_id=pause.run_id, scope_key=pause.scope_key,
             pause_id=pause.pk, config=config)


@receiver(signals.run_completed, dispatch_uid="symfonic_django.notifications.completed")
def _run_completed(sender: Any, run: Run, **arguments: Any) -> None:
    config = notify_settings()
    if _has_webhooks(config, RUN_COMPLETED, run.scope_key):
        announce(RUN_COMPLETED, run_data(run, config), run_id=run.pk, scope_key=run.scope_key,
                 config=config)


@receiver(signals.run_failed, dispatch_uid="symfonic_django.notifications.failed")
def _run_failed(sender: Any, run: Run, code: str, message: str, **arguments: Any) -> None:
    config = notify_settings()
    if _has_webhooks(config, RUN_FAILED, run.scope_key):
        data = {**run_data(run, config), "error": {"code": code, "message": message}}
        announce(RUN_FAILED, data, run_id=run.pk, scope_key=run.scope_key, config=config)


def _has_webhooks(config: NotifySettings, event_type: str, scope_key: str) -> bool:
    return any(e.takes(event_type, scope_key) for e in config.webhooks)


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
    rows = _deliveries(event_type, data, run_id=run_id, scope_key=scope_key,
                       pause_id=pause_id, emails=emails, config=config, now=timezone.now())
    return _store(rows)


def _deliveries(event_type: str, data: dict[str, Any], *, run_id: Any, scope_key: str,
                pause_id: Any, emails: list[str], config: NotifySettings, now: datetime
                ) -> list[NotificationDelivery]:
    """The unsaved deliveries of one event: to each endpoint that takes it, and ``emails``."""
    targets = [(DeliveryChannel.WEBHOOK, e.name) for e in config.webhooks
               if e.takes(event_type, scope_key)]
    targets += [(DeliveryChannel.EMAIL, address) for address in emails]
    payload = {"type": event_type, "timestamp": _iso(now), "data": data}
    return [NotificationDelivery(channel=channel, target=target, event_type=event_type,
                                 payload=payload, scope_key=scope_key, run_id=run_id,
                                 pause_id=pause_id, max_attempts=config.max_attempts,
                                 next_attempt_at=now, created_at=now)
            for channel, target in targets]


def _store(rows: list[NotificationDelivery]) -> list[NotificationDelivery]:
    """Write ``rows`` in one statement; each is sent to the workers once they commit."""
    if not rows:
        return []
    with transaction.atomic():
        NotificationDelivery.objects.bulk_create(rows)
        transaction.on_commit(lambda: _send_all(rows))
    return rows


def _send_all(rows: list[NotificationDelivery]) -> None:
    for row in rows:
        _send(row.pk)


def _send(delivery_id: Any) -> None:
    """Send the delivery task by name; a broker that refuses is logged (``send_due`` resends)."""
    try:
        current_app.send_task(DELIVER_TASK, args=[str(delivery_id)])
    except Exception:
        log.exception("could not send notification %s; it is sent again once overdue",
                      delivery_id)


# --- one attempt ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Outcome:
    """What one call of ``attempt`` did: ``result`` is ``delivered``, ``retrying``,
    ``failed`` or ``skipped`` (not due, or another attempt has it); ``retry_in`` is the
    seconds until the next attempt when ``retrying``."""

    result: str
    retry_in: float | None = None


def _move(delivery_id: Any, edge: str, *, now: datetime, guard: Q | None = None,
          **changes: Any) -> int:
    """Take ``edge`` if the delivery is at one of its sources (and matches ``guard``).

    The one place a delivery's status is written.
    """
    step = EDGES[edge]
    matching = NotificationDelivery.objects.filter(pk=delivery_id, status__in=step.sources)
    if guard is not None:
        matching = matching.filter(guard)
    return matching.update(status=step.target, updated_at=now, **changes)


def attempt(delivery_id: Any) -> Outcome:
    """Make the delivery's next attempt, if it is due, and store how it went."""
    config = notify_settings()
    now = timezone.now()
    with transaction.atomic():
        # The claim: of any number of messages for this attempt, one moves it.
        if not _move(delivery_id, "attempt", now=now, guard=Q(next_attempt_at__lte=now),
                     attempts=F("attempts") + 1, next_attempt_at=now + config.attempt_lease):
            return Outcome("skipped")
        delivery = NotificationDelivery.objects.select_related("pause").get(pk=delivery_id)
        row = DeliveryAttempt.objects.create(delivery=delivery, number=delivery.attempts,
                                             started_at=now)
    error, response_status = "", None
    try:
        if delivery.channel == DeliveryChannel.EMAIL:
            _send_email(delivery, config)
        else:
            response_status = _post_webhook(delivery, config)
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
            moved = _move(delivery.pk, "deliver", now=now, guard=mine, delivered_at=now,
                          last_error="", next_attempt_at=None)
            return Outcome("delivered" if moved else "skipped")
        if row.number >= delivery.max_attempts:
            moved = _move(delivery.pk, "give_up", now=now, guard=mine, last_error=error,
                          next_attempt_at=None)
            return Outcome("failed" if moved else "skipped")
        wait = config.backoff(row.number)
        moved = _move(delivery.pk, "retry", now=now, guard=mine, last_error=error,
                      next_attempt_at=now + wait)
        return Outcome("retrying", wait.total_seconds()) if moved else Outcome("skipped")


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


def _send_email(delivery: NotificationDelivery, config: NotifySettings) -> None:
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


def _post_webhook(delivery: NotificationDelivery, config: NotifySettings) -> int:
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


# --- redelivery and the sweep --------------------------------------------------------------

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
        if not _move(delivery.pk, "redeliver", now=now, max_attempts=delivery.attempts + 1,
                     next_attempt_at=now):
            raise NotRedeliverable("The notification changed while it was being redelivered.")
        user = actor if getattr(actor, "pk", None) is not None else None
        label = actor.get_username() if hasattr(actor, "get_username") else str(actor or "")
        Redelivery.objects.create(delivery=delivery, actor=user, actor_label=label or via,
                                  via=via, comment=comment, previous_status=delivery.status,
                                  attempts_before=delivery.attempts, created_at=now)
        transaction.on_commit(lambda: _send(delivery_id))
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
        _send(delivery_id)
    return len(overdue)


# --- reminders and escalations: the sweep ---------------------------------------------

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
        rows = [row for pause in told for row in _deliveries(
            event_type, _nearing_data(pause, event_type, config, now), run_id=pause.run_id,
            scope_key=pause.scope_key, pause_id=pause.pk, emails=emails[pause.scope_key],
            config=config, now=sent_at)]
        _store(rows)
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
