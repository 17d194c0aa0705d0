"""System checks: a misconfiguration is an Error at startup, never silent (rule C12).

Stable ids, each with a hint:

- ``symfonic_django.E001`` unknown key in ``SYMFONIC`` (accepted-but-inert)
- ``symfonic_django.E002`` a dotted path that does not import
- ``symfonic_django.E003`` a value of the wrong type or out of range
- ``symfonic_django.E004`` a Celery task of this app without acks_late / reject_on_worker_lost
- ``symfonic_django.W001`` the in-memory channel layer with a worker in another process
- ``symfonic_django.W002`` SQLite as the database of a deployment (``check --deploy``)
- ``symfonic_django.W003`` no Celery broker configured: runs would stay ``queued``
- ``symfonic_django.W004`` ``CELERY_BROKER_URL`` is set but the current Celery app does not read it
- ``symfonic_django.W005`` the API is mounted, but DRF's schema class cannot serve its schema
- ``symfonic_django.W006`` ``DEBUG`` on with a real database (``check --deploy``)
- ``symfonic_django.W007`` the API's rate limits counted in a per-process cache (or none)
  while the deployment runs several processes
- ``symfonic_django.W008`` DRF's ``NUM_PROXIES`` unset: a client names its own address
  in ``X-Forwarded-For`` and gets a fresh ``resume/`` budget each time

Notifications (``SYMFONIC["NOTIFY"]``, ``notifications.py``) have ids of their own, from 101:

- ``symfonic_django.E101`` a ``NOTIFY`` value of the wrong type, out of range, or unknown
- ``symfonic_django.E102`` a webhook endpoint that cannot be delivered to (URL, secret,
  event types, a name used twice)
- ``symfonic_django.W101`` notifications configured without ``SITE_URL``: no usable link
- ``symfonic_django.W102`` reviewer emails configured, but the email backend drops them
- ``symfonic_django.W103`` reviewer emails sent from Django's placeholder sender
"""

from __future__ import annotations

import base64
import binascii
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings as django_settings
from django.core.checks import Error, Tags, Warning, register
from django.urls import NoReverseMatch, reverse
from django.utils.module_loading import import_string

from .conf import DEFAULTS, IMPORT_STRINGS, NOTIFY_DEFAULTS, ON_EXPIRE_CHOICES, SETTING_NAME
from .notifications import EVENT_TYPES

#: Keys older hosts accepted and ignored; named so the error can say what replaced them.
_REPLACED_BY_SCOPE_FOR_CLAIMS = (
    "Remove it: scope resolution is the explicit SCOPE_FOR_CLAIMS route, a callable "
    "(PauseClaims -> scope | None)."
)
LEGACY_KEYS = {
    "CHECKPOINT_PATH": _REPLACED_BY_SCOPE_FOR_CLAIMS,
    "SQLITE_CHECKPOINT_PATH": _REPLACED_BY_SCOPE_FOR_CLAIMS,
}
#: Hooks that may be left unset (None); every other hook needs a callable.
OPTIONAL_HOOKS = frozenset({"REQUEST_SCOPE", "OWNER_GUARD", "ADMISSION", "APPROVAL_POLICY"})

_POSITIVE_INTS = ("TOKEN_MAX_AGE", "LEASE_SECONDS", "MAX_ANSWER_BYTES", "IDEMPOTENCY_RETENTION",
                  "CLAIM_SECONDS")


def _user_settings() -> Any:
    return getattr(django_settings, SETTING_NAME, {})


@register(Tags.compatibility)
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    errors: list[Error] = []
    user = _user_settings()
    if not isinstance(user, dict):
        return [Error("SYMFONIC must be a dict.", hint="Set SYMFONIC = {...} in settings.",
                      id="symfonic_django.E003")]
    for key in sorted(set(user) - set(DEFAULTS)):
        hint = LEGACY_KEYS.get(key, f"Known keys: {', '.join(sorted(DEFAULTS))}.")
        errors.append(Error(f"SYMFONIC[{key!r}] is not a setting of symfonic_django; it would be "
                            "accepted and do nothing.", hint=hint, id="symfonic_django.E001"))
    paths = {f"[{k!r}]": user[k] for k in IMPORT_STRINGS if isinstance(user.get(k), str)}
    for key in sorted(IMPORT_STRINGS & set(user)):
        value = user[key]
        if not (isinstance(value, str) or callable(value)
                or (value is None and key in OPTIONAL_HOOKS)):
            errors.append(Error(f"SYMFONIC[{key!r}] must be a dotted path or a callable, not "
                                f"{value!r}.", hint=f"The default is {DEFAULTS[key]!r}.",
                                id="symfonic_django.E003"))
    agents = user.get("AGENTS", {})
    if not isinstance(agents, dict) or not all(
            isinstance(p, str) or callable(p) for p in agents.values()):
        errors.append(Error("SYMFONIC['AGENTS'] must map agent names to dotted paths.",
                            hint="For example {'refund': 'myapp.agents.refund_agent'}.",
                            id="symfonic_django.E003"))
    else:
        paths.update({f"['AGENTS'][{n!r}]": p for n, p in agents.items() if isinstance(p, str)})
    for name, path in sorted(paths.items()):
        try:
            import_string(path)
        except ImportError as exc:
            errors.append(Error(f"SYMFONIC{name} = {path!r} cannot be imported: {exc}",
                                hint="Give the dotted path of a callable.",
                                id="symfonic_django.E002"))
    for key in _POSITIVE_INTS:
        value = user.get(key, DEFAULTS[key])
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            errors.append(Error(f"SYMFONIC[{key!r}] must be a positive integer, not {value!r}.",
                                hint=f"The default is {DEFAULTS[key]}.",
                                id="symfonic_django.E003"))
    event_retention = user.get("EVENT_RETENTION", DEFAULTS["EVENT_RETENTION"])
    if event_retention is not None and (
            not isinstance(event_retention, int) or isinstance(event_retention, bool)
            or event_retention <= 0):
        errors.append(Error(f"SYMFONIC['EVENT_RETENTION'] must be None (keep events for ever) "
                            f"or a positive integer of seconds, not {event_retention!r}.",
                            hint="The default, None, keeps the events of finished runs for "
                                 "ever.", id="symfonic_django.E003"))
    cache_seconds = user.get("SCOPE_CACHE_SECONDS", DEFAULTS["SCOPE_CACHE_SECONDS"])
    if (not isinstance(cache_seconds, int | float) or isinstance(cache_seconds, bool)
            or cache_seconds < 0):
        errors.append(Error(f"SYMFONIC['SCOPE_CACHE_SECONDS'] must be a number of seconds, 0 "
                            f"or more, not {cache_seconds!r}.",
                            hint="0 (the default) loads the scope for every turn.",
                            id="symfonic_django.E003"))
    on_expire = user.get("ON_EXPIRE", DEFAULTS["ON_EXPIRE"])
    if on_expire not in ON_EXPIRE_CHOICES:
        errors.append(Error(f"SYMFONIC['ON_EXPIRE'] must be 'fail' or 'resume', not "
                            f"{on_expire!r}.",
                            hint="'fail' (the default) fails the paused run; 'resume' resumes "
                                 "it with a recorded timeout answer.",
                            id="symfonic_django.E003"))
    return errors


@register(Tags.compatibility)
def check_celery(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    from celery import current_app

    from . import tasks  # noqa: F401  (registers the tasks on the current app)

    errors = []
    for name in ("symfonic_django.start_run", "symfonic_django.run_continuation"):
        task = current_app.tasks.get(name)
        if task is None:
            continue
        missing = [option for option in ("acks_late", "reject_on_worker_lost")
                   if not getattr(task, option, False)]
        if missing:
            errors.append(Error(
                f"Celery task {name} runs without {' and '.join(missing)}; a worker "
                "that dies mid-turn would lose the continuation.",
                hint="Do not override acks_late / reject_on_worker_lost for symfonic_django tasks "
                     "(task_annotations).", id="symfonic_django.E004"))
    return errors


#: Where the README shows the Celery wiring the two broker checks ask for.
CELERY_WIRING = (
    "Load a Celery app configured from Django's settings whenever Django starts: "
    "app.config_from_object('django.conf:settings', namespace='CELERY') in proj/celery.py, "
    "imported in proj/__init__.py (README, 'Installing it in your project')."
)


@register(Tags.compatibility)
def check_celery_broker(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    """Runs reach a worker only through a configured broker.

    ``celery.current_app`` is the app ``start_run`` sends through: the
    project's app once its package imports it, else Celery's fallback app,
    which reads no settings. Either way ``conf.broker_url`` is what it would
    use (Celery also reads the ``CELERY_BROKER_URL`` environment variable
    there); unset, Celery falls back to AMQP on localhost, where in a Django
    project no worker listens. The Django setting tells the two causes apart.
    """
    from celery import current_app

    if current_app.conf.broker_url:
        return []
    if getattr(django_settings, "CELERY_BROKER_URL", None):
        return [Warning(
            "CELERY_BROKER_URL is set, but the current Celery app does not read it: start_run "
            "would send runs to Celery's default broker (AMQP on localhost) and they would stay "
            "queued.", hint=CELERY_WIRING, id="symfonic_django.W004")]
    return [Warning(
        "No Celery broker is configured: start_run would send runs to Celery's default broker "
        "(AMQP on localhost) and they would stay queued.",
        hint=f"Set CELERY_BROKER_URL. {CELERY_WIRING}", id="symfonic_django.W003")]


@register(Tags.compatibility)
def check_channel_layer(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    layers = getattr(django_settings, "CHANNEL_LAYERS", {}) or {}
    backend = (layers.get("default") or {}).get("BACKEND", "")
    broker = getattr(django_settings, "CELERY_BROKER_URL", "") or ""
    if backend.endswith("InMemoryChannelLayer") and broker and not broker.startswith("memory"):
        return [Warning(
            "The in-memory channel layer does not cross processes, but Celery workers run in "
            "other processes: watchers will see events only through the polling fallback.",
            hint="Use channels_redis.core.RedisChannelLayer in a multi-process deployment.",
            id="symfonic_django.W001")]
    return []


@register(Tags.compatibility, Tags.urls)
def check_schema_class(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    """The API's OpenAPI schema needs drf-spectacular's AutoSchema as DRF's default.

    The views are described with ``@extend_schema`` on their methods, which
    builds on ``DEFAULT_SCHEMA_CLASS``; drf-spectacular refuses any other
    base, so with DRF's own default ``schema/`` is a 500 (a class attribute on
    the views does not help: the method decorators still build on the default).
    Only a project that mounts the API is told.
    """
    from drf_spectacular.openapi import AutoSchema
    from rest_framework.settings import api_settings

    schema_class = api_settings.DEFAULT_SCHEMA_CLASS
    if isinstance(schema_class, type) and issubclass(schema_class, AutoSchema):
        return []
    try:
        path = reverse("symfonic_api:schema")
    except NoReverseMatch:
        return []
    name = (f"{schema_class.__module__}.{schema_class.__qualname__}"
            if isinstance(schema_class, type) else repr(schema_class))
    return [Warning(
        f"GET {path} answers 500: the API's views are described with drf-spectacular, which "
        f"needs its AutoSchema as DRF's DEFAULT_SCHEMA_CLASS, not {name}.",
        hint="Set REST_FRAMEWORK['DEFAULT_SCHEMA_CLASS'] = "
             "'drf_spectacular.openapi.AutoSchema' (or a subclass of it).",
        id="symfonic_django.W005")]


@register(Tags.database, deploy=True)
def check_sqlite_in_production(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    engine = django_settings.DATABASES.get("default", {}).get("ENGINE", "")
    if engine.endswith("sqlite3"):
        return [Warning(
            "SQLite has no row locks: claims stay single-winner, but concurrent reviewers and "
            "workers serialize on one database lock.",
            hint="Deploy on PostgreSQL.", id="symfonic_django.W002")]
    return []


@register(Tags.security, deploy=True)
def check_debug_with_a_real_database(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    """DEBUG's error pages show settings (broker and database URLs) and every SQL query."""
    engine = django_settings.DATABASES.get("default", {}).get("ENGINE", "")
    if django_settings.DEBUG and not engine.endswith("sqlite3"):
        return [Warning(
            "DEBUG is on while the database is not the embedded SQLite: a crash page would "
            "show this deployment's settings, and the pauses' data, to whoever caused it.",
            hint="Set DEBUG = False outside local development.", id="symfonic_django.W006")]
    return []


#: The deepest nesting a request may be allowed. Parsing is not the limit (the
#: parser sees only bounded bodies), what follows is: jsonschema follows a nested answer
#: through several frames per level and exhausts Python's recursion limit near 256.
MAX_JSON_DEPTH_CEILING = 100
#: Cache backends each process keeps for itself: a limit counted there is per process.
PER_PROCESS_CACHES = ("LocMemCache", "DummyCache")


@register(Tags.compatibility)
def check_api_limits(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """``MAX_JSON_DEPTH``, ``THROTTLE_CACHE`` and the failed-token limit (E003)."""
    user = _user_settings()
    if not isinstance(user, dict):
        return []  # check_settings says so
    errors = []
    for key, least in (("MAX_JSON_DEPTH", 2), ("TOKEN_FAILURE_LIMIT", 1),
                       ("TOKEN_FAILURE_WINDOW", 1)):
        value = user.get(key, DEFAULTS[key])
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            errors.append(Error(f"SYMFONIC[{key!r}] must be a whole number of at least {least}, "
                                f"not {value!r}.", hint=f"The default is {DEFAULTS[key]}.",
                                id="symfonic_django.E003"))
    depth = user.get("MAX_JSON_DEPTH", DEFAULTS["MAX_JSON_DEPTH"])
    if isinstance(depth, int) and depth > MAX_JSON_DEPTH_CEILING:
        errors.append(Error(
            f"SYMFONIC['MAX_JSON_DEPTH'] = {depth} lets a request nest deeper than schema "
            "validation can follow without exhausting Python's recursion limit.",
            hint=f"Keep it at most {MAX_JSON_DEPTH_CEILING}; the default is "
                 f"{DEFAULTS['MAX_JSON_DEPTH']}.", id="symfonic_django.E003"))
    alias = user.get("THROTTLE_CACHE", DEFAULTS["THROTTLE_CACHE"])
    caches = getattr(django_settings, "CACHES", {}) or {}
    if not isinstance(alias, str) or alias not in caches:
        errors.append(Error(f"SYMFONIC['THROTTLE_CACHE'] = {alias!r} is not an alias in CACHES.",
                            hint=f"Name one of {sorted(caches)}; the default is 'default'.",
                            id="symfonic_django.E003"))
    return errors



@register(Tags.compatibility)
def check_throttle_cache(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    """Rate limits hold only in a cache every process shares (the heuristic of W001)."""
    from .conf import settings

    alias = settings.THROTTLE_CACHE
    backend = ((getattr(django_settings, "CACHES", {}) or {}).get(alias) or {}).get("BACKEND", "")
    broker = getattr(django_settings, "CELERY_BROKER_URL", "") or ""
    dummy = backend.endswith("DummyCache")
    multi_process = bool(broker) and not broker.startswith("memory")
    if dummy or (backend.endswith(PER_PROCESS_CACHES) and multi_process):
        where = ("counts nothing, so resume/ is not rate limited at all" if dummy else
                 "is kept by each process for itself, so every server process grants a budget "
                 "of its own")
        return [Warning(
            f"The cache the API's rate limits are counted in (CACHES[{alias!r}], "
            f"{backend.rsplit('.', 1)[-1]}) {where}.",
            hint="Count them in a cache every process shares: "
                 "django.core.cache.backends.redis.RedisCache, named by "
                 "SYMFONIC['THROTTLE_CACHE'] (default 'default').",
            id="symfonic_django.W007")]
    return []


@register(Tags.security)
def check_num_proxies(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    """DRF reads the client address from X-Forwarded-For unless NUM_PROXIES says otherwise."""
    from rest_framework.settings import api_settings

    if api_settings.NUM_PROXIES is None:
        return [Warning(
            "REST_FRAMEWORK['NUM_PROXIES'] is not set, so DRF takes the client address from "
            "X-Forwarded-For, which any client can write: each new value gets a fresh resume/ "
            "rate limit.",
            hint="Set it to the number of proxies in front of the application server (0 when "
                 "clients connect directly).", id="symfonic_django.W008")]
    return []


# --- notifications ---------------------------------------------------------------------

#: The number-of-seconds keys of ``NOTIFY``, each above 0.
_NOTIFY_SECONDS = ("RETRY_BACKOFF", "RETRY_BACKOFF_MAX", "TIMEOUT")
WEBHOOK_KEYS = frozenset({"NAME", "URL", "SECRET", "EVENTS", "SCOPES", "INCLUDE_TOKEN"})
#: The longest name ``django.contrib.auth``'s ``Group`` takes.
GROUP_NAME_CHARS = 150
#: Django's default sender, which many mail servers refuse.
PLACEHOLDER_SENDER = "webmaster@localhost"


def _is_http_url(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_webhook_secret(value: Any) -> bool:
    """A Standard Webhooks secret: ``whsec_`` and base64 of 24 to 64 bytes."""
    if not isinstance(value, str) or not value.startswith("whsec_"):
        return False
    try:
        key = base64.b64decode(value.removeprefix("whsec_"), validate=True)
    except (binascii.Error, ValueError):
        return False
    return 24 <= len(key) <= 64


def _notify() -> dict[str, Any] | None:
    """``SYMFONIC["NOTIFY"]`` as given, or None when it is not a dict (E101 says so)."""
    user = _user_settings()
    value = user.get("NOTIFY", {}) if isinstance(user, dict) else {}
    return value if isinstance(value, dict) else None


def _notify_error(message: str, hint: str) -> Error:
    return Error(f"SYMFONIC['NOTIFY']{message}", hint=hint, id="symfonic_django.E101")


@register(Tags.compatibility)
def check_notifications(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    """Every ``NOTIFY`` value (E101, E002 for a path that does not import)."""
    notify = _notify()
    if notify is None:
        return [_notify_error(" must be a dict.", "For example {'REVIEWER_EMAILS': "
                              "'myproject.reviewers.emails_for_scope', 'SITE_URL': "
                              "'https://review.example.com'}.")]
    errors = []
    for key in sorted(set(notify) - set(NOTIFY_DEFAULTS)):
        errors.append(_notify_error(f"[{key!r}] is not a notification setting; it would be "
                                    "accepted and do nothing.",
                                    f"Known keys: {', '.join(sorted(NOTIFY_DEFAULTS))}."))
    given = {**NOTIFY_DEFAULTS, **notify}
    site_url = given["SITE_URL"]
    if site_url != "" and not (_is_http_url(site_url) and not urlsplit(site_url).query
                               and not urlsplit(site_url).fragment):
        errors.append(_notify_error(f"['SITE_URL'] must be an http(s) origin, not {site_url!r}.",
                                    "For example 'https://review.example.com': links to "
                                    "review pages start with it."))
    emails = given["REVIEWER_EMAILS"]
    if isinstance(emails, str):
        try:
            import_string(emails)
        except ImportError as exc:
            errors.append(Error(f"SYMFONIC['NOTIFY']['REVIEWER_EMAILS'] = {emails!r} cannot be "
                                f"imported: {exc}", hint="Give the dotted path of a callable "
                                "(scope_key -> iterable of email addresses).",
                                id="symfonic_django.E002"))
    elif emails is not None and not callable(emails):
        errors.append(_notify_error(f"['REVIEWER_EMAILS'] must be None, a dotted path or a "
                                    f"callable, not {emails!r}.",
                                    "A callable scope_key -> iterable of email addresses."))
    if given["FROM_EMAIL"] is not None and not (isinstance(given["FROM_EMAIL"], str)
                                                and given["FROM_EMAIL"].strip()):
        errors.append(_notify_error(f"['FROM_EMAIL'] must be None or an address, not "
                                    f"{given['FROM_EMAIL']!r}.",
                                    "None sends from DEFAULT_FROM_EMAIL."))
    if not isinstance(given["INCLUDE_TOKEN"], bool):
        errors.append(_notify_error(f"['INCLUDE_TOKEN'] must be True or False, not "
                                    f"{given['INCLUDE_TOKEN']!r}.",
                                    "False (the default) keeps tokens out of emails."))
    attempts = given["MAX_ATTEMPTS"]
    if not isinstance(attempts, int) or isinstance(attempts, bool) or attempts < 1:
        errors.append(_notify_error(f"['MAX_ATTEMPTS'] must be a whole number of at least 1, "
                                    f"not {attempts!r}.",
                                    f"The default is {NOTIFY_DEFAULTS['MAX_ATTEMPTS']}."))
    for key in _NOTIFY_SECONDS:
        if not _is_number(given[key]) or given[key] <= 0:
            errors.append(_notify_error(f"[{key!r}] must be a number of seconds above 0, not "
                                        f"{given[key]!r}.",
                                        f"The default is {NOTIFY_DEFAULTS[key]}."))
    if (_is_number(given["RETRY_BACKOFF"]) and _is_number(given["RETRY_BACKOFF_MAX"])
            and given["RETRY_BACKOFF_MAX"] < given["RETRY_BACKOFF"]):
        errors.append(_notify_error("['RETRY_BACKOFF_MAX'] is below RETRY_BACKOFF.",
                                    "The longest wait between attempts is at least the first."))
    return errors + _check_reminders(given) + _check_webhooks(given["WEBHOOKS"])


def _check_reminders(given: dict[str, Any]) -> list[Error]:
    """``REMIND_BEFORE``, ``ESCALATE_BEFORE`` (seconds or None, escalation the later) and
    ``ESCALATE_TO`` (a group name or None)."""
    errors = []
    for key in ("REMIND_BEFORE", "ESCALATE_BEFORE"):
        value = given[key]
        if value is not None and (not _is_number(value) or value <= 0):
            errors.append(_notify_error(f"[{key!r}] must be None or a number of seconds above "
                                        f"0, not {value!r}.",
                                        f"Seconds before a pause expires; the default is "
                                        f"{NOTIFY_DEFAULTS[key]}, None turns it off."))
    remind, escalate = given["REMIND_BEFORE"], given["ESCALATE_BEFORE"]
    if (_is_number(remind) and _is_number(escalate) and remind > 0 and escalate > 0
            and escalate >= remind):
        errors.append(_notify_error(
            f"['ESCALATE_BEFORE'] ({escalate}) is not less than REMIND_BEFORE ({remind}): the "
            "escalation would go out before, or with, the reminder.",
            "Escalate closer to the expiry than the reminder, e.g. REMIND_BEFORE 3600 and "
            "ESCALATE_BEFORE 900."))
    group = given["ESCALATE_TO"]
    if group is not None and not (isinstance(group, str) and group.strip()
                                  and len(group) <= GROUP_NAME_CHARS):
        errors.append(_notify_error(f"['ESCALATE_TO'] must be None or the name of a Django "
                                    f"auth group, not {group!r}.",
                                    "Its active members with an email address are sent "
                                    "escalations; None sends none by email."))
    return errors


def _webhook_error(message: str, hint: str) -> Error:
    return Error(f"SYMFONIC['NOTIFY']['WEBHOOKS']{message}", hint=hint,
                 id="symfonic_django.E102")


def _check_webhooks(hooks: Any) -> list[Error]:
    if not isinstance(hooks, list | tuple) or not all(isinstance(h, dict) for h in hooks):
        return [_webhook_error(" must be a list of dicts.",
                               "[{'NAME': 'ops', 'URL': 'https://...', 'SECRET': 'whsec_...'}]")]
    errors = []
    names: set[str] = set()
    for i, hook in enumerate(hooks):
        where = f"[{i}]"
        for key in sorted(set(hook) - WEBHOOK_KEYS):
            errors.append(_webhook_error(f"{where}[{key!r}] is not an endpoint setting.",
                                         f"Known keys: {', '.join(sorted(WEBHOOK_KEYS))}."))
        name = hook.get("NAME")
        if not isinstance(name, str) or not name.strip() or len(name) > 254:
            errors.append(_webhook_error(f"{where} needs a NAME, a short text.",
                                         "Deliveries name their endpoint by it (a URL may "
                                         "hold a credential; a name does not)."))
        elif name in names:
            errors.append(_webhook_error(f"{where}: the NAME {name!r} is used twice.",
                                         "Give each endpoint its own NAME."))
        else:
            names.add(name)
        if not _is_http_url(hook.get("URL")):
            errors.append(_webhook_error(f"{where}['URL'] must be an http(s) URL, not "
                                         f"{hook.get('URL')!r}.", "The receiver's address."))
        if not _is_webhook_secret(hook.get("SECRET")):
            # Never the secret itself in the message: check output ends up in logs.
            errors.append(_webhook_error(f"{where}['SECRET'] is not a Standard Webhooks "
                                         "secret.", "'whsec_' followed by the base64 of 24 to "
                                         "64 random bytes, e.g. 'whsec_' + base64 of "
                                         "secrets.token_bytes(32)."))
        events = hook.get("EVENTS")
        if events is not None and (not isinstance(events, list | tuple)
                                   or not set(events) <= set(EVENT_TYPES)):
            errors.append(_webhook_error(f"{where}['EVENTS'] must list event types of "
                                         f"{', '.join(EVENT_TYPES)}, not {events!r}.",
                                         "Leave it out for every event type."))
        scopes = hook.get("SCOPES")
        if scopes is not None and (not isinstance(scopes, list | tuple)
                                   or not all(isinstance(s, str) for s in scopes)):
            errors.append(_webhook_error(f"{where}['SCOPES'] must list scope keys, not "
                                         f"{scopes!r}.", "Leave it out for every scope."))
        if not isinstance(hook.get("INCLUDE_TOKEN", False), bool):
            errors.append(_webhook_error(f"{where}['INCLUDE_TOKEN'] must be True or False.",
                                         "False (the default) keeps tokens out of webhooks."))
    return errors


def _default_email_backend() -> str:
    """The default email backend's dotted path: MAILERS' (Django 6.1+) or EMAIL_BACKEND."""
    mailers = getattr(django_settings, "MAILERS", None)
    if isinstance(mailers, dict):
        return str((mailers.get("default") or {}).get("BACKEND", ""))
    return str(getattr(django_settings, "EMAIL_BACKEND", ""))


@register(Tags.compatibility)
def check_notification_delivery(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    """Notifications that would arrive without a usable link, or never (W101-W103)."""
    notify = _notify()
    if not notify:
        return []
    given = {**NOTIFY_DEFAULTS, **notify}
    warnings = []
    emails, hooks = given["REVIEWER_EMAILS"] is not None, bool(given["WEBHOOKS"])
    if (emails or hooks) and not given["SITE_URL"]:
        warnings.append(Warning(
            "Notifications are configured without SYMFONIC['NOTIFY']['SITE_URL']: their links "
            "to review pages are paths, which an email client cannot open.",
            hint="Set it to the origin reviewers reach the admin at, e.g. "
                 "'https://review.example.com'.", id="symfonic_django.W101"))
    if emails and _default_email_backend().endswith("dummy.EmailBackend"):
        warnings.append(Warning(
            "SYMFONIC['NOTIFY']['REVIEWER_EMAILS'] is set, but EMAIL_BACKEND is Django's dummy "
            "backend: every email to reviewers is dropped and counted as delivered.",
            hint="Set EMAIL_BACKEND (and EMAIL_HOST, ...) to a backend that sends mail.",
            id="symfonic_django.W102"))
    sender = given["FROM_EMAIL"] or getattr(django_settings, "DEFAULT_FROM_EMAIL", "")
    if emails and sender == PLACEHOLDER_SENDER:
        warnings.append(Warning(
            f"Emails to reviewers would be sent from {PLACEHOLDER_SENDER!r}, Django's "
            "placeholder, which many mail servers refuse.",
            hint="Set DEFAULT_FROM_EMAIL, or SYMFONIC['NOTIFY']['FROM_EMAIL'].",
            id="symfonic_django.W103"))
    return warnings
