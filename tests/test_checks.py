"""System checks (docs/design.md section 7, rule C12): the exact messages, by id, per misconfiguration.

Each test calls the check functions directly under ``override_settings`` and
compares the whole list, so a new, missing or reworded message fails here.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from celery import Celery, current_app
from django.conf import settings
from django.core.checks import Error, Warning, run_checks
from django.test import override_settings

from symfonic_django import tasks  # noqa: F401  (registers the tasks on the current app)
from symfonic_django.checks import (
    CELERY_WIRING,
    check_api_limits,
    check_celery,
    check_celery_broker,
    check_channel_layer,
    check_debug_with_a_real_database,
    check_num_proxies,
    check_schema_class,
    check_settings,
    check_sqlite_in_production,
    check_throttle_cache,
)
from symfonic_django.conf import DEFAULTS
from tests.testapp.celery import app as testapp_celery_app

KNOWN_KEYS = ", ".join(sorted(DEFAULTS))
IN_MEMORY_LAYER = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
REDIS_LAYER = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer",
                           "CONFIG": {"hosts": ["redis://127.0.0.1:6379/0"]}}}
SQLITE = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": "db.sqlite3"}}
POSTGRES = {"default": {"ENGINE": "django.db.backends.postgresql", "NAME": "app"}}
REDIS_CACHE = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                           "LOCATION": "redis://127.0.0.1:6379/0"}}
LOCMEM_CACHE = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
DUMMY_CACHE = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}

# Overriding DATABASES only changes what the deploy check reads; no query runs.
database_override = pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")


def all_checks() -> list:
    return (check_settings() + check_celery() + check_celery_broker() + check_channel_layer()
            + check_schema_class() + check_sqlite_in_production() + check_api_limits()
            + check_throttle_cache() + check_num_proxies())


@database_override
@override_settings(SYMFONIC={}, CHANNEL_LAYERS=REDIS_LAYER, CACHES=REDIS_CACHE,
                   CELERY_BROKER_URL="redis://127.0.0.1:6379/1", DATABASES=POSTGRES)
def test_clean_settings_give_no_message():
    assert all_checks() == []


def test_the_test_settings_are_clean():
    assert check_settings() == [] and check_celery() == [] and check_channel_layer() == []
    assert check_celery_broker() == [] and check_schema_class() == []
    assert check_api_limits() == [] and check_throttle_cache() == [] and check_num_proxies() == []


@override_settings(SYMFONIC={
    "AGENTS": {"refund": "tests.testapp.agents.refund_agent", "inline": lambda scope: None},
    "SCOPE_KEY": "tests.testapp.scopes.tenant_key",
    "SCOPE_FOR_CLAIMS": lambda claims: None, "OWNER_GUARD": None, "ADMISSION": None,
    "REQUEST_SCOPE": None, "TOKEN_MAX_AGE": 60, "LEASE_SECONDS": 5, "MAX_ANSWER_BYTES": 1,
    "ON_EXPIRE": "resume", "MAX_JSON_DEPTH": 100, "THROTTLE_CACHE": "default",
    "TOKEN_FAILURE_LIMIT": 1, "TOKEN_FAILURE_WINDOW": 1})
def test_every_known_key_with_a_valid_value_is_accepted():
    assert check_settings() == [] and check_api_limits() == []


@override_settings(SYMFONIC={"CHECKPOINT_PATH": "/var/lib/agent/checkpoints.db"})
def test_legacy_checkpoint_path_is_an_error_that_names_its_replacement():
    assert check_settings() == [Error(
        "SYMFONIC['CHECKPOINT_PATH'] is not a setting of symfonic_django; it would be "
        "accepted and do nothing.",
        hint="Remove it: scope resolution is the explicit SCOPE_FOR_CLAIMS route, a callable "
             "(PauseClaims -> scope | None).",
        id="symfonic_django.E001")]


@override_settings(SYMFONIC={"LEASE_SECOND": 30, "AGENT": {}})
def test_unknown_keys_are_errors_listing_the_known_keys():
    assert check_settings() == [
        Error("SYMFONIC['AGENT'] is not a setting of symfonic_django; it would be accepted "
              "and do nothing.", hint=f"Known keys: {KNOWN_KEYS}.", id="symfonic_django.E001"),
        Error("SYMFONIC['LEASE_SECOND'] is not a setting of symfonic_django; it would be "
              "accepted and do nothing.", hint=f"Known keys: {KNOWN_KEYS}.",
              id="symfonic_django.E001"),
    ]


@override_settings(SYMFONIC={"SCOPE_LOADER": "nope.load_tenant",
                             "AGENTS": {"refund": "tests.agents.missing_agent"}})
def test_unimportable_paths_are_errors():
    assert check_settings() == [
        Error("SYMFONIC['AGENTS']['refund'] = 'tests.agents.missing_agent' cannot be imported: "
              'Module "tests.agents" does not define a "missing_agent" attribute/class',
              hint="Give the dotted path of a callable.", id="symfonic_django.E002"),
        Error("SYMFONIC['SCOPE_LOADER'] = 'nope.load_tenant' cannot be imported: "
              "No module named 'nope'",
              hint="Give the dotted path of a callable.", id="symfonic_django.E002"),
    ]


@override_settings(SYMFONIC={"ON_EXPIRE": "retry", "LEASE_SECONDS": 0})
def test_bad_on_expire_and_lease_values_are_errors():
    assert check_settings() == [
        Error("SYMFONIC['LEASE_SECONDS'] must be a positive integer, not 0.",
              hint="The default is 60.", id="symfonic_django.E003"),
        Error("SYMFONIC['ON_EXPIRE'] must be 'fail' or 'resume', not 'retry'.",
              hint="'fail' (the default) fails the paused run; 'resume' resumes it with a "
                   "recorded timeout answer.", id="symfonic_django.E003"),
    ]


@override_settings(SYMFONIC={"TOKEN_MAX_AGE": "3600", "MAX_ANSWER_BYTES": True})
def test_numbers_of_the_wrong_type_are_errors():
    assert check_settings() == [
        Error("SYMFONIC['TOKEN_MAX_AGE'] must be a positive integer, not '3600'.",
              hint="The default is 86400.", id="symfonic_django.E003"),
        Error("SYMFONIC['MAX_ANSWER_BYTES'] must be a positive integer, not True.",
              hint="The default is 65536.", id="symfonic_django.E003"),
    ]


@override_settings(SYMFONIC={"IDEMPOTENCY_RETENTION": 0, "EVENT_RETENTION": "30d"})
def test_retention_values_that_prune_could_not_use_are_errors():
    assert check_settings() == [
        Error("SYMFONIC['IDEMPOTENCY_RETENTION'] must be a positive integer, not 0.",
              hint="The default is 86400.", id="symfonic_django.E003"),
        Error("SYMFONIC['EVENT_RETENTION'] must be None (keep events for ever) or a positive "
              "integer of seconds, not '30d'.",
              hint="The default, None, keeps the events of finished runs for ever.",
              id="symfonic_django.E003"),
    ]


@override_settings(SYMFONIC={"EVENT_RETENTION": 30 * 86400})
def test_an_event_retention_in_seconds_is_fine():
    assert check_settings() == []


@override_settings(SYMFONIC={"SCOPE_CACHE_SECONDS": -1})
def test_a_negative_scope_cache_is_an_error():
    assert check_settings() == [
        Error("SYMFONIC['SCOPE_CACHE_SECONDS'] must be a number of seconds, 0 or more, not -1.",
              hint="0 (the default) loads the scope for every turn.", id="symfonic_django.E003"),
    ]


@override_settings(SYMFONIC={"SCOPE_CACHE_SECONDS": "10"})
def test_a_scope_cache_that_is_not_a_number_is_an_error():
    assert [e.msg for e in check_settings()] == [
        "SYMFONIC['SCOPE_CACHE_SECONDS'] must be a number of seconds, 0 or more, not '10'."]


@override_settings(SYMFONIC={"SCOPE_FOR_CLAIMS": None, "ADMISSION": 3,
                             "AGENTS": {"refund": 42}})
def test_hooks_that_are_neither_paths_nor_callables_are_errors():
    assert check_settings() == [
        Error("SYMFONIC['ADMISSION'] must be a dotted path or a callable, not 3.",
              hint="The default is None.", id="symfonic_django.E003"),
        Error("SYMFONIC['SCOPE_FOR_CLAIMS'] must be a dotted path or a callable, not None.",
              hint="The default is 'symfonic_django.scopes.scope_for_claims'.",
              id="symfonic_django.E003"),
        Error("SYMFONIC['AGENTS'] must map agent names to dotted paths.",
              hint="For example {'refund': 'myapp.agents.refund_agent'}.",
              id="symfonic_django.E003"),
    ]


@override_settings(SYMFONIC=["AGENTS"])
def test_symfonic_that_is_not_a_dict_is_an_error():
    assert check_settings() == [Error("SYMFONIC must be a dict.",
                                      hint="Set SYMFONIC = {...} in settings.",
                                      id="symfonic_django.E003")]


def celery_error(task: str, missing: str) -> Error:
    return Error(
        f"Celery task {task} runs without {missing}; a worker that dies mid-turn would lose "
        "the continuation.",
        hint="Do not override acks_late / reject_on_worker_lost for symfonic_django tasks "
             "(task_annotations).", id="symfonic_django.E004")


@pytest.mark.parametrize("option", ["acks_late", "reject_on_worker_lost"])
def test_a_celery_task_without_acks_late_is_an_error(monkeypatch, option):
    monkeypatch.setattr(current_app.tasks["symfonic_django.run_continuation"], option, False)
    assert check_celery() == [celery_error("symfonic_django.run_continuation", option)]


def test_each_turn_task_is_checked(monkeypatch):
    for name in ("symfonic_django.start_run", "symfonic_django.run_continuation"):
        monkeypatch.setattr(current_app.tasks[name], "acks_late", False)
        monkeypatch.setattr(current_app.tasks[name], "reject_on_worker_lost", False)
    assert check_celery() == [
        celery_error("symfonic_django.start_run", "acks_late and reject_on_worker_lost"),
        celery_error("symfonic_django.run_continuation", "acks_late and reject_on_worker_lost"),
    ]


@override_settings(CHANNEL_LAYERS=IN_MEMORY_LAYER, CELERY_BROKER_URL="redis://127.0.0.1:6379/1")
def test_in_memory_layer_with_a_real_broker_is_a_warning():
    assert check_channel_layer() == [Warning(
        "The in-memory channel layer does not cross processes, but Celery workers run in "
        "other processes: watchers will see events only through the polling fallback.",
        hint="Use channels_redis.core.RedisChannelLayer in a multi-process deployment.",
        id="symfonic_django.W001")]


@pytest.mark.parametrize(("layers", "broker"), [
    (IN_MEMORY_LAYER, "memory://"), (REDIS_LAYER, "redis://127.0.0.1:6379/1"),
], ids=["embedded", "redis"])
def test_a_layer_that_matches_the_broker_is_fine(layers, broker):
    with override_settings(CHANNEL_LAYERS=layers, CELERY_BROKER_URL=broker):
        assert check_channel_layer() == []


@pytest.fixture
def bare_celery_app(monkeypatch: pytest.MonkeyPatch) -> Iterator[Celery]:
    """The current Celery app is one that reads no Django settings, as in a project without
    proj/celery.py or whose package does not import it; the test app's is current again
    afterwards."""
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    app = Celery("bare")  # a new app makes itself the current one
    try:
        yield app
    finally:
        testapp_celery_app.set_current()


@override_settings()
def test_no_broker_anywhere_is_a_warning(bare_celery_app: Celery) -> None:
    del settings.CELERY_BROKER_URL
    assert check_celery_broker() == [Warning(
        "No Celery broker is configured: start_run would send runs to Celery's default broker "
        "(AMQP on localhost) and they would stay queued.",
        hint="Set CELERY_BROKER_URL. Load a Celery app configured from Django's settings "
             "whenever Django starts: app.config_from_object('django.conf:settings', "
             "namespace='CELERY') in proj/celery.py, imported in proj/__init__.py (README, "
             "'Installing it in your project').",
        id="symfonic_django.W003")]


@override_settings(CELERY_BROKER_URL="redis://127.0.0.1:6379/1")
def test_a_broker_setting_no_celery_app_reads_is_a_warning(bare_celery_app: Celery) -> None:
    assert check_celery_broker() == [Warning(
        "CELERY_BROKER_URL is set, but the current Celery app does not read it: start_run "
        "would send runs to Celery's default broker (AMQP on localhost) and they would stay "
        "queued.", hint=CELERY_WIRING, id="symfonic_django.W004")]


@override_settings(CELERY_BROKER_URL="redis://127.0.0.1:6379/1")
def test_an_app_that_reads_the_settings_is_fine(bare_celery_app: Celery) -> None:
    bare_celery_app.config_from_object("django.conf:settings", namespace="CELERY")
    assert check_celery_broker() == []
    assert bare_celery_app.conf.broker_url == "redis://127.0.0.1:6379/1"


@override_settings()
def test_the_broker_environment_variable_celery_reads_is_fine(
        bare_celery_app: Celery, monkeypatch: pytest.MonkeyPatch) -> None:
    del settings.CELERY_BROKER_URL
    monkeypatch.setenv("CELERY_BROKER_URL", "redis://127.0.0.1:6379/1")
    assert check_celery_broker() == []


DRF_SCHEMA = {"DEFAULT_SCHEMA_CLASS": "rest_framework.schemas.openapi.AutoSchema"}
#: A URLconf without the API, for ROOT_URLCONF=__name__.
urlpatterns: list = []


@override_settings(REST_FRAMEWORK=DRF_SCHEMA)
def test_drfs_own_schema_class_with_the_api_mounted_is_a_warning() -> None:
    assert check_schema_class() == [Warning(
        "GET /api/symfonic/schema/ answers 500: the API's views are described with "
        "drf-spectacular, which needs its AutoSchema as DRF's DEFAULT_SCHEMA_CLASS, not "
        "rest_framework.schemas.openapi.AutoSchema.",
        hint="Set REST_FRAMEWORK['DEFAULT_SCHEMA_CLASS'] = "
             "'drf_spectacular.openapi.AutoSchema' (or a subclass of it).",
        id="symfonic_django.W005")]


@override_settings(REST_FRAMEWORK=DRF_SCHEMA, ROOT_URLCONF=__name__)
def test_any_schema_class_is_fine_when_the_api_is_not_mounted() -> None:
    assert check_schema_class() == []


SQLITE_WARNING = Warning(
    "SQLite has no row locks: claims stay single-winner, but concurrent reviewers and "
    "workers serialize on one database lock.", hint="Deploy on PostgreSQL.",
    id="symfonic_django.W002")


@database_override
@override_settings(DATABASES=SQLITE)
def test_sqlite_in_production_is_a_warning_under_deploy_checks_only():
    assert check_sqlite_in_production() == [SQLITE_WARNING]
    deploy = run_checks(tags=["database"], include_deployment_checks=True)
    assert [m for m in deploy if m.id.startswith("symfonic_django.")] == [SQLITE_WARNING]
    assert [m for m in run_checks(tags=["database"])
            if m.id.startswith("symfonic_django.")] == []


@database_override
@override_settings(DATABASES=POSTGRES)
def test_postgresql_in_production_is_fine():
    assert check_sqlite_in_production() == []


DEBUG_WARNING = Warning(
    "DEBUG is on while the database is not the embedded SQLite: a crash page would show this "
    "deployment's settings, and the pauses' data, to whoever caused it.",
    hint="Set DEBUG = False outside local development.", id="symfonic_django.W006")


@database_override
@override_settings(DEBUG=True, DATABASES=POSTGRES)
def test_debug_with_a_real_database_is_a_deploy_warning():
    assert check_debug_with_a_real_database() == [DEBUG_WARNING]
    deploy = run_checks(tags=["security"], include_deployment_checks=True)
    assert DEBUG_WARNING in deploy
    assert DEBUG_WARNING not in run_checks(tags=["security"])


@database_override
@pytest.mark.parametrize(("debug", "databases"), [(False, POSTGRES), (True, SQLITE)])
def test_debug_off_or_the_embedded_database_is_fine(debug, databases):
    with override_settings(DEBUG=debug, DATABASES=databases):
        assert check_debug_with_a_real_database() == []



# --- the API's limits: depth, throttle cache, failed tokens, client address ----------------

@override_settings(SYMFONIC={"MAX_JSON_DEPTH": "32", "TOKEN_FAILURE_LIMIT": 0,
                             "TOKEN_FAILURE_WINDOW": True, "THROTTLE_CACHE": "throttle"})
def test_api_limits_of_the_wrong_type_or_range_are_errors():
    assert check_api_limits() == [
        Error("SYMFONIC['MAX_JSON_DEPTH'] must be a whole number of at least 2, not '32'.",
              hint="The default is 32.", id="symfonic_django.E003"),
        Error("SYMFONIC['TOKEN_FAILURE_LIMIT'] must be a whole number of at least 1, not 0.",
              hint="The default is 10.", id="symfonic_django.E003"),
        Error("SYMFONIC['TOKEN_FAILURE_WINDOW'] must be a whole number of at least 1, not True.",
              hint="The default is 900.", id="symfonic_django.E003"),
        Error("SYMFONIC['THROTTLE_CACHE'] = 'throttle' is not an alias in CACHES.",
              hint="Name one of ['default']; the default is 'default'.",
              id="symfonic_django.E003"),
    ]


@override_settings(SYMFONIC={"MAX_JSON_DEPTH": 1000})
def test_a_json_depth_schema_validation_cannot_follow_is_an_error():
    assert check_api_limits() == [Error(
        "SYMFONIC['MAX_JSON_DEPTH'] = 1000 lets a request nest deeper than schema validation "
        "can follow without exhausting Python's recursion limit.",
        hint="Keep it at most 100; the default is 32.", id="symfonic_django.E003")]


def throttle_warning(backend: str, where: str) -> Warning:
    return Warning(
        f"The cache the API's rate limits are counted in (CACHES['default'], {backend}) "
        f"{where}.",
        hint="Count them in a cache every process shares: "
             "django.core.cache.backends.redis.RedisCache, named by "
             "SYMFONIC['THROTTLE_CACHE'] (default 'default').",
        id="symfonic_django.W007")


@override_settings(CACHES=LOCMEM_CACHE, CELERY_BROKER_URL="redis://127.0.0.1:6379/1")
def test_a_per_process_throttle_cache_in_a_multi_process_deployment_is_a_warning():
    assert check_throttle_cache() == [throttle_warning(
        "LocMemCache", "is kept by each process for itself, so every server process grants a "
                       "budget of its own")]


@override_settings(CACHES=DUMMY_CACHE, CELERY_BROKER_URL="memory://")
def test_a_throttle_cache_that_counts_nothing_is_a_warning_anywhere():
    assert check_throttle_cache() == [throttle_warning(
        "DummyCache", "counts nothing, so resume/ is not rate limited at all")]


@pytest.mark.parametrize(("caches", "broker"), [
    (LOCMEM_CACHE, "memory://"), (REDIS_CACHE, "redis://127.0.0.1:6379/1"),
], ids=["embedded", "redis"])
def test_a_throttle_cache_that_matches_the_deployment_is_fine(caches, broker):
    with override_settings(CACHES=caches, CELERY_BROKER_URL=broker):
        assert check_throttle_cache() == []


@override_settings(CACHES={**LOCMEM_CACHE, "limits": REDIS_CACHE["default"]},
                   SYMFONIC={"THROTTLE_CACHE": "limits"},
                   CELERY_BROKER_URL="redis://127.0.0.1:6379/1")
def test_the_throttle_cache_is_the_one_throttle_cache_names():
    assert check_throttle_cache() == []


def test_num_proxies_unset_is_a_warning():
    with override_settings(REST_FRAMEWORK={
            k: v for k, v in settings.REST_FRAMEWORK.items() if k != "NUM_PROXIES"}):
        assert check_num_proxies() == [Warning(
            "REST_FRAMEWORK['NUM_PROXIES'] is not set, so DRF takes the client address from "
            "X-Forwarded-For, which any client can write: each new value gets a fresh resume/ "
            "rate limit.",
            hint="Set it to the number of proxies in front of the application server (0 when "
                 "clients connect directly).", id="symfonic_django.W008")]
    with override_settings(REST_FRAMEWORK={**settings.REST_FRAMEWORK, "NUM_PROXIES": 2}):
        assert check_num_proxies() == []
