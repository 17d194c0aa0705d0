"""The ``SYMFONIC`` settings dict, read through one lazy, validated object.

Modelled on DRF's ``api_settings``: defaults in one place, dotted paths
imported once and cached, unknown keys refused (by a system check, see
``checks.py``), and a reload on ``setting_changed`` so ``override_settings``
works in tests.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings as django_settings
from django.core.signals import setting_changed
from django.utils.module_loading import import_string

from .exceptions import UnknownAgent

SETTING_NAME = "SYMFONIC"

#: Returned by a ``REVIEWER_SCOPES`` callable for a user who may see every scope.
ALL_SCOPES = "__all__"

DEFAULTS: dict[str, Any] = {
    # name -> dotted path of ``agent_for(scope) -> Agent`` (sync or async).
    "AGENTS": {},
    # ``scope -> str``: the durable key stored on runs and pauses.
    "SCOPE_KEY": "symfonic_django.scopes.default_scope_key",
    # ``key -> scope | None``: turns a stored key back into the deployment's scope.
    "SCOPE_LOADER": "symfonic_django.scopes.default_scope_loader",
    # Seconds a worker keeps a loaded scope for the next turns of that scope (0: load per turn).
    "SCOPE_CACHE_SECONDS": 0,
    # ``PauseClaims -> scope | None``: the explicit token-to-scope route (C12).
    "SCOPE_FOR_CLAIMS": "symfonic_django.scopes.scope_for_claims",
    # ``user -> iterable of scope keys | ALL_SCOPES``: what a reviewer may see.
    "REVIEWER_SCOPES": "symfonic_django.scopes.superusers_see_all",
    # ``request -> scope | None``: the scope a new run started over HTTP belongs to.
    "REQUEST_SCOPE": None,
    # ``async (scope, session_id, thread_id, resuming) -> None``; raises to refuse.
    "OWNER_GUARD": None,
    # ``(scope, claims) -> AdmittedPlan | None``; None refuses the resume.
    "ADMISSION": None,
    # ``pause -> int``: how many distinct reviewers must approve an approval pause (four
    # eyes); read when the pause is made. None: one. The run's starter never counts.
    "APPROVAL_POLICY": None,
    "TOKEN_MAX_AGE": 24 * 3600,
    "LEASE_SECONDS": 60,
    # Seconds a reviewer's claim on a pause ("being reviewed by alice") lasts unless they
    # claim it again or release it (pauses.claim). A claim informs; it locks nothing.
    "CLAIM_SECONDS": 15 * 60,
    "MAX_ANSWER_BYTES": 64 * 1024,
    # "fail": an expired pause fails the paused run; "resume": it resumes with a timeout answer.
    "ON_EXPIRE": "fail",
    # Seconds an Idempotency-Key's recorded response is kept (symfonic_prune deletes older).
    "IDEMPOTENCY_RETENTION": 24 * 3600,
    # Seconds the events of a finished run are kept (None: for ever; symfonic_prune).
    "EVENT_RETENTION": None,
    # How deeply a JSON request body may nest arrays and objects; deeper is a 400, refused
    # before the body is parsed (a parser's recursion is not a limit a client may reach).
    "MAX_JSON_DEPTH": 32,
    # The Django cache alias the API's rate limits are counted in. Every process of a
    # deployment must share it (Redis, a database cache), or each one grants its own budget.
    "THROTTLE_CACHE": "default",
    # Failed resume/ attempts for one pause, from any address, before further attempts with
    # tokens that do not verify are refused 429 for the rest of the window (seconds).
    "TOKEN_FAILURE_LIMIT": 10,
    "TOKEN_FAILURE_WINDOW": 15 * 60,
    # Who is told about pauses and runs, by email and signed webhooks (notifications.py):
    # a dict of the keys in NOTIFY_DEFAULTS. The default tells no one.
    "NOTIFY": {},
}

#: The keys of ``SYMFONIC["NOTIFY"]`` and their defaults (``notifications.notify_settings``).
NOTIFY_DEFAULTS: dict[str, Any] = {
    # The origin links in notifications start with ("https://review.example.com").
    "SITE_URL": "",
    # ``scope_key -> iterable of email addresses``: who is emailed when a pause of that
    # scope is requested. None: no email.
    "REVIEWER_EMAILS": None,
    # The sender of those emails; None: Django's DEFAULT_FROM_EMAIL.
    "FROM_EMAIL": None,
    # Whether an email carries the pause's token (a bearer credential for answering it).
    "INCLUDE_TOKEN": False,
    # Endpoints: [{"NAME", "URL", "SECRET": "whsec_...", "EVENTS"?, "SCOPES"?,
    # "INCLUDE_TOKEN"?}, ...], each signed per the Standard Webhooks specification.
    "WEBHOOKS": [],
    # Attempts per delivery before it is given up (a manual redeliver grants one more).
    "MAX_ATTEMPTS": 8,
    # Seconds before the second attempt; each later one waits twice as long, at most
    # RETRY_BACKOFF_MAX.
    "RETRY_BACKOFF": 60.0,
    "RETRY_BACKOFF_MAX": 6 * 3600.0,
    # Seconds a webhook's receiver has to answer (an email's: Django's own EMAIL_TIMEOUT).
    "TIMEOUT": 10.0,
    # Seconds before a pending pause expires when its scope's reviewers are reminded of it
    # (pause.reminder: email and webhook), once. None: no reminders.
    "REMIND_BEFORE": 3600,
    # Seconds before it expires when a still pending pause is escalated (pause.escalated:
    # email to ESCALATE_TO's members, webhook), once; less than REMIND_BEFORE. None: never.
    "ESCALATE_BEFORE": 15 * 60,
    # The name of a Django auth group whose active members' addresses get escalations.
    # None: no escalation email (a webhook that takes pause.escalated still gets it).
    "ESCALATE_TO": None,
}

IMPORT_STRINGS = frozenset(
    {"SCOPE_KEY", "SCOPE_LOADER", "SCOPE_FOR_CLAIMS", "REVIEWER_SCOPES",
     "REQUEST_SCOPE", "OWNER_GUARD", "ADMISSION", "APPROVAL_POLICY"}
)
ON_EXPIRE_CHOICES = ("fail", "resume")


class SymfonicSettings:
    """Attribute access to ``settings.SYMFONIC`` with defaults and imports."""

    def __init__(self) -> None:
        self._cached: dict[str, Any] = {}

    @property
    def user_settings(self) -> dict[str, Any]:
        value = getattr(django_settings, SETTING_NAME, None) or {}
        return dict(value)

    def __getattr__(self, name: str) -> Any:
        if name not in DEFAULTS:
            raise AttributeError(f"Invalid symfonic_django setting: {name!r}")
        if name in self._cached:
            return self._cached[name]
        value = self.user_settings.get(name, DEFAULTS[name])
        if name in IMPORT_STRINGS and isinstance(value, str):
            value = import_string(value)
        self._cached[name] = value
        return value

    def agent_factory(self, name: str) -> Any:
        """The ``agent_for(scope)`` callable registered as ``name``, imported once."""
        key = f"agent:{name}"
        if key not in self._cached:
            path = self.AGENTS.get(name)
            if path is None:
                raise UnknownAgent(f"No agent is registered as {name!r} in SYMFONIC['AGENTS'].")
            self._cached[key] = import_string(path) if isinstance(path, str) else path
        return self._cached[key]

    def reload(self) -> None:
        self._cached.clear()


settings = SymfonicSettings()


def _reload(*, setting: str, **kwargs: Any) -> None:
    if setting == SETTING_NAME:
        settings.reload()


setting_changed.connect(_reload)
