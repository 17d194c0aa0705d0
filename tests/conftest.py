"""Shared fixtures. Tests marked ``postgres`` need PostgreSQL: outside it they
skip locally and fail under CI, never counting a skipped suite as passing."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.conf import settings

from symfonic_django.models import Pause, Run
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run

IN_CI = bool(os.environ.get("CI"))


def _is_postgres() -> bool:
    return settings.DATABASES["default"]["ENGINE"].endswith("postgresql")


def pytest_runtest_setup(item: Any) -> None:
    if item.get_closest_marker("postgres") and not _is_postgres():
        need(False, "needs PostgreSQL (set DATABASE_URL=postgres://...)")


def need(condition: bool, why: str) -> None:
    """Skip locally, fail under CI, when a real service is missing."""
    if not condition:
        if IN_CI:
            pytest.fail(f"required service missing under CI: {why}")
        pytest.skip(why)


@pytest.fixture(autouse=True)
def _forget_process_caches() -> Any:
    """Each test starts with nothing a process keeps between requests or turns."""
    from symfonic_django.scopes import clear_scope_cache

    clear_scope_cache()
    yield
    clear_scope_cache()


# --- the package's limits, lowered for one test ---------------------------------------------
# Each fixture names, once, the module a limit is read from: a test asks for the fixture and
# sets the value (``exact_count_up_to(10)``); monkeypatch restores it after the test. When a
# limit moves to another module, the line here changes and the tests do not.

def _setter(monkeypatch: pytest.MonkeyPatch, target: str) -> Callable[[Any], Any]:
    def set_to(value: Any) -> Any:
        monkeypatch.setattr(target, value)
        return value

    return set_to


@pytest.fixture
def exact_count_up_to(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], int]:
    """How many rows the admin's lists and inbox count exactly before they estimate."""
    return _setter(monkeypatch, "symfonic_django.admin.pagination.EXACT_COUNT_UP_TO")


@pytest.fixture
def bulk_limit(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], int]:
    """How many pauses one bulk decision of the admin may answer."""
    return _setter(monkeypatch, "symfonic_django.admin.bulk.BULK_LIMIT")


@pytest.fixture
def page_events(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], int]:
    """How many events one websocket connection carries."""
    return _setter(monkeypatch, "symfonic_django.consumers.stream.PAGE_EVENTS")


@pytest.fixture
def page_bytes(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], int]:
    """How many bytes of events one websocket connection carries."""
    return _setter(monkeypatch, "symfonic_django.consumers.stream.PAGE_BYTES")


@pytest.fixture
def poll_interval(monkeypatch: pytest.MonkeyPatch) -> Callable[[float], float]:
    """How often a websocket consumer polls for events when no doorbell rings."""
    return _setter(monkeypatch, "symfonic_django.consumers.stream.POLL_INTERVAL")


@pytest.fixture
def access_recheck_seconds(monkeypatch: pytest.MonkeyPatch) -> Callable[[float], float]:
    """How long a websocket consumer trusts its reader's access before it checks again."""
    return _setter(monkeypatch, "symfonic_django.consumers.stream.ACCESS_RECHECK_SECONDS")


@pytest.fixture
def turn_scopes_max(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], int]:
    """How many scopes a worker's scope cache keeps before it starts over."""
    return _setter(monkeypatch, "symfonic_django.scopes.TURN_SCOPES_MAX")


@pytest.fixture
def threads_per_lookup(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], int]:
    """How many checkpoint threads pruning looks up at a time."""
    return _setter(monkeypatch, "symfonic_django.retention.THREADS_PER_LOOKUP")


@contextmanager
def flushed_redis_db(redis_url: str, db: int) -> Iterator[str]:
    """The URL of database ``db`` on ``redis_url``'s server, empty before and after."""
    import redis

    parts = urlsplit(redis_url)
    url = urlunsplit((parts.scheme, parts.netloc, f"/{db}", "", ""))
    client = redis.Redis.from_url(url)
    client.flushdb()
    try:
        yield url
    finally:
        client.flushdb()


@pytest.fixture
def redis_url() -> str:
    import redis

    url = os.environ.get("SYMFONIC_TEST_REDIS_URL", "redis://127.0.0.1:6379/9")
    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except Exception as exc:  # noqa: BLE001
        need(False, f"Redis at {url} is not reachable: {exc}")
    return url


@pytest.fixture
def tenants(db: Any) -> dict[str, Any]:
    from tests.testapp.models import Tenant

    return {slug: Tenant.objects.get_or_create(slug=slug, defaults={"name": slug.title()})[0]
            for slug in ("acme", "globex")}


@pytest.fixture
def users(tenants: dict[str, Any]) -> dict[str, Any]:
    """The test app's reviewers: admin, alice (of acme) and bob (of globex), with their
    passwords and tokens (``tests.testapp.seed``)."""
    from tests.testapp.seed import seed_users

    return seed_users()


def snapshot(pause: Pause) -> dict[str, Any]:
    """Every column of a pause row, to assert a refusal changed nothing."""
    return dict(Pause.objects.filter(pk=pause.pk).values().get())


def paused_run(agent: str = "echo", input: Any = None, scope: str = "acme") -> tuple[Run, Pause]:
    """Run a turn in-process until it pauses; return the run and its (first) pause."""
    run = start_run(agent, input or {}, scope=scope, dispatch=False)
    assert execute_run(run.pk) == "paused"
    run.refresh_from_db()
    return run, Pause.objects.filter(run=run).order_by("created_at").first()
