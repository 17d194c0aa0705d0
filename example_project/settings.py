"""Settings of the example project, read from the environment.

With no ``DATABASE_URL``, ``REDIS_URL`` or ``CELERY_BROKER_URL`` it runs
embedded: SQLite, the in-memory channel layer and an in-process Celery worker
on the in-memory transport. With them set it is a real deployment.
"""

import os
from importlib.util import find_spec
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent

# The demo (`make demo`, `make smoke`, the test suite) says so with SYMFONIC_DEMO=1: it then
# runs with DEBUG on and a built-in key. Anything else is a deployment, which must bring its
# own SECRET_KEY (anyone can sign pause tokens with a public one) and runs with DEBUG off
# unless it asks: a crash page shows the settings, broker URLs included, to whoever caused it.
DEMO = os.environ.get("SYMFONIC_DEMO", "") == "1"
#: Public, so never a deployment's: Django's own prefix makes `check --deploy` flag it too.
DEMO_SECRET_KEY = "django-insecure-symfonic-demo-only-" + "x" * 32
# Outside the demo with no SECRET_KEY there is no key at all. Commands that sign nothing
# still run (migrate, makemigrations, check); the server and the workers refuse to start
# (asgi.py and celery.py call secret.require_secret_key); anything else that would sign
# stops at Django's own "The SECRET_KEY setting must not be empty".
SECRET_KEY = os.environ.get("SECRET_KEY", "") or (DEMO_SECRET_KEY if DEMO else "")
SECRET_KEY_FALLBACKS = [k for k in os.environ.get("SECRET_KEY_FALLBACKS", "").split(",") if k]
DEBUG = os.environ.get("DEBUG", "1" if DEMO else "0") == "1"
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
    "drf_spectacular_sidecar",  # Swagger UI and Redoc as static files: the docs pages work offline
    "channels",
    "symfonic_django",
    "example_project.shop",
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

ROOT_URLCONF = "example_project.urls"
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
ASGI_APPLICATION = "example_project.asgi.application"

DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    # A new PostgreSQL connection per request, task or websocket costs more than the work of
    # most of them. Under ASGI, Django advises a pool rather than persistent connections
    # (CONN_MAX_AGE): each process keeps a small one (DB_POOL=0 turns it off; a CONN_MAX_AGE
    # above 0 replaces it). The Celery workers keep theirs: CELERY_DB_REUSE_MAX below.
    _conn_max_age = int(os.environ.get("CONN_MAX_AGE", "0"))
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=_conn_max_age)}
    if (os.environ.get("DB_POOL", "1") == "1" and not _conn_max_age
            and DATABASES["default"]["ENGINE"].endswith("postgresql")):
        DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
            "min_size": 1, "max_size": int(os.environ.get("DB_POOL_MAX_SIZE", "10"))}
        # Django then checks each connection as the pool hands it out: one the server ended
        # (a restart, a failover) is replaced, not handed to the request or turn.
        DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("SQLITE_PATH", str(BASE_DIR / "demo.sqlite3")),
            # IMMEDIATE takes the write lock at BEGIN, so two writers queue instead of
            # failing; the timeout lets the embedded worker and the server share the file.
            "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20},
            "TEST": {"NAME": os.environ.get("SQLITE_TEST_PATH", "")} if os.environ.get(
                "SQLITE_TEST_PATH") else {},
        }
    }

REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py 8 reads with a 5 s socket timeout by default, the very time the
            # layer blocks in BZPOPMIN: every idle websocket consumer would die with
            # "Timeout reading" (django/channels_redis#422). Read longer than it blocks.
            "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 15}]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# The API's rate limits are counted in the default cache (SYMFONIC["THROTTLE_CACHE"]): every
# server process must share it, or each grants a budget of its own (check W007). Django
# ships the Redis backend; without Redis the demo keeps them in its one process.
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                          "LOCATION": REDIS_URL, "KEY_PREFIX": "symfonic-example"}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "memory://")
# At its default the memory transport polls once a second; the demo would crawl.
CELERY_BROKER_TRANSPORT_OPTIONS = {"polling_interval": 0.01}
if CELERY_BROKER_URL.startswith("redis"):
    # On Redis an unacknowledged message (its worker was SIGKILLed) comes back only after
    # the visibility timeout, an hour by default. Redelivery is harmless here (the run claim
    # refuses a run that is not queued), so bring it back within minutes.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", "300"))}
# Celery's Django fixup closes the database connection around every task whatever
# CONN_MAX_AGE says; this keeps it for that many tasks instead (0: a new one each time).
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
    # How many proxies stand in front of daphne. 0: clients connect directly, and a client's
    # X-Forwarded-For is ignored (with DRF's default, None, it would pick its own address).
    "NUM_PROXIES": int(os.environ.get("NUM_PROXIES", "0")),
}
SPECTACULAR_SETTINGS = {
    "TITLE": "symfonic_django API",
    "DESCRIPTION": "Durable human pauses for agent runs: review, answer, resume, watch.",
    "VERSION": "1",
    "COMPONENT_SPLIT_REQUEST": True,
    # /api/symfonic/schema/swagger-ui/ and redoc/ load these from drf_spectacular_sidecar's
    # static files, not from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

AGENTS = {
    "refund": "example_project.agents.refund_agent",
    # The same refund, its confirmation streamed over seconds: a turn to watch in the viewer.
    "slow_refund": "example_project.agents.slow_refund_agent",
    # Asks a question (which carrier), where refund asks an approval.
    "shipping": "example_project.agents.shipping_agent",
}
# The LangGraph refund agent needs the [langgraph] extra; without it the example runs the
# plain agent alone.
if all(find_spec(package) for package in ("langgraph", "langchain", "langchain_core")):
    AGENTS["refund_graph"] = "example_project.graph_agent.refund_graph"
# The Pydantic AI refund agent needs the [pydantic-ai] extra.
if find_spec("pydantic_ai"):
    AGENTS["refund_pydantic"] = "example_project.pydantic_agent.refund_pydantic"
# The OpenAI Agents SDK refund agent needs the [openai-agents] extra.
if find_spec("agents") and find_spec("openai"):
    AGENTS["refund_openai"] = "example_project.openai_refund.refund_openai"

SYMFONIC = {
    "AGENTS": AGENTS,
    "SCOPE_KEY": "example_project.shop.scopes.tenant_key",
    "SCOPE_LOADER": "example_project.shop.scopes.load_tenant",
    "REVIEWER_SCOPES": "example_project.shop.scopes.reviewer_scopes",
    "REQUEST_SCOPE": "example_project.shop.scopes.request_tenant",
    # Four eyes: a refund over 500 needs two distinct approvers (docs/design.md section 3).
    "APPROVAL_POLICY": "example_project.shop.approvals.two_approvers_over_500",
    "LEASE_SECONDS": int(os.environ.get("SYMFONIC_LEASE_SECONDS", "60")),
    # A worker keeps a tenant it loaded for a turn this long for the next turns of that
    # tenant, instead of a query per turn; 0 loads it every time.
    "SCOPE_CACHE_SECONDS": float(os.environ.get("SYMFONIC_SCOPE_CACHE_SECONDS", "10")),
    "ON_EXPIRE": os.environ.get("SYMFONIC_ON_EXPIRE", "fail"),
    # Reviewers of a tenant (Membership, with an email address) are emailed when a pause of
    # it is requested, with a link to its page here; never with its token (docs/notifications.md).
    "NOTIFY": {
        "SITE_URL": os.environ.get("SITE_URL", "http://127.0.0.1:8000" if DEMO else ""),
        "REVIEWER_EMAILS": "example_project.shop.scopes.reviewer_emails",
    },
}
# The demo prints its emails to the console; a deployment names its SMTP server
# (EMAIL_HOST, EMAIL_PORT, ...: Django's settings) or another backend.
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend"
                               if DEMO else "django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "25"))
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "reviews@example.com")

AUTH_PASSWORD_VALIDATORS = []
LANGUAGE_CODE = "en-us"
# The languages the app ships (symfonic_django/locale/); English stays the default.
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
