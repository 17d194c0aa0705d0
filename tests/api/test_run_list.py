"""``GET runs/``: the runs of the scopes the caller may review, as ``GET pauses/``
lists pauses: a cursor page newest first, exact filters, a 400 for a query it
cannot read, and a query count that does not grow with the page."""

from __future__ import annotations

import base64
import json
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.authtoken.models import Token

from symfonic_django.models import Run, RunStatus
from tests.testapp.models import Membership

from ..conftest import paused_run
from .conftest import API, client_for

pytestmark = pytest.mark.django_db

RUN_KEYS = {"id", "agent", "status", "root_run_id", "parent_run_id", "resumed_from_pause_id",
            "session_id", "thread_id", "input", "output", "error", "attempts", "created_at",
            "started_at", "finished_at"}


def many_runs(n: int, *, scope: str = "acme", **fields: Any) -> list[str]:
    """``n`` top-level runs written directly (no agent turn); their ids, newest first."""
    now = timezone.now().replace(microsecond=0)
    runs = []
    for i in range(n):
        run = Run(scope_key=scope, created_at=now + timedelta(seconds=i),
                  **{"agent": "echo", "status": RunStatus.COMPLETED, **fields})
        run.root_id = run.id
        runs.append(run)
    Run.objects.bulk_create(runs)
    return [str(run.pk) for run in reversed(runs)]


def listed(client: Any, query: str = "") -> list[str]:
    response = client.get(f"{API}runs/?{query}")
    assert response.status_code == 200, response.json()
    return [run["id"] for run in response.json()["results"]]


def assert_invalid_request(response: Any) -> None:
    body = response.json()
    assert (response.status_code, body.get("code")) == (400, "invalid_request"), body
    assert set(body) == {"code", "detail"} and body["detail"].endswith(".")


# --- who sees what -------------------------------------------------------------------

def test_each_reviewer_lists_the_runs_of_their_own_tenant_only(alice, bob, admin):
    acme = many_runs(3, scope="acme")
    globex = many_runs(2, scope="globex")
    assert listed(alice) == acme
    assert listed(bob) == globex
    assert set(listed(admin)) == set(acme) | set(globex)  # the superuser sees every scope


def test_a_view_only_reviewer_lists_their_tenants_runs(tenants, users):
    user = get_user_model().objects.create_user("carol", password="carol-pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(
        content_type__app_label="symfonic_django", codename__startswith="view_"))
    Membership.objects.create(user=user, tenant=tenants["acme"])
    acme, _ = many_runs(2, scope="acme"), many_runs(2, scope="globex")
    assert listed(client_for(Token.objects.create(user=user).key)) == acme


def test_a_user_of_no_tenant_lists_nothing(tenants, users):
    get_user_model().objects.create_user("eve", password="eve-pw")
    many_runs(2, scope="acme")
    eve = client_for(Token.objects.create(user=get_user_model().objects.get(
        username="eve")).key)
    assert listed(eve) == []


def test_a_listed_run_reads_as_its_detail_does(alice):
    run, pause = paused_run()
    [listed_run] = alice.get(f"{API}runs/").json()["results"]
    assert set(listed_run) == RUN_KEYS
    assert listed_run == alice.get(f"{API}runs/{run.pk}/").json()
    assert listed_run["status"] == "paused" and listed_run["root_run_id"] == str(run.pk)


def test_a_resumed_turn_is_listed_as_a_run_of_its_own(alice):
    run, pause = paused_run()
    body = alice.post(f"{API}pauses/{pause.pk}/approve/", {}, format="json").json()
    runs = alice.get(f"{API}runs/").json()["results"]
    assert [r["id"] for r in runs] == [body["run_id"], str(run.pk)]
    assert (runs[0]["parent_run_id"], runs[0]["resumed_from_pause_id"]) == (str(run.pk),
                                                                           str(pause.pk))


# --- pages and filters ---------------------------------------------------------------

def test_the_list_is_a_cursor_page_that_walks_every_run_newest_first(alice):
    expected = many_runs(7)
    page = alice.get(f"{API}runs/?page_size=3").json()
    assert set(page) == {"next", "previous", "results"} and page["previous"] is None
    pages = [page]
    while page["next"]:
        page = alice.get(page["next"]).json()
        pages.append(page)
    assert [r["id"] for pg in pages for r in pg["results"]] == expected
    assert [len(pg["results"]) for pg in pages] == [3, 3, 1]
    back = alice.get(pages[-1]["previous"]).json()
    assert [r["id"] for r in back["results"]] == expected[3:6]


def test_runs_created_in_the_same_instant_are_each_listed_once(alice):
    now = timezone.now()
    runs = [Run(agent="echo", scope_key="acme", created_at=now) for _ in range(5)]
    for run in runs:
        run.root_id = run.id
    Run.objects.bulk_create(runs)
    ids: list[str] = []
    page = alice.get(f"{API}runs/?page_size=2").json()
    while True:
        ids += [r["id"] for r in page["results"]]
        if not page["next"]:
            break
        page = alice.get(page["next"]).json()
    assert sorted(ids) == sorted(str(r.pk) for r in runs)


def test_the_list_filters_by_status_agent_session_and_thread(alice):
    completed = many_runs(2)
    failed = many_runs(1, status=RunStatus.FAILED)
    other_agent = many_runs(1, agent="refund")
    in_session = many_runs(2, session_id="s-1", thread_id="t-9")
    assert set(listed(alice, "status=failed")) == set(failed)
    assert set(listed(alice, "agent=refund")) == set(other_agent)
    assert set(listed(alice, "session_id=s-1")) == set(in_session)
    assert set(listed(alice, "thread_id=t-9&status=completed")) == set(in_session)
    assert set(listed(alice, "status=completed&agent=echo")) == set(completed + in_session)
    assert listed(alice, "session_id=nobody") == []
    assert listed(alice, "agent=refund&status=failed") == []


def test_a_filter_applies_to_the_list_only_not_to_a_run_read_by_id(alice):
    [run_id] = many_runs(1, status=RunStatus.FAILED)
    assert alice.get(f"{API}runs/{run_id}/?status=completed").status_code == 200


def cursor(raw: str) -> str:
    return base64.b64encode(raw.encode()).decode()


@pytest.mark.parametrize("query", [
    "status=bogus", "status=", "page_size=0", "page_size=abc", "page_size=-1",
    "page_size=99999999999", "page_size=%C2%B2", "cursor=", "cursor=%00", "cursor=not base64!",
    f"cursor={cursor('p=not-a-time')}", f"cursor={cursor('o=-1')}",
    "agent=" + "x" * 101, "session_id=" + "s" * 201, "thread_id=" + "t" * 201,
    "agent=a%00b", "session_id=%00", "thread_id=%00",
], ids=["unknown-status", "empty-status", "page-size-0", "page-size-word", "page-size-negative",
        "page-size-huge", "page-size-superscript", "cursor-empty", "cursor-nul", "cursor-not-base64",
        "cursor-position-not-a-time", "cursor-negative-offset", "agent-too-long",
        "session-too-long", "thread-too-long", "agent-nul", "session-nul", "thread-nul"])
def test_a_query_the_list_cannot_read_is_refused_as_invalid_request(alice, query):
    many_runs(2)
    before = list(Run.objects.values())
    assert_invalid_request(alice.get(f"{API}runs/?{query}"))
    assert list(Run.objects.values()) == before


@pytest.mark.parametrize("query", [
    "unknown=1", "agent=%F0%9F%A4%96", "session_id=%ED%A0%80", "page_size=500",
], ids=["unknown-parameter", "emoji-agent", "lone-surrogate-bytes", "page-size-capped"])
def test_odd_but_readable_queries_are_answered(alice, query):
    many_runs(2)
    response = alice.get(f"{API}runs/?{query}")
    assert response.status_code == 200, response.json()


def test_the_list_query_count_does_not_grow_with_the_page(alice):
    def queries_for(n: int) -> int:
        Run.objects.all().delete()
        many_runs(n - n // 2)
        many_runs(n // 2, status=RunStatus.FAILED, output={"x": 1}, error={"code": "boom"})
        with CaptureQueriesContext(connection) as captured:
            response = alice.get(f"{API}runs/?page_size=50")
        assert len(response.json()["results"]) == n
        return len(captured.captured_queries)

    assert queries_for(5) == queries_for(50)


def test_the_list_is_documented_with_its_filters(alice):
    response = alice.get(f"{API}schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    operation = json.loads(response.content)["paths"]["/api/symfonic/runs/"]["get"]
    assert {p["name"] for p in operation["parameters"]} == {
        "cursor", "page_size", "status", "agent", "session_id", "thread_id"}
    assert operation["description"] and operation["summary"] == "List the runs you may review"


def test_posting_a_run_is_still_accepted_beside_the_list(alice):
    response = alice.post(f"{API}runs/", {"agent": "echo", "input": {}}, format="json")
    assert response.status_code == 202, response.json()
    assert listed(alice) == [response.json()["run_id"]]
