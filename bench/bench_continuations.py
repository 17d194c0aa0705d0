"""Continuations per second on real Celery workers, against a hand-rolled minimum.

One command: ``.venv/bin/python bench/bench_continuations.py`` (PostgreSQL on
127.0.0.1:5432 as ``postgres`` and Redis on 127.0.0.1:6379, as ``make services``
starts them).

It creates the database ``symfonic_bench`` (dropped first if a crashed run left
it, dropped again at the end), migrates it, and starts Celery on the Redis
broker ``redis://127.0.0.1:6379/11`` with two worker processes: by default
``celery -A tests.testapp worker --concurrency 2``, as a deployment runs it
on this two-core machine (prefork: a parent hands each task to one of two child
processes); ``--pool solo`` starts two ``--pool solo`` workers instead, which
run tasks in the process that fetched them, the stricter comparison. Settings
are ``tests.settings`` (for the ``noop`` agent) with ``DEBUG=0`` and
``REDIS_URL`` unset, so the channel-layer doorbell is the in-memory layer the
example settings give then. Database connections are the example's deployment
settings on both sides: kept across tasks (``CELERY_DB_REUSE_MAX=1000``; Celery's
Django fixup would otherwise close them around every task); ``--fresh-connections``
gives every task a new one instead (``CELERY_DB_REUSE_MAX=0``), for comparison.
The tenant of a turn is the example's too: kept by the worker for the next turns
of that tenant (``SCOPE_CACHE_SECONDS=10``; the test settings turn it off, so it
is set here); ``--no-scope-cache`` loads it for every turn instead.
Each round creates N queued
continuations as ``pauses.settle`` leaves them (a paused ``noop`` run, its
answered pause, the queued continuation with ``parent`` and ``resumed_from``),
sends one task per continuation, and divides N by the time from the first
claim to the last terminal write (read from the rows):

* ours: ``symfonic_django.run_continuation`` — the real claim, lease,
  heartbeat, agent, events and terminal transaction;
* baseline: ``bench.baseline_continuation`` (``bench/baseline_tasks.py``) —
  the same rows in raw SQL: a conditional UPDATE claim, ``turn.started``,
  then ``turn.completed`` and the terminal status in one transaction.

Same workers, broker, database and N; the sides alternate (ABBA) and medians
are compared. Goal: ours / baseline >= 0.8. Exits 0 either way, printing
PASS or FAIL; exits 1 only if the benchmark itself could not run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "symfonic_bench"
PG = ["-h", "127.0.0.1", "-p", "5432", "-U", "postgres"]
DATABASE_URL = f"postgres://postgres@127.0.0.1:5432/{DB_NAME}"
BROKER_URL = "redis://127.0.0.1:6379/11"
GOAL = 0.8
OURS, BASELINE = "symfonic run_continuation", "bare Celery task, raw SQL (baseline)"

# Workers start on a queue nobody sends to; a round's tasks are all published to the
# default queue first, then the workers are told to consume it, so the publisher
# is not competing with them for the two cores while they are timed.
IDLE_QUEUE, TASK_QUEUE = "symfonic-bench-idle", "celery"

# The continuations of a round are the only runs with a parent.
COUNT_ENDED = """SELECT count(*) FROM symfonic_django_run
                  WHERE parent_id IS NOT NULL AND status NOT IN ('queued', 'running')"""
WINDOW = """SELECT min(started_at), max(finished_at), count(*) FILTER (WHERE status = 'completed'),
                   (SELECT count(*) FROM symfonic_django_turnevent)
              FROM symfonic_django_run WHERE parent_id IS NOT NULL"""

# DEBUG=0 as a deployment runs (DEBUG=1, the example's default, records every query).
ENV = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": DATABASE_URL,
       "CELERY_BROKER_URL": BROKER_URL, "PYTHONPATH": str(ROOT), "DEBUG": "0"}
ENV.pop("REDIS_URL", None)  # the in-memory channel layer, as the example settings give it
os.environ.update(ENV)
os.environ.pop("REDIS_URL", None)
sys.path.insert(0, str(ROOT))


def pg(command: str, *args: str) -> None:
    done = subprocess.run([command, *PG, *args], env=ENV, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{command} {' '.join(args)} failed: {done.stderr.strip()}")


def start_workers(processes: int, pool: str, log_dir: str) -> list[tuple[subprocess.Popen, Path]]:
    """``processes`` task-running processes: one prefork worker, or that many solo workers."""
    celery = str(Path(sys.executable).with_name("celery"))
    if pool == "prefork":  # the deployment's command: one worker, a child process per slot
        commands = [["-c", str(processes), "-n", "bench@%h"]]
    else:  # each worker process runs its tasks itself, no parent/child hand-off
        commands = [["-P", "solo", "-n", f"bench{i}@%h"] for i in range(processes)]
    workers = []
    for i, options in enumerate(commands):
        log = Path(log_dir) / f"worker{i}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [celery, "-A", "tests.testapp", "worker", *options,
                 "-I", "bench.baseline_tasks", "-Q", IDLE_QUEUE, "-l", "warning",
                 "--without-gossip", "--without-mingle", "--without-heartbeat"],
                cwd=ROOT, env=ENV, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stopped as one below
            )
        workers.append((proc, log))
    return workers


def stop_workers(workers: list[tuple[subprocess.Popen, Path]]) -> None:
    for proc, _ in workers:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc, _ in workers:
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=300, help="continuations per round")
    parser.add_argument("--rounds", type=int, default=10, help="timed rounds per side")
    parser.add_argument("--processes", type=int, default=2,
                        help="worker processes running tasks (default 2)")
    parser.add_argument("--pool", default="prefork", choices=["prefork", "solo"],
                        help="prefork (default, as `celery worker` runs): one worker with "
                             "--concurrency PROCESSES; solo: PROCESSES workers with --pool solo, "
                             "no parent/child hand-off (the stricter comparison)")
    parser.add_argument("--fresh-connections", action="store_true",
                        help="a new database connection per task (CELERY_DB_REUSE_MAX=0), "
                             "for comparison")
    parser.add_argument("--no-scope-cache", action="store_true",
                        help="load the tenant for every turn (SCOPE_CACHE_SECONDS=0), "
                             "for comparison")
    parser.add_argument("--quick", action="store_true",
                        help="N=20, one round: proves the benchmark runs to its end (make test runs it); its figures mean nothing")
    args = parser.parse_args()
    if args.quick:
        args.n, args.rounds = 20, 1
    reuse = "0" if args.fresh_connections else "1000"
    ENV["CELERY_DB_REUSE_MAX"] = os.environ["CELERY_DB_REUSE_MAX"] = reuse
    cache = "0" if args.no_scope_cache else "10"
    ENV["SYMFONIC_SCOPE_CACHE_SECONDS"] = os.environ["SYMFONIC_SCOPE_CACHE_SECONDS"] = cache

    import redis

    redis.Redis.from_url(BROKER_URL).flushdb()  # a crashed run's leftover messages
    pg("dropdb", "--if-exists", "--force", DB_NAME)
    pg("createdb", DB_NAME)
    workers: list[tuple[subprocess.Popen, Path]] = []
    log_dir = tempfile.mkdtemp(prefix="symfonic-bench-")
    try:
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)
        workers = start_workers(args.processes, args.pool, log_dir)
        return run_rounds(args, workers)
    except Exception:
        for _, log in workers:
            print(f"--- {log} (tail) ---\n{log.read_text(errors='replace')[-3000:]}",
                  file=sys.stderr)
        raise
    finally:
        stop_workers(workers)
        from django.db import connections

        connections.close_all()
        pg("dropdb", "--if-exists", "--force", DB_NAME)
        redis.Redis.from_url(BROKER_URL).flushdb()
        shutil.rmtree(log_dir, ignore_errors=True)


def run_rounds(args: argparse.Namespace, workers: list) -> int:
    import celery
    import django
    from django.db import connection, transaction
    from django.utils import timezone

    from bench.baseline_tasks import baseline_continuation
    from symfonic_django.models import (
        AnsweredVia,
        Pause,
        PauseKind,
        PauseStatus,
        Run,
        RunStatus,
    )
    from symfonic_django.tasks import run_continuation
    from tests.testapp.celery import app
    from tests.testapp.models import Tenant

    Tenant.objects.get_or_create(slug="acme", defaults={"name": "Acme"})

    deadline = time.monotonic() + 60
    while len(app.control.ping(timeout=0.5) or []) < len(workers):
        if time.monotonic() > deadline or any(p.poll() is not None for p, _ in workers):
            raise RuntimeError("the Celery workers did not come up")

    def queued_continuations(n: int) -> list[str]:
        """N continuations as ``pauses.settle`` leaves them: queued, with parent and pause."""
        now = timezone.now()
        answer = {"decisions": [{"type": "approve"}]}
        parents, pauses, continuations = [], [], []
        for _ in range(n):
            parent_id, pause_id, cont_id = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
            parents.append(Run(id=parent_id, root_id=parent_id, agent="noop", scope_key="acme",
                               status=RunStatus.PAUSED, finished_at=now))
            pauses.append(Pause(
                id=pause_id, run_id=parent_id, root_run_id=parent_id, scope_key="acme",
                kind=PauseKind.APPROVAL, prompt={"action_requests": [{"name": "ship", "args": {}}]},
                bound_run_id=str(parent_id), bound_root_run_id=str(parent_id),
                status=PauseStatus.ANSWERED, expires_at=now + timedelta(hours=1), answer=answer,
                answered_via=AnsweredVia.PYTHON, answered_at=now, continuation_id=cont_id))
            continuations.append(Run(
                id=cont_id, root_id=parent_id, parent_id=parent_id, resumed_from_id=pause_id,
                agent="noop", scope_key="acme", input={"answers": {str(pause_id): answer}}))
        with transaction.atomic():  # the FKs between them are checked at commit
            Run.objects.bulk_create(parents)
            Pause.objects.bulk_create(pauses)
            Run.objects.bulk_create(continuations)
        return [str(c.id) for c in continuations]

    sides = {BASELINE: baseline_continuation, OURS: run_continuation}

    def one_round(task: Any, n: int, timeout: float = 120.0) -> float:
        """Continuations per second, from the first claim to the last terminal write."""
        with connection.cursor() as cursor:
            # CASCADE: every table that references runs or pauses (events, decisions,
            # notification deliveries, search rows, ...) empties with them.
            cursor.execute("TRUNCATE symfonic_django_run, symfonic_django_pause CASCADE")
        for run_id in queued_continuations(n):
            task.apply_async((run_id,), queue=TASK_QUEUE)
        consuming = app.control.add_consumer(TASK_QUEUE, reply=True, timeout=5,
                                              limit=len(workers))
        if len(consuming) < len(workers):
            raise RuntimeError(f"only {len(consuming)} workers started consuming: {consuming}")
        sent = time.monotonic()
        # A coarse poll: the window is read from the rows, so polling adds no error.
        while True:
            time.sleep(0.05)
            with connection.cursor() as cursor:
                cursor.execute(COUNT_ENDED)
                if cursor.fetchone()[0] >= n:
                    break
            if time.monotonic() - sent > timeout:
                raise RuntimeError(f"{task.name}: round not drained after {timeout:.0f} s")
            if any(p.poll() is not None for p, _ in workers):
                raise RuntimeError("a Celery worker exited")
        app.control.cancel_consumer(TASK_QUEUE, reply=True, timeout=5, limit=len(workers))
        with connection.cursor() as cursor:
            cursor.execute(WINDOW)
            first_claim, last_end, completed, events = cursor.fetchone()
        if completed != n or events != 2 * n:
            raise RuntimeError(f"{task.name}: {completed}/{n} completed, {events} events "
                               f"(expected {2 * n})")
        return n / (last_end - first_claim).total_seconds()

    for task in sides.values():  # warm-up (imports, first connections), discarded
        one_round(task, max(20, args.n // 10))
    results: dict[str, list[float]] = {name: [] for name in sides}
    for i in range(args.rounds):
        for name in (list(sides) if i % 2 == 0 else list(sides)[::-1]):  # ABBA
            results[name].append(one_round(sides[name], args.n))

    base, ours = statistics.median(results[BASELINE]), statistics.median(results[OURS])
    ratio = ours / base
    paired = statistics.median(o / b for o, b in zip(results[OURS], results[BASELINE], strict=True))
    layout = (f"`celery worker --concurrency {args.processes}`, prefork" if args.pool == "prefork"
              else f"{args.processes} x `celery worker --pool solo`")
    print(f"Continuations: N={args.n} per round, {args.rounds} alternating rounds per side, "
          f"{args.processes} Celery worker processes ({layout}), "
          f"Redis broker, PostgreSQL {connection.pg_version // 10000}, no-op agent, "
          f"in-memory channel layer (REDIS_URL unset), DEBUG=0, "
          f"{'a new database connection per task' if args.fresh_connections else 'persistent database connections'}, "
          f"{'tenant loaded per turn' if args.no_scope_cache else 'tenant kept 10 s per worker'}, "
          f"Django {django.get_version()}, Celery {celery.__version__}\n")
    print("| implementation | continuations/s (median) | min | max |")
    print("|---|---:|---:|---:|")
    for name, values in results.items():
        print(f"| {name} | {statistics.median(values):,.0f} | {min(values):,.0f} | "
              f"{max(values):,.0f} |")
    verdict = "PASS" if ratio >= GOAL else "FAIL"
    print(f"\nratio (ours / baseline, medians) = {ratio:.2f}  goal >= {GOAL}  {verdict}"
          f"\n(median of the {args.rounds} per-round-pair ratios: {paired:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
