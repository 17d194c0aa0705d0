"""Test settings: the tests' own app (``tests.testapp``), its agents and the test agents
in ``tests.agents``, read from the environment as a deployment's are.

With no ``DATABASE_URL``, ``REDIS_URL`` or ``CELERY_BROKER_URL`` the suite runs on
SQLite, the in-memory channel layer and the in-memory transport; the real-process
suites set them for the servers and workers they start with these settings.
"""

import os
import tempfile
from importlib.util import find_spec
from pathlib import Path

import dj_database_url

from tests.example import EXAMPLE_APPS

BASE_DIR = Path(__file__).resolve().parent.parent

#: Public, so never a deployment's: Django's own prefix makes `check --deploy` flag it too.
SECRET_KEY = os.environ.get("SECRET_KEY", "") or (
    "django-insecure-symfonic-demo-only-" + "x" * 32)
SECRET_KEY_FALLBACKS = [k for k in os.environ.get("SECRET_KEY_FALLBACKS", "").split(",") if k]
DEBUG = os.environ.get("DEBUG", "1") == "1"
ALLOWED_HOSTS = os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "symfonic_django",
    # The example project's app, so that its own tests (tests/example) find its tables in
    # the same test database; they switch to its URLs and agents themselves.
    *EXAMPLE_APPS,
    # Last: its package makes its Celery app the current one (the example's does too).
    "tests.testapp",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The reviewer's language from Accept-Language (after the session, before common).
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "tests.testapp.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
WSGI_APPLICATION = None
ASGI_APPLICATION = "tests.testapp.asgi.application"

DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    # A small pool per process, as a deployment under ASGI keeps (DB_POOL=0 turns it off; a
    # CONN_MAX_AGE above 0 replaces it); the Celery workers keep theirs (CELERY_DB_REUSE_MAX).
    _conn_max_age = int(os.environ.get("CONN_MAX_AGE", "0"))
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=_conn_max_age)}
    if (os.environ.get("DB_POOL", "1") == "1" and not _conn_max_age
            and DATABASES["default"]["ENGINE"].endswith("postgresql")):
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": 1, "max_size": int(os.environ.get("DB_POOL_MAX_SIZE", "10"))}
        DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("SQLITE_PATH", str(BASE_DIR / "demo.sqlite3")),
            # IMMEDIATE takes the write lock at BEGIN, so two writers queue instead of
            # failing; the timeout lets threads and processes share the file.
            "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20},
            # The test database is a file, as in a deployment, not Django's shared-cache
            # in-memory default: shared-cache connections fail at once with "database table
            # is locked" instead of waiting, so threaded tests would test that cache, not
            # the claims.
            "TEST": {"NAME": os.environ.get("SQLITE_TEST_PATH") or os.path.join(
                tempfile.gettempdir(), f"symfonic-test-{os.getpid()}.sqlite3")},
        }
    }

REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # Read longer than the layer blocks in BZPOPMIN (django/channels_redis#422).
            "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 15}]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# The API's rate limits are counted in the default cache: shared by every process on Redis.
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                          "LOCATION": REDIS_URL, "KEY_PREFIX": "symfonic-tests"}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "memory://")
CELERY_BROKER_TRANSPORT_OPTIONS = {"polling_interval": 0.01}
if CELERY_BROKER_URL.startswith("redis"):
    # An unacknowledged message (its worker was SIGKILLed) comes back within minutes.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", "300"))}
CELERY_DB_REUSE_MAX = int(os.environ.get(
    "CELERY_DB_REUSE_MAX", "1000" if DATABASE_URL else "0")) or None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_BEAT_SCHEDULE = {
    "symfonic-expire-pauses": {"task": "symfonic_django.expire_pauses", "schedule": 30.0},
    "symfonic-reap-stale-runs": {"task": "symfonic_django.reap_stale_runs", "schedule": 30.0},
    "symfonic-requeue-stalled-runs": {"task": "symfonic_django.requeue_stalled_runs",
                                      "schedule": 15.0},
    "symfonic-prune": {"task": "symfonic_django.prune", "schedule": 3600.0},
    "symfonic-send-due-notifications": {"task": "symfonic_django.send_due_notifications",
                                        "schedule": 60.0},
    "symfonic-send-reminders": {"task": "symfonic_django.send_reminders", "schedule": 60.0},
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_THROTTLE_RATES": {"symfonic_resume": os.environ.get("SYMFONIC_RESUME_RATE", "120/min")},
    "NUM_PROXIES": int(os.environ.get("NUM_PROXIES", "0")),
}
SPECTACULAR_SETTINGS = {
    "TITLE": "symfonic_django API",
    "DESCRIPTION": "Durable human pauses for agent runs: review, answer, resume, watch.",
    "VERSION": "1",
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

AGENTS = {
    "refund": "tests.testapp.agents.refund_agent",
    "slow_refund": "tests.testapp.agents.slow_refund_agent",
    "shipping": "tests.testapp.agents.shipping_agent",
    "echo": "tests.agents.echo_agent",
    "question": "tests.agents.question_agent",
    "siblings": "tests.agents.siblings_agent",
    "boom": "tests.agents.boom_agent",
    "slow": "tests.agents.slow_agent",
    "asks_then_fails_once": "tests.agents.asks_then_fails_once_agent",
    "forged": "tests.agents.forged_binding_agent",
    "noop": "tests.agents.noop_agent",
    "fenced": "tests.agents.fenced_agent",
    "stream": "tests.agents.stream_agent",
    "where": "tests.agents.where_agent",
    "scope": "tests.agents.scope_agent",
    "proposal": "tests.agents.proposal_agent",
}
# The LangGraph refund agent needs the [langgraph] extra.
if all(find_spec(package) for package in ("langgraph", "langchain", "langchain_core")):
    AGENTS["refund_graph"] = "tests.testapp.graph_agent.refund_graph"
# The Pydantic AI refund agent needs the [pydantic-ai] extra.
if find_spec("pydantic_ai"):
    AGENTS["refund_pydantic"] = "tests.testapp.pydantic_agent.refund_pydantic"
# The OpenAI Agents SDK refund agent needs the [openai-agents] extra.
if find_spec("agents") and find_spec("openai"):
    AGENTS["refund_openai"] = "tests.testapp.openai_refund.refund_openai"

SCOPES = "tests.testapp.scopes"
#: The four-eyes policy the tests that need it set (one approver unless a test asks).
TWO_APPROVERS_OVER_500 = "tests.testapp.approvals.two_approvers_over_500"
SYMFONIC = {
    "AGENTS": AGENTS,
    "SCOPE_KEY": f"{SCOPES}.tenant_key",
    "SCOPE_LOADER": f"{SCOPES}.load_tenant",
    "REVIEWER_SCOPES": f"{SCOPES}.reviewer_scopes",
    "REQUEST_SCOPE": f"{SCOPES}.request_tenant",
    # One approver unless a test asks for more (TWO_APPROVERS_OVER_500): other tests
    # approve refunds of any amount alone.
    "APPROVAL_POLICY": None,
    "LEASE_SECONDS": int(os.environ.get("SYMFONIC_LEASE_SECONDS", "60")),
    # Off unless asked for: a test database is made and dropped again and again, and a
    # worker process would keep serving a tenant row of a database that is gone.
    "SCOPE_CACHE_SECONDS": float(os.environ.get("SYMFONIC_SCOPE_CACHE_SECONDS", "0")),
    "ON_EXPIRE": os.environ.get("SYMFONIC_ON_EXPIRE", "fail"),
    "NOTIFY": {
        "SITE_URL": os.environ.get("SITE_URL", "http://127.0.0.1:8000"),
        "REVIEWER_EMAILS": f"{SCOPES}.reviewer_emails",
    },
}
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "25"))
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "reviews@example.com")

AUTH_PASSWORD_VALIDATORS: list[dict[str, str]] = []
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
LANGUAGE_CODE = "en-us"
LANGUAGES = [("en", "English"), ("fr", "Français")]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGIN_URL = "/admin/login/"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"symfonic_django": {"handlers": ["console"], "level": "WARNING"}},
}
