"""``Idempotency-Key`` under concurrency, as the IETF httpapi draft and Stripe have it (finding 4).

Before: ten parallel requests with one key and one body got one 202 and nine
409 ``already_answered`` (each raced the first for the pause), and the same
key with another body replayed the first 202, dropping the new edit. Now the
key's record is committed before the work starts, so a duplicate sees it in
flight (409 ``idempotency_in_progress``) or finished (the original 202), and a
different body or path under the same key is a 422 ``idempotency_key_reused``.

The in-process tests hold the first request still inside a documented
deployment hook (``OWNER_GUARD``), so "in flight" is a fact, not a timing
accident. The real-HTTP tests release ten requests at once against a daphne
process on PostgreSQL, as ``tests/api/test_http_race.py`` does.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.utils import timezone
from rest_framework.test import APIClient

from symfonic_django.api.idempotency import IN_FLIGHT_SECONDS
from symfonic_django.models import Decision, IdempotentResponse, Pause, PauseStatus, Run
from symfonic_django.pauses import token_for
from tests.testapp.seed import seed_users

from .api import conftest as live
from .conftest import flushed_redis_db, paused_run, snapshot

pytestmark = pytest.mark.django_db(transaction=True)

API = "/api/symfonic/"
APPROVE = {"decisions": [{"type": "approve"}]}
PARALLEL = 10
#: The Redis database of this file's idle broker (tasks sent, never consumed).
BROKER_DB = 10


def rows(pause: Pause) -> dict[str, Any]:
    return {"pause": snapshot(pause), "decisions": Decision.objects.filter(pause=pause).count(),
            "continuations": Run.objects.filter(parent_id=pause.run_id).count()}


class HeldGuard:
    """An ``OWNER_GUARD`` that holds the first resume inside the redeem until released."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.calls = 0

    def __call__(self, scope: Any, session_id: str, thread_id: str, resuming: bool) -> None:
        self.calls += 1
        if self.calls == 1:
            self.entered.set()
            assert self.release.wait(30), "the test never released the first request"


@pytest.fixture
def held(settings: Any) -> Iterator[HeldGuard]:
    guard = HeldGuard()
    settings.SYMFONIC = {**settings.SYMFONIC, "OWNER_GUARD": guard}
    try:
        yield guard
    finally:
        guard.release.set()


def resume(body: dict[str, Any], key: str) -> Any:
    return APIClient().post(f"{API}resume/", body, format="json", HTTP_IDEMPOTENCY_KEY=key)


def in_background(call: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []

    def run() -> None:
        from django.db import connection

        try:
            out.append(call())
        finally:
            connection.close()  # this thread's own connection

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_a_duplicate_while_the_first_is_in_flight_is_409_then_the_original_202(tenants, held):
    _, pause = paused_run()
    body = {"token": token_for(pause), "answer": APPROVE}
    first, out = in_background(lambda: resume(body, "key-1"))
    assert held.entered.wait(30)
    before = rows(pause)

    duplicate = resume(body, "key-1")
    assert (duplicate.status_code, duplicate.json()["code"]) == (409, "idempotency_in_progress")
    edited = resume({**body, "answer": {"decisions": [{"type": "reject", "message": "no"}]}},
                    "key-1")
    assert (edited.status_code, edited.json()["code"]) == (422, "idempotency_key_reused")
    assert rows(pause) == before  # neither touched the pause

    held.release.set()
    first.join(30)
    assert out[0].status_code == 202, out[0].json()
    replay = resume(body, "key-1")
    assert replay.status_code == 202 and replay.json() == out[0].json()
    assert rows(pause)["decisions"] == 1 and rows(pause)["continuations"] == 1
    assert Pause.objects.get(pk=pause.pk).status == PauseStatus.ANSWERED


def test_a_refused_first_request_lets_go_of_its_key(tenants):
    _, pause = paused_run()
    token = token_for(pause)
    refused = resume({"token": token, "answer": {"decisions": []}}, "key-2")
    assert (refused.status_code, refused.json()["code"]) == (400, "invalid_answer")
    assert not IdempotentResponse.objects.exists()
    retried = resume({"token": token, "answer": APPROVE}, "key-2")  # a corrected retry
    assert retried.status_code == 202, retried.json()


def test_a_key_left_in_flight_by_a_dead_process_is_taken_over(tenants, held):
    _, pause = paused_run()
    body = {"token": token_for(pause), "answer": APPROVE}
    stuck, out = in_background(lambda: resume(body, "key-3"))
    assert held.entered.wait(30)
    # As if its process had died long ago: its record is older than a request can last.
    IdempotentResponse.objects.update(
        created_at=timezone.now() - timedelta(seconds=IN_FLIGHT_SECONDS + 1))
    taken_over = resume(body, "key-3")
    assert taken_over.status_code == 202, taken_over.json()
    held.release.set()
    stuck.join(30)
    # The "dead" one, woken, lost the single-use claim; its failure freed nothing of the new record.
    assert (out[0].status_code, out[0].json()["code"]) == (409, "already_answered")
    assert resume(body, "key-3").json() == taken_over.json()
    assert rows(pause)["decisions"] == 1


# --- real concurrency over HTTP, on PostgreSQL -----------------------------------------------

@pytest.fixture
def idle_broker(redis_url: str) -> Iterator[str]:
    with flushed_redis_db(redis_url, BROKER_DB) as url:
        yield url


@pytest.fixture
def server(transactional_db: Any, tmp_path: Path, idle_broker: str) -> Iterator[live.LiveServer]:
    started = live.start_server(tmp_path / "daphne.log", broker_url=idle_broker)
    try:
        yield started
    finally:
        started.stop()


def at_once(origin: str, path: str, bodies: list[bytes], headers: dict[str, str]
            ) -> list[tuple[Any, Any]]:
    """POST each body with the same headers to ``path``, all released together."""
    return live.post_at_once(origin, path, [(body, headers) for body in bodies])


def assert_one_answer(outcomes: list[tuple[int, Any]], pause: Pause, log: str) -> dict[str, Any]:
    """1 x 202, the rest 409 in progress or the same 202 replayed; never already_answered."""
    accepted = [body for status, body in outcomes if status == 202]
    in_flight = [body for status, body in outcomes if status == 409]
    assert len(accepted) + len(in_flight) == len(outcomes), (outcomes, log)
    assert accepted and all(body == accepted[0] for body in accepted), outcomes
    assert {body["code"] for body in in_flight} <= {"idempotency_in_progress"}, outcomes
    assert rows(pause)["decisions"] == 1 and rows(pause)["continuations"] == 1
    return accepted[0]


@pytest.mark.postgres
@pytest.mark.services
def test_ten_parallel_approvals_with_one_key_answer_once(tenants, server):
    Permission.objects.get_or_create(codename="start_run",
                                     content_type=ContentType.objects.get_for_model(Run),
                                     defaults={"name": "Can start agent runs"})
    users = seed_users()
    _, pause = paused_run()
    path = f"{API}pauses/{pause.pk}/approve/"
    headers = {"Authorization": f"Token {users['alice']['token']}", "Idempotency-Key": "k-10"}
    outcomes = at_once(server.url, path, [b'{"comment": "ok"}'] * PARALLEL, headers)
    won = assert_one_answer(outcomes, pause, server.log())
    assert won["pause"]["answered_by"] == "alice"
    after = rows(pause)
    # The same key with another body, or on another path, is a client's mistake.
    again = at_once(server.url, path, [b'{"edited_args": {"qty": 9}}'], headers)
    assert [(s, b["code"]) for s, b in again] == [(422, "idempotency_key_reused")]
    other = at_once(server.url, f"{API}pauses/{pause.pk}/reject/", [b'{"comment": "ok"}'],
                    headers)
    assert [(s, b["code"]) for s, b in other] == [(422, "idempotency_key_reused")]
    assert rows(pause) == after


@pytest.mark.postgres
@pytest.mark.services
def test_ten_parallel_token_resumes_with_one_key_answer_once(tenants, server):
    _, pause = paused_run()
    body = json.dumps({"token": token_for(pause), "answer": APPROVE}).encode()
    outcomes = at_once(server.url, f"{API}resume/", [body] * PARALLEL,
                       {"Idempotency-Key": "r-10"})
    assert_one_answer(outcomes, pause, server.log())
    after = rows(pause)
    edited = json.dumps({"token": token_for(pause), "answer": {"decisions": [
        {"type": "edit", "edited_action": {"name": "ship", "args": {"qty": 9}}}]}}).encode()
    again = at_once(server.url, f"{API}resume/", [edited], {"Idempotency-Key": "r-10"})
    assert [(s, b["code"]) for s, b in again] == [(422, "idempotency_key_reused")]
    assert rows(pause) == after
