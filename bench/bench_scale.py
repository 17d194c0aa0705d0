"""Every hot path of the app at 10,000, 100,000 and 1,000,000 pauses (issue 11).

One command: ``.venv/bin/python bench/bench_scale.py`` (PostgreSQL on
127.0.0.1:5432 as ``postgres``, as ``make services`` starts it; about 15
minutes on two cores, most of it loading).

It creates the database ``symfonic_bench_scale`` (dropped first if a crashed
run left it, and again at the end), migrates it, makes 200 tenants, a
superuser and a reviewer of the big tenant alone (``bench/scale_data.py``
says who and with which permissions), then grows one dataset in three steps,
10k -> 100k -> 1M pauses, with 5 events a pause, a long run of a fifth of the
pauses' number of events, and one decision per settled pause; one tenant holds
10% of everything (``scale_data.py``'s docstring describes the rows). After
each step it runs every hot path of ``scale_data.hot_paths`` through the app's
real code (the Python API, Django's test ``Client`` with a session or the DRF
token, Channels' ``WebsocketCommunicator``), ``DEBUG`` off, and prints for each:

* its queries, counted by a ``connection.execute_wrapper`` (Django's documented
  database instrumentation; ``CaptureQueriesContext`` keeps only the last 9,000,
  fewer than one expiry sweep at 1M makes);
* the median time of up to ``--reps`` warm calls (fewer for a path that takes
  over 250 ms), after one call that counts the queries and warms the caches;
* the plan of its slowest query, from ``EXPLAIN (FORMAT JSON)`` of that query
  as captured (node types with their index or table, innermost first).

The expiry sweep is judged per pause expired, in two shapes. Before each call
it makes pauses/1000 of the pending pauses due (1,000 at 1M), either each the
first of its run (its four pending siblings, due a day later, are cancelled
with it and their run fails: five pauses and a run written per pause counted)
or every pending pause of a fifth as many runs (a turn's pauses are asked with
one time to live and expire together), and calls the sweep the beat's task
runs, ``expire_all_due()``, which takes batches until one expires nothing.
The reaper and the requeue get 5 lapsed leases or overdue runs before each
call, and are also timed with none.

At the end a markdown table: queries, ms at each size, growth 1M/10k, plan at
1M, and issue 11's goals at 1M: every hot path under 20 ms except search
(under 100 ms), a reconnect to an ended run under 5 ms, the expiry sweep at
1,000 pauses/s or more with at most 3 queries a pause, and no path growing
more than 2x from 10k to 1M except search. The database plans with
``random_page_cost`` 1.1 (``--random-page-cost``; see ``RANDOM_PAGE_COST``).
It measures the code and the migrations as they are. Exits 0 either way (it reports); 1 only if it could
not run.

``--keep`` keeps the database to look at; ``--reuse`` measures a database a
``--keep`` run left, at the size it holds, without loading (and keeps it);
``--sizes 10000,50000`` runs smaller steps.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "symfonic_bench_scale"
PG = ["-h", "127.0.0.1", "-p", "5432", "-U", "postgres"]
DATABASE_URL = f"postgres://postgres@127.0.0.1:5432/{DB_NAME}"
SIZES = (10_000, 100_000, 1_000_000)
#: The planner's cost of reading a page at random, against 1 for reading the next one.
#: PostgreSQL's default, 4, models spinning disks; its documentation advises a lower value
#: such as 1.1 for solid-state storage, which this machine (and any current server) has.
#: At 4 the planner walks the newest-first primary key past a burst of other rows rather
#: than read a filter's own index (the decision list filtered by action took 48 ms, 2 ms
#: at 1.1). README "Operating it" gives the same advice; ``--random-page-cost 4`` measures
#: the server's default.
RANDOM_PAGE_COST = 1.1
#: Goals at the largest size (issue 11).
FAST_MS, SEARCH_MS, RECONNECT_MS = 20.0, 100.0, 5.0
EXPIRY_RATE, EXPIRY_QUERIES, GROWTH = 1000.0, 3.0, 2.0
#: Below this, a time in SQL is timer and scheduler noise when judging growth.
NOISE_MS = 1.0

ENV = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": DATABASE_URL,
       "CELERY_BROKER_URL": "memory://", "DEBUG": "0", "PYTHONPATH": str(ROOT)}
ENV.pop("REDIS_URL", None)  # the in-memory channel layer and cache
os.environ.update(ENV)
os.environ.pop("REDIS_URL", None)
sys.path.insert(0, str(ROOT))

from bench import scale_data  # noqa: E402
from bench.scale_data import QueryLog, explain, explainable, plan_shape  # noqa: E402


def pg(command: str, *args: str) -> str:
    done = subprocess.run([command, *PG, *args], check=True, env=ENV, capture_output=True,
                          text=True)
    return done.stdout


def database_exists() -> bool:
    return pg("psql", "-d", "postgres", "-tAc",
              f"SELECT 1 FROM pg_database WHERE datname = '{DB_NAME}'").strip() == "1"


def size_label(size: int) -> str:
    for unit, name in ((1_000_000, "M"), (1_000, "k")):
        if size >= unit and size % unit == 0:
            return f"{size // unit}{name}"
    return f"{size:,}"


# --- measuring ---------------------------------------------------------------------------

def slowest_plan(log: QueryLog) -> str:
    """The plan of the slowest query ``log`` holds that EXPLAIN can plan, with its time."""
    candidates = [q for q in log.queries if explainable(q)]
    if not candidates:
        return "—"
    sql, params, _, seconds = max(candidates, key=lambda q: q[3])
    return f"{plan_shape(explain(sql, params))} [{seconds * 1000:.1f} ms]"


@dataclass
class Result:
    """One hot path at one size: its queries, the median ms of a call and of its SQL.

    For an expiry path every figure is per pause.
    """

    name: str
    goal: str
    size: int
    queries: float = 0
    ms: float = 0.0
    sql_ms: float = 0.0
    items: int = 1
    #: The rows its page showed, for a list page.
    rows: int | None = None
    plan: str = ""
    detail: str = ""
    error: str = ""


def call_once(path: scale_data.HotPath) -> tuple[float, object, QueryLog]:
    """Prepare, call and clean up ``path``: the call's seconds, what it returned, and
    the queries it made."""
    from django.db import connection

    if path.prepare:
        path.prepare()
    log = QueryLog()
    with connection.execute_wrapper(log):
        started = time.perf_counter()
        out = path.call()
        seconds = time.perf_counter() - started
    if path.cleanup:
        path.cleanup()
    return seconds, out, log


def handled(path: scale_data.HotPath, out: object) -> int:
    """The pauses an expiry path's call handled (what it returned); 1 for the others."""
    return int(out) if path.goal == scale_data.EXPIRY else 1  # type: ignore[call-overload]


def flush_writes() -> None:
    """Write out every page changed so far (``CHECKPOINT``), before a path is measured.

    Loading a million pauses and each expiry sweep write gigabytes of pages,
    which PostgreSQL's checkpointer writes out over the following minutes; a
    path measured meanwhile shares the disk with it, and at 1M every path's SQL
    took about twice as long as in a quiet database. A path's own writes, and
    their full-page images after the checkpoint, are still measured.
    """
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("CHECKPOINT")


def measure(path: scale_data.HotPath, size: int, reps: int) -> Result:
    """One call that counts the queries and warms the caches, then up to ``reps`` timed."""
    result = Result(path.name, path.goal, size, detail=path.detail)
    try:
        flush_writes()
        first, out, log = call_once(path)
        result.items = handled(path, out)
        if isinstance(out, scale_data.Page):
            result.rows = out.rows
        if result.items < 1:
            raise RuntimeError("it handled nothing")
        result.queries = len(log.queries) / result.items
        calls, sql = [], []
        for _ in range(reps if first < 0.25 else 3 if first < 1 else 1):
            seconds, out, timed = call_once(path)
            items = handled(path, out)
            calls.append(seconds / max(items, 1))
            sql.append(timed.seconds / max(items, 1))
        result.ms = statistics.median(calls) * 1000
        result.sql_ms = statistics.median(sql) * 1000
        result.plan = slowest_plan(log)
    except Exception as exc:  # one broken path is reported; the others still run
        result.error = f"{type(exc).__name__}: {exc}"[:200]
    return result


def show(result: Result) -> None:
    size = f"{result.size:>9,}"
    if result.error:
        print(f"{size}  {result.name:<62} ERROR {result.error}", flush=True)
        return
    unit = "/pause" if result.goal == scale_data.EXPIRY else ""
    detail = f"  ({result.detail})" if result.detail else ""
    rows = f" {result.rows:4} rows" if result.rows is not None else ""
    print(f"{size}  {result.name:<62} {result.queries:6.1f} q{unit} {result.ms:8.2f} ms{unit} "
          f"(SQL {result.sql_ms:7.2f}){rows}  {result.plan}{detail}", flush=True)


# --- the run -------------------------------------------------------------------------------

def run(sizes: list[int], reps: int, reuse: bool) -> list[Result]:
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from symfonic_django.models import Pause

    call_command("migrate", verbosity=0, interactive=False)
    scopes = scale_data.create_tenants()
    people = scale_data.create_people()
    loaded = Pause.objects.count()
    if reuse and loaded:
        print(f"reusing {DB_NAME} with {loaded:,} pauses: measuring at that size only")
        sizes = [loaded]
    results: list[Result] = []
    for size in sizes:
        if size > loaded:
            started = time.monotonic()
            done = scale_data.load(connection, size, people=people, loaded=loaded,
                                   scopes=scopes)
            loaded = size
            print(f"loaded up to {size:,} pauses in {time.monotonic() - started:.0f}s "
                  f"(+{done.runs:,} runs, +{done.pauses:,} pauses, +{done.decisions:,} "
                  f"decisions, +{done.events:,} events, of which a run of "
                  f"{done.long_run_events:,})", flush=True)
        for path in scale_data.hot_paths(people, size):
            result = measure(path, size, reps)
            show(result)
            results.append(result)
    return results


# --- the report ----------------------------------------------------------------------------

def growth(small: Result | None, big: Result | None) -> float | None:
    """How much the time in SQL grew; times under ``NOISE_MS`` count as ``NOISE_MS``."""
    if small is None or big is None or small.error or big.error or small is big:
        return None
    return max(big.sql_ms, NOISE_MS) / max(small.sql_ms, NOISE_MS)


def verdict(small: Result | None, big: Result) -> str:
    """``ok``, or what misses issue 11's goals at the largest size."""
    if big.error:
        return "✗ error"
    misses = []
    if big.goal == scale_data.EXPIRY:
        rate = 1000 / big.ms if big.ms else float("inf")
        if rate < EXPIRY_RATE:
            misses.append(f"{rate:,.0f} pauses/s < {EXPIRY_RATE:,.0f}")
        if big.queries > EXPIRY_QUERIES:
            misses.append(f"{big.queries:.1f} queries/pause > {EXPIRY_QUERIES:g}")
    else:
        limit = {scale_data.SEARCH: SEARCH_MS, scale_data.RECONNECT: RECONNECT_MS}.get(
            big.goal, FAST_MS)
        if big.sql_ms >= limit:
            misses.append(f"SQL {big.sql_ms:,.1f} ms ≥ {limit:g}")
    grew = growth(small, big)
    if big.goal != scale_data.SEARCH and grew is not None and grew > GROWTH:
        misses.append(f"SQL grows {grew:.1f}x > {GROWTH:g}x")
    return "ok" if not misses else "✗ " + "; ".join(misses)


def report(results: list[Result], elapsed: float) -> None:
    sizes = sorted({r.size for r in results})
    by_name: dict[str, dict[int, Result]] = {}
    for result in results:
        by_name.setdefault(result.name, {})[result.size] = result
    first, last = sizes[0], sizes[-1]
    print()
    print(f"| path | queries | {' | '.join(f'ms at {size_label(s)} (SQL)' for s in sizes)} "
          f"| growth {size_label(last)}/{size_label(first)} (SQL) | plan at {size_label(last)} "
          f"(slowest query) | goal at {size_label(last)} |")
    print(f"|---|---:|{'---:|' * len(sizes)}---:|---|---|")
    met = missed = 0
    for name, row in by_name.items():
        counts = [f"{row[s].queries:.3g}" if s in row and not row[s].error else "—"
                  for s in sizes]
        queries = counts[0] if len(set(counts)) == 1 else " → ".join(counts)
        times = [f"{row[s].ms:,.1f} ({row[s].sql_ms:,.1f})" if s in row and not row[s].error
                 else "—" for s in sizes]
        small, big = row.get(first), row.get(last)
        grew = growth(small, big)
        calls = (f"{big.ms / small.ms:.1f}x" if grew is not None and small and big and small.ms
                 else "—")
        grown = f"{calls} ({grew:.1f}x)" if grew is not None else "—"
        if grew is not None and small and big and small.rows != big.rows:
            # Shown, not excused: the goal beside it is judged as the issue writes it.
            grown += f", rows {small.rows} → {big.rows}"
        plan = judged = "—"
        if big is not None:
            plan = big.error or big.plan
            if big.goal == scale_data.EXPIRY and not big.error and big.ms:
                plan = f"{1000 / big.ms:,.0f} pauses/s; {plan}"
            judged = verdict(small if first != last else None, big)
            met, missed = (met + 1, missed) if judged == "ok" else (met, missed + 1)
        print(f"| {name} | {queries} | {' | '.join(times)} | {grown} | {plan} | {judged} |")
    print()
    print(f"Goals at {size_label(last)} pauses (issue 11), judged on the time a call spends in "
          f"SQL (at the driver; the whole call, which adds Django's rendering, is shown "
          f"beside it): every hot path under {FAST_MS:g} ms except search (under "
          f"{SEARCH_MS:g} ms); a reconnect to an ended run under {RECONNECT_MS:g} ms; the "
          f"expiry sweep (whole calls, its row per pause) at >= {EXPIRY_RATE:,.0f} pauses/s "
          f"with <= {EXPIRY_QUERIES:g} queries a pause; no path's SQL growing more than "
          f"{GROWTH:g}x from {size_label(first)} to {size_label(last)} except search (times "
          f"under {NOISE_MS:g} ms count as {NOISE_MS:g} ms). Medians of warm calls, in-process. "
          f"{met} paths meet them, {missed} do not. Total {elapsed / 60:.1f} min.")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in SIZES),
                        help="pause counts to grow the dataset to, in order "
                             f"(multiples of {scale_data.PAUSES_PER_RUN})")
    parser.add_argument("--reps", type=int, default=5, help="timed calls per path, at most")
    parser.add_argument("--keep", action="store_true",
                        help=f"keep the database {DB_NAME} at the end (to look at it)")
    parser.add_argument("--random-page-cost", type=float, default=RANDOM_PAGE_COST,
                        help="the planner's cost of a random page read for the bench's database "
                             f"(default {RANDOM_PAGE_COST:g}, PostgreSQL's advice for SSDs; the "
                             "server's own default is 4)")
    parser.add_argument("--reuse", action="store_true",
                        help=f"measure {DB_NAME} as a --keep run left it, without loading "
                             "(keeps it)")
    parser.add_argument("--quick", action="store_true",
                        help="sizes 1,000 and 2,000, one call per path: proves the benchmark runs to its end (make test runs it); its figures mean nothing")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.reps = "1000,2000", 1
    sizes = sorted(int(s) for s in args.sizes.split(","))
    started = time.monotonic()
    keep = args.keep or args.reuse
    try:
        if not (args.reuse and database_exists()):
            pg("dropdb", "--if-exists", "--force", DB_NAME)
            pg("createdb", DB_NAME)
        # Set on the database, so every connection of the run (Django's, the loader's) plans
        # with it; read once each connection starts.
        pg("psql", "-d", "postgres", "-c",
           f"ALTER DATABASE {DB_NAME} SET random_page_cost = {args.random_page_cost:g}")
        results = run(sizes, args.reps, args.reuse)
    except Exception:
        traceback.print_exc()
        print("the benchmark could not run", file=sys.stderr)
        return 1
    finally:
        from django.db import connections

        connections.close_all()
        if not keep:
            pg("dropdb", "--if-exists", "--force", DB_NAME)
    report(results, time.monotonic() - started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
