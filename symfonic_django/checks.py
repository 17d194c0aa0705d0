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
"""

from __future__ import annotations

from typing import Any

from django.conf import settings as django_settings
from django.core.checks import Error, Tags, Warning, register
from django.urls import NoReverseMatch, reverse
from django.utils.module_loading import import_string

from .conf import DEFAULTS, IMPORT_STRINGS, ON_EXPIRE_CHOICES, SETTING_NAME

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
OPTIONAL_HOOKS = frozenset({"REQUEST_SCOPE", "OWNER_GUARD", "ADMISSION"})

_POSITIVE_INTS = ("TOKEN_MAX_AGE", "LEASE_SECONDS", "MAX_ANSWER_BYTES", "IDEMPOTENCY_RETENTION")


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
