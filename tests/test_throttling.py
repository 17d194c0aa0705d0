"""Rate limits that hold (finding 5): the address a client cannot forge, a cache every
process shares, and a per-pause budget of failed tokens.

Before: each new ``X-Forwarded-For`` value got a fresh ``resume/`` budget (DRF's
default ``NUM_PROXIES = None`` takes the header as the address), and the budget
lived in each process's memory, so every daphne process granted its own.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.cache import caches
from django.test import override_settings
from rest_framework.test import APIClient

from symfonic_django.models import Decision, Pause, PauseStatus
from symfonic_django.pauses import token_for

from .api import conftest as live
from .conftest import flushed_redis_db, paused_run, snapshot

pytestmark = pytest.mark.django_db

API = "/api/symfonic/"
APPROVE = {"decisions": [{"type": "approve"}]}
#: This file's Redis database: the shared cache of the multi-process test.
CACHE_DB = 10


@pytest.fixture(autouse=True)
def fresh_counts() -> Iterator[None]:
    caches["default"].clear()
    yield
    caches["default"].clear()


def rate(value: str, **extra: Any) -> Any:
    return override_settings(REST_FRAMEWORK={
        **django_settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"symfonic_resume": value},
        **extra})


def resume(token: str, **headers: str) -> Any:
    return APIClient().post(f"{API}resume/", {"token": token, "answer": APPROVE}, format="json",
                            **headers)


def forged(pause: Pause) -> str:
    """The pause's own token with its signature changed: names the pause, never verifies."""
    token = token_for(pause)
    value, _, signature = token.rpartition(":")
    return f"{value}:{'A' if signature[0] != 'A' else 'B'}{signature[1:]}"


def code(response: Any) -> tuple[int, str]:
    return response.status_code, response.json().get("code", "")


def test_a_fresh_x_forwarded_for_gets_no_fresh_budget(tenants):
    _, pause = paused_run()
    before = snapshot(pause)
    with rate("2/min"):
        assert code(resume("not-a-token", HTTP_X_FORWARDED_FOR="10.0.0.1")) == (
            403, "invalid_token")
        assert code(resume("not-a-token", HTTP_X_FORWARDED_FOR="10.0.0.2")) == (
            403, "invalid_token")
        third = resume(token_for(pause), HTTP_X_FORWARDED_FOR="10.0.0.3")
    assert code(third) == (429, "throttled") and int(third["Retry-After"]) > 0
    assert snapshot(pause) == before


def test_behind_one_proxy_the_address_is_the_one_the_proxy_saw(tenants):
    # NUM_PROXIES = 1: the proxy appends the address it saw; whatever a client wrote
    # before it is the client's own text and changes nothing.
    with rate("2/min", NUM_PROXIES=1):
        for spoof in ("1.1.1.1", "2.2.2.2"):
            response = resume("not-a-token", HTTP_X_FORWARDED_FOR=f"{spoof}, 203.0.113.7")
            assert code(response) == (403, "invalid_token")
        spoofed = resume("not-a-token", HTTP_X_FORWARDED_FOR="3.3.3.3, 203.0.113.7")
        neighbour = resume("not-a-token", HTTP_X_FORWARDED_FOR="203.0.113.8")
    assert code(spoofed) == (429, "throttled")
    assert code(neighbour) == (403, "invalid_token")  # another client has its own budget


@pytest.fixture
def three_failures(settings: Any) -> None:
    settings.SYMFONIC = {**settings.SYMFONIC, "TOKEN_FAILURE_LIMIT": 3,
                         "TOKEN_FAILURE_WINDOW": 600}


def test_failed_tokens_for_one_pause_from_many_addresses_are_throttled(tenants, three_failures):
    _, pause = paused_run()
    _, other = paused_run()
    before = snapshot(pause)
    with rate("1000/min"):
        for i in range(3):
            response = resume(forged(pause), REMOTE_ADDR=f"198.51.100.{i}")
            assert code(response) == (403, "invalid_token")
        fourth = resume(forged(pause), REMOTE_ADDR="198.51.100.99")
        assert code(fourth) == (429, "throttled") and fourth["Retry-After"] == "600"
        assert snapshot(pause) == before
        # The budget is the pause's: another pause's forgeries are still just invalid...
        assert code(resume(forged(other), REMOTE_ADDR="198.51.100.99")) == (403, "invalid_token")
        # ...and the pause's rightful holder is not locked out by someone else's forgeries.
        answered = resume(token_for(pause), REMOTE_ADDR="198.51.100.99")
    assert answered.status_code == 202, answered.json()
    assert Pause.objects.get(pk=pause.pk).status == PauseStatus.ANSWERED
    assert Decision.objects.filter(pause=pause).count() == 1


def test_an_answer_refused_on_its_merits_is_not_a_failed_token(tenants, three_failures):
    _, pause = paused_run()
    with rate("1000/min"):
        for _ in range(5):  # the token is good; the answer is not
            response = APIClient().post(f"{API}resume/", {"token": token_for(pause),
                                                          "answer": {"decisions": []}},
                                        format="json")
            assert code(response) == (400, "invalid_answer")
        assert code(resume(forged(pause))) == (403, "invalid_token")


def test_a_throttle_cache_that_is_down_does_not_stop_answers(tenants, settings):
    """Counting fails open: answering pauses matters more, and the signature still guards."""
    settings.CACHES = {**settings.CACHES, "down": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": f"redis://127.0.0.1:{live.free_port()}/0"}}  # nothing listens there
    settings.SYMFONIC = {**settings.SYMFONIC, "THROTTLE_CACHE": "down"}
    _, pause = paused_run()
    with rate("1/min"):
        assert code(resume(forged(pause))) == (403, "invalid_token")
        assert code(resume(forged(pause))) == (403, "invalid_token")
        assert resume(token_for(pause)).status_code == 202


# --- the limits live in a cache every process shares ---------------------------------------

@pytest.fixture
def shared_cache(redis_url: str) -> Iterator[str]:
    with flushed_redis_db(redis_url, CACHE_DB) as url:
        yield url


@pytest.fixture
def two_servers(transactional_db: Any, tmp_path: Path) -> Iterator[Any]:
    started: list[live.LiveServer] = []

    def start(**env: str) -> live.LiveServer:
        server = live.start_server(tmp_path / f"daphne-{len(started)}.log",
                                   broker_url="memory://", SYMFONIC_RESUME_RATE="2/min", **env)
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.stop()


def post_resume(server: live.LiveServer, token: str) -> tuple[int, str]:
    request = urllib.request.Request(
        f"{server.url}{API}resume/", json.dumps({"token": token, "answer": APPROVE}).encode(),
        headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, ""
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())["code"]


@pytest.mark.postgres
@pytest.mark.services
def test_two_server_processes_share_one_budget_through_redis(tenants, two_servers, shared_cache):
    _, pause = paused_run()
    before = snapshot(pause)
    first, second = two_servers(REDIS_URL=shared_cache), two_servers(REDIS_URL=shared_cache)
    assert post_resume(first, "not-a-token") == (403, "invalid_token")
    assert post_resume(second, "not-a-token") == (403, "invalid_token")
    assert post_resume(first, token_for(pause)) == (429, "throttled")
    assert post_resume(second, token_for(pause)) == (429, "throttled")
    assert snapshot(pause) == before


@pytest.mark.postgres
@pytest.mark.services
def test_a_per_process_cache_gives_each_process_its_own_budget(tenants, two_servers):
    """What check W007 warns about: without a shared cache the limit multiplies."""
    first, second = two_servers(), two_servers()
    assert [post_resume(first, "not-a-token") for _ in range(2)] == [(403, "invalid_token")] * 2
    assert post_resume(first, "not-a-token") == (429, "throttled")
    assert post_resume(second, "not-a-token") == (403, "invalid_token")  # a fresh budget
