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
  answerer's name) rendered with ``json.dumps``.

Query counts must not grow with the table (1k vs 100k). Times are medians of
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

def api_baseline(keys: Any) -> Callable[[], str]:
    from symfonic_django.models import Pause
    from symfonic_django.scopes import ALL_SCOPES

    columns = ("id", "kind", "status", "prompt", "answer_schema", "run_id", "root_run_id",
               "session_id", "thread_id", "created_at", "expires_at", "answered_at",
               "answered_by__username", "answer", "continuation_id")

    def page() -> str:
        qs = Pause.objects.all() if keys == ALL_SCOPES else Pause.objects.filter(
            scope_key__in=keys)
        rows = list(qs.order_by("-created_at").values(*columns)[:51])
        return json.dumps({"next": None, "previous": None, "results": rows[:50]}, default=str)

    return page


def admin_baseline(keys: Any) -> Callable[[], str]:
    from django.contrib import admin

    from symfonic_django.models import Pause
    from symfonic_django.scopes import ALL_SCOPES

    per_page = admin.site._registry[Pause].list_per_page
    columns = ("id", "status", "kind", "prompt", "run__agent", "scope_key", "created_at",
               "expires_at", "answered_by__username", "answered_via")

    def page() -> str:
        qs = Pause.objects.all() if keys == ALL_SCOPES else Pause.objects.filter(
            scope_key__in=keys)
        rows = list(qs.order_by("-created_at", "-pk").values(*columns)[:per_page])
        return json.dumps(rows, default=str)

    return page


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


def medians(subject: Callable[[], Any], baseline: Callable[[], Any],
            rounds: int) -> tuple[float, float]:
    """Median seconds of each, alternating ABBA so drift hits both sides alike."""
    for _ in range(2):
        subject(), baseline()
    times: dict[str, list[float]] = {"s": [], "b": []}
    order = ("b", "s", "s", "b")
    for i in range(rounds * 2):
        side = order[i % 4]
        fn = subject if side == "s" else baseline
        started = time.perf_counter()
        fn()
        times[side].append(time.perf_counter() - started)
    return statistics.median(times["s"]), statistics.median(times["b"])


def measure(targets: list[tuple[str, Callable[[], Any], Callable[[], Any]]], size: int,
            rounds: int) -> list[dict[str, Any]]:
    results = []
    for name, subject, baseline in targets:
        queries = count_queries(subject)
        ours, base = medians(subject, baseline, rounds)
        results.append({"page": name, "size": size, "queries": queries,
                        "baseline_queries": count_queries(baseline), "ms": ours * 1000,
                        "baseline_ms": base * 1000, "ratio": ours / base})
        print(f"  {size:>7,} pauses  {name:<34} {queries:>2} queries  "
              f"{ours * 1000:7.1f} ms  baseline {base * 1000:6.1f} ms  x{ours / base:.2f}",
              flush=True)
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

        targets = []
        for who in ("admin", "alice"):
            label = "superuser" if who == "admin" else "reviewer of 1 scope"
            admin_client = Client()
            admin_client.force_login(users[who])
            keys = reviewer_scope_keys(users[who])
            targets.append((f"admin changelist, {label}",
                            page_of(admin_client, ADMIN_PAGE), admin_baseline(keys)))
            targets.append((f"API pauses/, {label}",
                            page_of(Client(), API_PAGE,
                                    HTTP_AUTHORIZATION=f"Token {tokens[who]['token']}"),
                            api_baseline(keys)))

        rng = random.Random(100_000)
        results: list[dict[str, Any]] = []
        seeded = 0
        for size in SIZES:
            t0 = time.monotonic()
            seed_pauses(size - seeded, scopes, answerers, rng)
            seeded = size
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
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
          f"| median @{SIZES[-1]:,} | baseline @{SIZES[-1]:,} | ratio @{SIZES[-1]:,} | verdict |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
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
              f"| {verdict} |")
    print()
    print(f"Baseline: the same page as one bare queryset (same filter, order, limit and "
          f"columns) dumped with json.dumps ({large[next(iter(large))]['baseline_queries']} "
          f"query). Goal: query counts equal at {SIZES[0]:,} and {SIZES[-1]:,}, every ratio "
          f"<= {GOAL:g}x. Total {elapsed:.0f}s.")
    print("PASS" if ok else "FAIL")


if __name__ == "__main__":
    sys.exit(main())
