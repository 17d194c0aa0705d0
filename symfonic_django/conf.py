"""The ``SYMFONIC`` settings dict: one declaration per key, read through one lazy object.

Each key is declared once, below, as a ``Setting``: its default, what a valid
value is (``check``), and whether it names dotted paths to import. Everything
else is derived from these declarations: ``DEFAULTS``, ``IMPORT_STRINGS``, the
system checks (``checks/settings.py`` loops over them; an unknown key is an Error)
and the values ``settings`` hands out (``settings.NOTIFY`` with its own keys'
defaults filled in and its dotted path imported).

Modelled on DRF's ``api_settings``: defaults in one place, dotted paths imported
once and cached, and a reload on ``setting_changed`` so ``override_settings``
works in tests; removed keys name what replaced them (``REMOVED_SETTINGS``). Unlike
DRF, which checks nothing else, every value is checked at startup by a system check,
with a hint. The callables a deployment plugs in are typed
by the ``Protocol`` classes of ``hooks.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from django.conf import settings as django_settings
from django.core.signals import setting_changed
from django.utils.module_loading import import_string

from .exceptions import UnknownAgent
from .validation import (
    Check,
    Problem,
    Relation,
    a_callable,
    a_callable_or_none,
    a_dict,
    agents,
    at_least,
    before_expiry,
    cache_alias,
    escalation_after_reminder,
    event_retention,
    flag,
    from_email,
    group_name,
    json_depth,
    longest_backoff_not_below_first,
    on_expire,
    positive,
    reviewer_emails,
    scope_cache_seconds,
    seconds_above_0,
    site_url,
)

SETTING_NAME = "SYMFONIC"

#: Returned by a ``REVIEWER_SCOPES`` callable for a user who may see every scope.
ALL_SCOPES = "__all__"

@dataclass(frozen=True)
class Setting:
    """One key of ``SYMFONIC`` (or of a dict setting in it, like ``NOTIFY``)."""

    default: Any
    #: What a valid value is; None: checked where its whole structure is known.
    check: Check | None = None
    #: "one": a dotted path (or the callable itself), imported on first use; "each": a
    #: dict whose values are; "": a plain value.
    imports: Literal["", "one", "each"] = ""
    #: The callable's signature, in words (``hooks.py`` has its ``Protocol``).
    signature: str = ""
    #: A rule against the other keys of the same dict, checked after ``check``.
    relation: Relation | None = None
    #: The keys of a dict setting, each a ``Setting``.
    keys: Mapping[str, Setting] | None = None

    def problems(self, value: Any, given: Mapping[str, Any]) -> list[Problem]:
        """What is wrong with ``value``; ``given`` is its dict, defaults filled in."""
        found = [self.check(value, self.default)] if self.check is not None else []
        if self.relation is not None:
            found.append(self.relation(given))
        return [problem for problem in found if problem is not None]


#: The keys of ``SYMFONIC["NOTIFY"]`` (``notifications``), in the order they are checked.
NOTIFY_SETTINGS: dict[str, Setting] = {
    # The origin links in notifications start with ("https://review.example.com").
    "SITE_URL": Setting("", site_url),
    # Who is emailed when a pause of that scope is requested. None: no email.
    "REVIEWER_EMAILS": Setting(None, reviewer_emails, imports="one",
                               signature="scope_key -> iterable of email addresses"),
    # The sender of those emails; None: Django's DEFAULT_FROM_EMAIL.
    "FROM_EMAIL": Setting(None, from_email),
    # Whether an email carries the pause's token (a bearer credential for answering it).
    "INCLUDE_TOKEN": Setting(False, flag("False (the default) keeps tokens out of emails.")),
    # Attempts per delivery before it is given up (a manual redeliver grants one more).
    "MAX_ATTEMPTS": Setting(8, at_least(1)),
    # Seconds before the second attempt; each later one waits twice as long, at most
    # RETRY_BACKOFF_MAX.
    "RETRY_BACKOFF": Setting(60.0, seconds_above_0),
    "RETRY_BACKOFF_MAX": Setting(6 * 3600.0, seconds_above_0,
                                 relation=longest_backoff_not_below_first),
    # Seconds a webhook's receiver has to answer (an email's: Django's own EMAIL_TIMEOUT).
    "TIMEOUT": Setting(10.0, seconds_above_0),
    # Seconds before a pending pause expires when its scope's reviewers are reminded of it
    # (pause.reminder: email and webhook), once. None: no reminders.
    "REMIND_BEFORE": Setting(3600, before_expiry),
    # Seconds before it expires when a still pending pause is escalated (pause.escalated:
    # email to ESCALATE_TO's members, webhook), once; less than REMIND_BEFORE. None: never.
    "ESCALATE_BEFORE": Setting(15 * 60, before_expiry, relation=escalation_after_reminder),
    # The name of a Django auth group whose active members' addresses get escalations.
    # None: no escalation email (a webhook that takes pause.escalated still gets it).
    "ESCALATE_TO": Setting(None, group_name),
    # Endpoints: [{"NAME", "URL", "SECRET": "whsec_...", "EVENTS"?, "SCOPES"?,
    # "INCLUDE_TOKEN"?}, ...], each signed per the Standard Webhooks specification.
    # Checked endpoint by endpoint (E102), against the event types notifications sends.
    "WEBHOOKS": Setting([]),
}
#: The keys of one endpoint of ``NOTIFY["WEBHOOKS"]``.
WEBHOOK_KEYS = frozenset({"NAME", "URL", "SECRET", "EVENTS", "SCOPES", "INCLUDE_TOKEN"})


# --- SYMFONIC -------------------------------------------------------------------------------

#: Every key of ``SYMFONIC``. The plain values are checked in this order.
SETTINGS: dict[str, Setting] = {
    # name -> dotted path of ``agent_for(scope) -> Agent`` (sync or async).
    "AGENTS": Setting({}, agents, imports="each", signature="scope -> Agent"),
    # The durable key stored on runs and pauses.
    "SCOPE_KEY": Setting("symfonic_django.scopes.default_scope_key", a_callable,
                         imports="one", signature="scope -> str"),
    # Turns a stored key back into the deployment's scope.
    "SCOPE_LOADER": Setting("symfonic_django.scopes.default_scope_loader", a_callable,
                            imports="one", signature="key -> scope | None"),
    # The explicit token-to-scope route (C12).
    "SCOPE_FOR_CLAIMS": Setting("symfonic_django.scopes.scope_for_claims", a_callable,
                                imports="one", signature="PauseClaims -> scope | None"),
    # What a reviewer may see.
    "REVIEWER_SCOPES": Setting("symfonic_django.scopes.superusers_see_all", a_callable,
                               imports="one",
                               signature="user -> iterable of scope keys | ALL_SCOPES"),
    # The scope a new run started over HTTP belongs to.
    "REQUEST_SCOPE": Setting(None, a_callable_or_none, imports="one",
                             signature="request -> scope | None"),
    # Raises to refuse.
    "OWNER_GUARD": Setting(None, a_callable_or_none, imports="one",
                           signature="async (scope, session_id, thread_id, resuming) -> None"),
    # None refuses the resume.
    "ADMISSION": Setting(None, a_callable_or_none, imports="one",
                         signature="(scope, claims) -> AdmittedPlan | None"),
    # How many distinct reviewers must approve an approval pause (four eyes); read when the
    # pause is made. None: one. The run's starter never counts.
    "APPROVAL_POLICY": Setting(None, a_callable_or_none, imports="one",
                               signature="pause -> int"),
    "TOKEN_MAX_AGE": Setting(24 * 3600, positive),
    "LEASE_SECONDS": Setting(60, positive),
    "MAX_ANSWER_BYTES": Setting(64 * 1024, positive),
    # Seconds an Idempotency-Key's recorded response is kept (symfonic_prune deletes older).
    "IDEMPOTENCY_RETENTION": Setting(24 * 3600, positive),
    # Seconds a reviewer's claim on a pause ("being reviewed by alice") lasts unless they
    # claim it again or release it (pauses.claim). A claim informs; it locks nothing.
    "CLAIM_SECONDS": Setting(15 * 60, positive),
    # Seconds the events of a finished run are kept (None: for ever; symfonic_prune).
    "EVENT_RETENTION": Setting(None, event_retention),
    # Seconds a worker keeps a loaded scope for the next turns of that scope (0: load per turn).
    "SCOPE_CACHE_SECONDS": Setting(0, scope_cache_seconds),
    # "fail": an expired pause fails the paused run; "resume": it resumes with a timeout answer.
    "ON_EXPIRE": Setting("fail", on_expire),
    # How deeply a JSON request body may nest arrays and objects; deeper is a 400, refused
    # before the body is parsed (a parser's recursion is not a limit a client may reach).
    "MAX_JSON_DEPTH": Setting(32, json_depth),
    # Failed resume/ attempts for one pause, from any address, before further attempts with
    # tokens that do not verify are refused 429 for the rest of the window (seconds).
    "TOKEN_FAILURE_LIMIT": Setting(10, at_least(1)),
    "TOKEN_FAILURE_WINDOW": Setting(15 * 60, at_least(1)),
    # The Django cache alias the API's rate limits are counted in. Every process of a
    # deployment must share it (Redis, a database cache), or each one grants its own budget.
    "THROTTLE_CACHE": Setting("default", cache_alias),
    # Who is told about pauses and runs, by email and signed webhooks (notifications):
    # a dict of the keys of NOTIFY_SETTINGS. The default tells no one.
    "NOTIFY": Setting({}, a_dict("For example {'REVIEWER_EMAILS': "
                                  "'myproject.reviewers.emails_for_scope', 'SITE_URL': "
                                  "'https://review.example.com'}."), keys=NOTIFY_SETTINGS),
}

#: Keys older hosts accepted and ignored, with what replaced them (DRF's REMOVED_SETTINGS).
REMOVED_SETTINGS = dict.fromkeys(
    ("CHECKPOINT_PATH", "SQLITE_CHECKPOINT_PATH"),
    "Remove it: scope resolution is the explicit SCOPE_FOR_CLAIMS route, a callable "
    "(PauseClaims -> scope | None).")

DEFAULTS: dict[str, Any] = {name: s.default for name, s in SETTINGS.items()}
NOTIFY_DEFAULTS: dict[str, Any] = {name: s.default for name, s in NOTIFY_SETTINGS.items()}
#: The settings that are one dotted path (or the callable itself): the extension points.
IMPORT_STRINGS = frozenset(name for name, s in SETTINGS.items() if s.imports == "one")


def with_defaults(declared: Mapping[str, Setting], given: Mapping[str, Any]
                  ) -> dict[str, Any]:
    """Each declared key's given value, else its default (undeclared keys are left out)."""
    return {name: given.get(name, s.default) for name, s in declared.items()}


def _resolved(setting: Setting, value: Any) -> Any:
    """``value`` as code uses it: a dotted path imported, a dict setting's defaults filled."""
    if setting.imports == "one" and isinstance(value, str):
        return import_string(value)
    if setting.keys is not None:
        return {name: _resolved(setting.keys[name], v)
                for name, v in with_defaults(setting.keys, value or {}).items()}
    return value


class SymfonicSettings:
    """Attribute access to ``settings.SYMFONIC`` with defaults and imports.

    ``settings.NOTIFY`` is the full dict of ``NOTIFY_SETTINGS``' keys, defaults filled
    in and ``REVIEWER_EMAILS`` imported. Values are cached until ``SYMFONIC`` changes.
    """

    def __init__(self) -> None:
        self._cached: dict[str, Any] = {}

    @property
    def user_settings(self) -> dict[str, Any]:
        value = getattr(django_settings, SETTING_NAME, None) or {}
        return dict(value)

    def __getattr__(self, name: str) -> Any:
        if name not in SETTINGS:
            raise AttributeError(f"Invalid symfonic_django setting: {name!r}")
        if name not in self._cached:
            setting = SETTINGS[name]
            self._cached[name] = _resolved(setting, self.user_settings.get(name,
                                                                           setting.default))
        return self._cached[name]

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
