"""The single-use claim over real HTTP: many reviewers' clicks, one answer.

32 threads, each with its own connection and its own ``Idempotency-Key``,
wait on a barrier and then POST ``pauses/{id}/approve/`` to one daphne
process serving the test app on the PostgreSQL test database. Django
runs each request's view in a thread of its own (``ThreadSensitiveContext``),
so the requests really contend for the row lock. Celery tasks go to a Redis
broker database nobody consumes, so no worker runs inside the server.
"""

from __future__ import annotations

import http.client
import json
import random
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from symfonic_django.models import Decision, Pause, PauseStatus, Run
from tests.testapp.seed import seed_pause, seed_users

from ..conftest import flushed_redis_db, snapshot
from .conftest import post_at_once

pytestmark = [pytest.mark.postgres, pytest.mark.services, pytest.mark.django_db(transaction=True)]

CONTENDERS = 32
#: A Redis database of this test's own: it receives the winner's task and is flushed after.
BROKER_DB = 14


@pytest.fixture
def idle_broker(redis_url: str) -> Iterator[str]:
    with flushed_redis_db(redis_url, BROKER_DB) as url:
        yield url


def approve_at_once(origin: str, path: str, token: str, keys: list[str]) -> list[tuple[Any, Any]]:
    """POST ``path`` once per key, all released together; returns (status, body) per key."""
    return post_at_once(origin, path, [(b"{}", {"Authorization": f"Token {token}",
                                                "Idempotency-Key": key}) for key in keys])


def post_once(origin: str, path: str, token: str, key: str) -> tuple[int, Any]:
    host = urlsplit(origin)
    conn = http.client.HTTPConnection(host.hostname, host.port, timeout=30)
    try:
        conn.request("POST", path, body=b"{}", headers={
            "Authorization": f"Token {token}", "Content-Type": "application/json",
            "Idempotency-Key": key})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_32_concurrent_approvals_over_http_give_one_202_and_31_already_answered(
        live_server_factory, idle_broker, tenants):
    users = seed_users()
    seeded = seed_pause(tenants["acme"], random.Random(32))
    pause = Pause.objects.get(pk=seeded["id"])
    server = live_server_factory(broker_url=idle_broker)
    path = f"/api/symfonic/pauses/{pause.pk}/approve/"
    keys = [f"click-{i}" for i in range(CONTENDERS)]

    outcomes = approve_at_once(server.url, path, users["alice"]["token"], keys)

    statuses = sorted(status for status, _ in outcomes if isinstance(status, int))
    assert statuses == [202] + [409] * (CONTENDERS - 1), (outcomes, server.log())
    winner = next(i for i, (status, _) in enumerate(outcomes) if status == 202)
    won = outcomes[winner][1]
    assert won["pause"]["status"] == "answered" and won["pause"]["answered_by"] == "alice"
    assert {body["code"] for status, body in outcomes if status == 409} == {"already_answered"}

    row = snapshot(pause)
    assert row["status"] == PauseStatus.ANSWERED
    assert Decision.objects.filter(pause=pause).count() == 1
    assert list(Run.objects.filter(parent_id=pause.run_id).values_list("pk", flat=True)) == [
        row["continuation_id"]]
    assert won["run_id"] == str(row["continuation_id"])

    # The winner's retry gets its original 202; a loser's retry is still a lost claim.
    assert post_once(server.url, path, users["alice"]["token"], keys[winner]) == (202, won)
    loser = next(i for i in range(CONTENDERS) if i != winner)
    status, body = post_once(server.url, path, users["alice"]["token"], keys[loser])
    assert (status, body["code"]) == (409, "already_answered")
    assert snapshot(pause) == row
