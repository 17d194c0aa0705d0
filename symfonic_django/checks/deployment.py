"""The checks of the deployment around the app: Celery, channels, the database, caches,
DRF and email, as far as the app's guarantees depend on them (ids in ``checks/__init__``).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings as django_settings
from django.core.checks import Error, Tags, Warning, register
from django.urls import NoReverseMatch, reverse

from ..conf import NOTIFY_SETTINGS, with_defaults
from .settings import notify_given


@register(Tags.compatibility)
def check_celery(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    from celery import current_app

    from .. import tasks  # noqa: F401  (registers the tasks on the current app)

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


#: Cache backends each process keeps for itself: a limit counted there is per process.
PER_PROCESS_CACHES = ("LocMemCache", "DummyCache")


@register(Tags.compatibility)
def check_throttle_cache(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    """Rate limits hold only in a cache every process shares (the heuristic of W001)."""
    from ..conf import settings

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


#: Django's default sender, which many mail servers refuse.
PLACEHOLDER_SENDER = "webmaster@localhost"


def _default_email_backend() -> str:
    """The default email backend's dotted path: MAILERS' (Django 6.1+) or EMAIL_BACKEND."""
    mailers = getattr(django_settings, "MAILERS", None)
    if isinstance(mailers, dict):
        return str((mailers.get("default") or {}).get("BACKEND", ""))
    return str(getattr(django_settings, "EMAIL_BACKEND", ""))


@register(Tags.compatibility)
def check_notification_delivery(app_configs: Any = None, **kwargs: Any) -> list[Warning]:
    """Notifications that would arrive without a usable link, or never (W101-W103)."""
    notify = notify_given()
    if not notify:
        return []
    given = with_defaults(NOTIFY_SETTINGS, notify)
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
