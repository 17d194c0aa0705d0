"""The notification settings: ``SYMFONIC["NOTIFY"]`` as ``conf.settings.NOTIFY`` hands it
out (each key declared in ``conf.NOTIFY_SETTINGS``, defaults filled in, the reviewer-email
callable imported, validated at startup by the checks), in the shape the senders use."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta

from ..conf import settings
from .types import EVENT_TYPES

#: A claimed attempt that has not finished after this many times ``TIMEOUT`` counts as lost
#: (its worker died): the delivery is due again.
ATTEMPT_LEASE_TIMEOUTS = 6


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
    """``SYMFONIC["NOTIFY"]`` with its defaults, in the senders' terms."""

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
    given = settings.NOTIFY
    return NotifySettings(
        site_url=str(given["SITE_URL"] or "").rstrip("/"),
        reviewer_emails=given["REVIEWER_EMAILS"],
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
