"""Pause lists at 100,000 pauses: the admin changelist and ``GET /api/symfonic/pauses/``.

One command: ``.venv/bin/python bench/bench_pause_list.py`` (PostgreSQL on
127.0.0.1:5432 as ``postgres``, as ``make services`` starts it).

It creates the database ``symfonic_listbench`` (dropped first if a crashed run
left it, dropped again at the end), migrates it, seeds ``seed_demo``'s users
(``admin`` sees every scope; ``alice`` reviews one, ``acme``) and 50 tenants,
then COPYs in pauses, one refund-like run each, spread evenly over the 50
scopes (pending, answered, expired; approvals and questions). It measures at
1,000 pauses, adds 99,000 more, and measures again at 100,000:

* the admin pause changelist (``/admin/symfonic_django/pause/``) and the API
  list (default page of 50), each as the superuser and as the reviewer of one
  scope, through Django's test ``Client`` in-process (session login for the
  admin, ``Authorization: Token`` for the API), ``DEBUG`` off;
* the baseline: a bare queryset of the same page (same scope filter, same
  order, same limit, the same columns including the run's agent and the
  answerer's name) rendered with ``json.dumps``, served by a bare Django view
  (``baseline_views``) through the same client: the same middleware, the same
  authentication (the session for the admin's, the token for the API's) and
  the same scope lookup. The bare queryset on its own, with no request at all,
  is measured too and printed for reference, not judged: the pages under test
  are requests, so their baseline is one.

Query counts must not grow with the table (1k vs 100k); they are counted on a
page that also looks up the scope filter's choices (the scopes in use, which a
process then keeps for 30 s, so most pages skip that query). Times are medians of
alternating rounds (baseline, subject, subject, baseline, ...), because this
machine is noisy: the ratio is what counts. Goal: every page within 3x of its
baseline at 100k. Exits 0 either way, printing PASS or FAIL; exits 1 only if
the benchmark itself could not run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "symfonic_listbench"
PG = ["-h", "127.0.0.1", "-p", "5432", "-U", "postgres"]
DATABASE_URL = f"postgres://postgres@127.0.0.1:5432/{DB_NAME}"
SCOPES = 50
SIZES = (1_000, 100_000)
GOAL = 3.0
ADMIN_PAGE = "/admin/symfonic_django/pause/"
API_PAGE = "/api/symfonic/pauses/"
ADMIN_BASELINE = "/bench/admin-page/"
API_BASELINE = "/bench/api-page/"

ENV = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": DATABASE_URL,
       "CELERY_BROKER_URL": "memory://", "DEBUG": "0", "PYTHONPATH": str(ROOT)}
ENV.pop("REDIS_URL", None)
os.environ.update(ENV)
os.environ.pop("REDIS_URL", None)
sys.path.insert(0, str(ROOT))


def pg(command: str, *args: str) -> None:
    subprocess.run([command, *PG, *args], check=True, env=ENV, stdout=subprocess.DEVNULL)


# --- seeding ---------------------------------------------------------------------

def copy_rows(model: Any, rows: Iterator[dict[str, Any]]) -> None:
    """COPY ``rows`` (attname -> value) into ``model``'s table; absent columns get defaults."""
    from django.db import connection
    from django.db.models import JSONField

    fields = model._meta.concrete_fields
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    table = connection.ops.quote_name(model._meta.db_table)
    # JSON goes over the wire as its text; PostgreSQL parses it into jsonb. Defaults
    # are evaluated once: every row given here sets its own ids and timestamps.
    plan = [(f.attname, f.get_default(), isinstance(f, JSONField)) for f in fields]
    with connection.cursor() as cursor:
        with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row([
                    (json.dumps(value) if is_json and value is not None else value)
                    for name, default, is_json in plan
                    for value in (row.get(name, default),)])


def seed_pauses(count: int, scopes: list[str], answerers: list[Any], rng: random.Random) -> None:
    """``count`` pauses, each of its own paused run, round-robin over ``scopes``."""
    from django.utils import timezone

    from symfonic_django.models import Pause, Run

    now = timezone.now()
    runs: list[dict[str, Any]] = []
    pauses: list[dict[str, Any]] = []
    for i in range(count):
        scope = scopes[i % len(scopes)]
        created = now - timedelta(seconds=rng.uniform(0, 30 * 86400))
        run_id, order = uuid.uuid4(), f"{scope.upper()}-{rng.randint(1000, 99999)}"
        amount = rng.choice([12.5, 40, 99.99, 250])
        runs.append({"id": run_id, "root_id": run_id, "agent": "refund", "scope_key": scope,
                     "status": "paused", "input": {"order_id": order, "amount": amount},
                     "created_at": created, "started_at": created, "finished_at": created,
                     "updated_at": created, "attempts": 1})
        roll = rng.random()
        status = "pending" if roll < 0.3 else "answered" if roll < 0.9 else "expired"
        question = rng.random() < 0.2
        answered = status == "answered"
        pauses.append({
            "id": uuid.uuid4(), "run_id": run_id, "root_run_id": run_id, "scope_key": scope,
            "kind": "question" if question else "approval",
            "prompt": {"question": f"Which carrier for {order}?"} if question else {
                "action_requests": [{"name": "refund", "args": {"order_id": order,
                                                                "amount": amount},
                                     "description": f"Refund {amount} on order {order}"}],
                "review_configs": [{"action_name": "refund",
                                    "allowed_decisions": ["approve", "edit", "reject"]}]},
            "answer_schema": {"type": "string"} if question else None,
            "idempotency_key": "refund", "bound_run_id": str(run_id),
            "bound_root_run_id": str(run_id), "status": status,
            "expires_at": created + timedelta(days=1),
            "answer": ("ups" if question else {"decisions": [{"type": "approve"}]})
            if answered else None,
            "answered_by_id": rng.choice(answerers).pk if answered else None,
            "answered_via": "api" if answered else "system" if status == "expired" else "",
            "answered_at": created + timedelta(minutes=5) if status != "pending" else None,
            "created_at": created, "updated_at": created,
        })
    copy_rows(Run, iter(runs))
    copy_rows(Pause, iter(pauses))


# --- the measured pages and their baselines ------------------------------------------

API_COLUMNS = ("id", "kind", "status", "prompt", "answer_schema", "run_id", "root_run_id",
               "session_id", "thread_id", "created_at", "expires_at", "answered_at",
               "answered_by__username", "answer", "continuation_id")
ADMIN_COLUMNS = ("id", "status", "kind", "prompt", "run__agent", "scope_key", "created_at",
                 "expires_at", "answered_by__username", "answered_via")


def api_page(keys: Any) -> str:
    """The API's page as a bare queryset dumped with ``json.dumps``."""
    from symfonic_django.models import Pause
    from symfonic_django.scopes import ALL_SCOPES

    qs = Pause.objects.all() if keys == ALL_SCOPES else Pause.objects.filter(scope_key__in=keys)
    rows = list(qs.order_by("-created_at").values(*API_COLUMNS)[:51])
    return json.dumps({"next": None, "previous": None, "results": rows[:50]}, default=str)


def admin_page(keys: Any) -> str:
    """The admin's page (same rows, order and columns) as a bare queryset dumped with JSON."""
    from django.contrib import admin

    from symfonic_django.models import Pause
    from symfonic_django.scopes import ALL_SCOPES

    per_page = admin.site._registry[Pause].list_per_page
    qs = Pause.objects.all() if keys == ALL_SCOPES else Pause.objects.filter(scope_key__in=keys)
    return json.dumps(list(qs.order_by("-created_at", "-pk").values(*ADMIN_COLUMNS)[:per_page]),
                      default=str)


def baseline_views() -> list[Any]:
    """The same two pages as bare Django views, served beside the real ones.

    Each authenticates as its page does (the admin's session, the API's
    ``Authorization: Token``), reads the caller's scopes, and returns the bare
    queryset as JSON: the request cycle both sides share, and nothing else.
    """
    from django.http import HttpResponse, HttpResponseForbidden
    from django.urls import path
    from rest_framework.authtoken.models import Token

    from symfonic_django.scopes import reviewer_scope_keys

    def json_response(body: str) -> HttpResponse:
        return HttpResponse(body, content_type="application/json")

    def admin_baseline(request: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return HttpResponseForbidden()
        return json_response(admin_page(reviewer_scope_keys(request.user)))

    def api_baseline(request: Any) -> HttpResponse:
        key = request.headers.get("Authorization", "").removeprefix("Token ")
        token = Token.objects.select_related("user").filter(key=key).first()
        if token is None:
            return HttpResponseForbidden()
        return json_response(api_page(reviewer_scope_keys(token.user)))

    return [path(ADMIN_BASELINE.lstrip("/"), admin_baseline),
            path(API_BASELINE.lstrip("/"), api_baseline)]


def serve_baseline_views() -> None:
    """The example project's URLs plus the baseline views, as this process's URLconf."""
    import types

    from django.conf import settings
    from django.urls import clear_url_caches

    from example_project import urls

    module = types.ModuleType("bench_pause_list_urls")
    module.urlpatterns = [*baseline_views(), *urls.urlpatterns]  # type: ignore[attr-defined]
    sys.modules[module.__name__] = module
    settings.ROOT_URLCONF = module.__name__
    clear_url_caches()


def page_of(client: Any, path: str, **headers: Any) -> Callable[[], Any]:
    def get() -> Any:
        response = client.get(path, **headers)
        if response.status_code != 200:
            raise RuntimeError(f"GET {path} answered {response.status_code}: "
                               f"{response.content[:300]!r}")
        return response

    return get


def count_queries(fn: Callable[[], Any]) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        fn()
    return len(captured.captured_queries)


def medians(sides: list[Callable[[], Any]], rounds: int) -> list[float]:
    """Median seconds of each side, in an order that rotates so drift hits all alike."""
    for _ in range(2):
        for fn in sides:
            fn()
    times: list[list[float]] = [[] for _ in sides]
    for i in range(rounds * 2):
        for k in range(len(sides)):
            side = (i + k) % len(sides)
            started = time.perf_counter()
            sides[side]()
            times[side].append(time.perf_counter() - started)
    return [statistics.median(t) for t in times]


def measure(targets: list[tuple[str, Callable[[], Any], Callable[[], Any], Callable[[], Any]]],
            size: int, rounds: int) -> list[dict[str, Any]]:
    from symfonic_django.admin import clear_scopes_in_use

    results = []
    for name, subject, view, bare in targets:
        # Counted on a page that also looks up the scopes in use, which a process then
        # keeps for SCOPES_IN_USE_SECONDS: the most queries a page makes.
        clear_scopes_in_use()
        queries = count_queries(subject)
        ours, base, bare_ms = medians([subject, view, bare], rounds)
        results.append({"page": name, "size": size, "queries": queries,
                        "baseline_queries": count_queries(view), "ms": ours * 1000,
                        "baseline_ms": base * 1000, "ratio": ours / base,
                        "bare_ms": bare_ms * 1000, "bare_ratio": ours / bare_ms})
        print(f"  {size:>7,} pauses  {name:<34} {queries:>2} queries  "
              f"{ours * 1000:7.1f} ms  baseline view {base * 1000:6.1f} ms  x{ours / base:.2f}"
              f"  (bare queryset {bare_ms * 1000:.1f} ms, x{ours / bare_ms:.2f})", flush=True)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds per side")
    args = parser.parse_args()
    started = time.monotonic()

    pg("dropdb", "--if-exists", "--force", DB_NAME)
    pg("createdb", DB_NAME)
    try:
        import django

        django.setup()
        from django.contrib.auth import get_user_model
        from django.core.management import call_command
        from django.db import connection
        from django.test import Client

        from example_project.shop.management.commands.seed_demo import seed_users
        from example_project.shop.models import Tenant
        from symfonic_django.scopes import reviewer_scope_keys

        call_command("migrate", verbosity=0, interactive=False)
        tokens = seed_users()
        Tenant.objects.bulk_create([Tenant(slug=f"tenant-{i:02d}", name=f"Tenant {i:02d}")
                                    for i in range(3, SCOPES + 1)])
        scopes = list(Tenant.objects.order_by("pk").values_list("slug", flat=True))
        assert len(scopes) == SCOPES and "acme" in scopes
        users = {u.username: u for u in get_user_model().objects.all()}
        answerers = [users["admin"], users["alice"], users["bob"]]

        serve_baseline_views()
        targets = []
        for who in ("admin", "alice"):
            label = "superuser" if who == "admin" else "reviewer of 1 scope"
            admin_client = Client()
            admin_client.force_login(users[who])
            keys = reviewer_scope_keys(users[who])
            token = {"HTTP_AUTHORIZATION": f"Token {tokens[who]['token']}"}
            targets.append((f"admin changelist, {label}", page_of(admin_client, ADMIN_PAGE),
                            page_of(admin_client, ADMIN_BASELINE),
                            lambda keys=keys: admin_page(keys)))
            targets.append((f"API pauses/, {label}", page_of(Client(), API_PAGE, **token),
                            page_of(Client(), API_BASELINE, **token),
                            lambda keys=keys: api_page(keys)))

        rng = random.Random(100_000)
        results: list[dict[str, Any]] = []
        seeded = 0
        for size in SIZES:
            t0 = time.monotonic()
            seed_pauses(size - seeded, scopes, answerers, rng)
            seeded = size
            # The tables as autovacuum leaves them after a bulk load (since PostgreSQL 13 it
            # vacuums insert-only tables too): statistics, and a visibility map, without
            # which no count can be an index-only scan. Right after COPY there is none.
            with connection.cursor() as cursor:
                cursor.execute("VACUUM (ANALYZE)")
            print(f"seeded {size:,} pauses over {SCOPES} scopes in "
                  f"{time.monotonic() - t0:.1f}s", flush=True)
            results += measure(targets, size, args.rounds)
        connection.close()
    finally:
        pg("dropdb", "--if-exists", "--force", DB_NAME)

    report(results, time.monotonic() - started)
    return 0


def report(results: list[dict[str, Any]], elapsed: float) -> None:
    small = {r["page"]: r for r in results if r["size"] == SIZES[0]}
    large = {r["page"]: r for r in results if r["size"] == SIZES[-1]}
    print()
    print(f"| page | queries @{SIZES[0]:,} | queries @{SIZES[-1]:,} | median @{SIZES[0]:,} "
          f"| median @{SIZES[-1]:,} | baseline view @{SIZES[-1]:,} | ratio @{SIZES[-1]:,} "
          f"| bare queryset @{SIZES[-1]:,} (ratio) | verdict |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    ok = True
    for page, big in large.items():
        little = small[page]
        constant = little["queries"] == big["queries"]
        within = big["ratio"] <= GOAL
        ok = ok and constant and within
        verdict = "ok" if constant and within else ", ".join(
            ([] if constant else ["queries grow"]) + ([] if within else [f"over {GOAL:g}x"]))
        print(f"| {page} | {little['queries']} | {big['queries']} | {little['ms']:.1f} ms "
              f"| {big['ms']:.1f} ms | {big['baseline_ms']:.1f} ms | {big['ratio']:.2f}x "
              f"| {big['bare_ms']:.1f} ms ({big['bare_ratio']:.2f}x) | {verdict} |")
    print()
    print(f"Baseline view: the same page (same filter, order, limit and columns) as one bare "
          f"queryset dumped with json.dumps, served by a bare Django view through the same "
          f"client, middleware and authentication. The bare queryset alone, with no request, "
          f"is shown for reference. Goal: query counts equal at {SIZES[0]:,} and "
          f"{SIZES[-1]:,}, every ratio to its baseline view <= {GOAL:g}x. "
          f"Total {elapsed:.0f}s.")
    print("PASS" if ok else "FAIL")


if __name__ == "__main__":
    sys.exit(main())
