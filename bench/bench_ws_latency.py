"""From an approval to the first event on a websocket, against bare Channels.

One command: ``.venv/bin/python bench/bench_ws_latency.py`` (PostgreSQL on
127.0.0.1:5432 as ``postgres``, ``redis-server`` on PATH; bounded well under
three minutes).

It creates the database ``symfonic_bench_ws`` (dropped first and at the end),
starts a private ``redis-server`` on a free port, two Celery worker processes
(``--pool solo``), a daphne serving ``tests.testapp.asgi:application`` and a
second daphne serving the bare consumer of ``bench/ws_baseline.py``, all on
that Redis (broker and channel layer) with ``bench.ws_settings``, and database
connections as the example deploys them (a small pool in daphne,
``CELERY_DB_REUSE_MAX=1000`` for the workers; ``--fresh-connections`` opens one
per task and per socket instead, for comparison). Then, with
the sides interleaved sample by sample (which goes first rotates):

* ours: ``pauses.approve()`` answers a paused ``echo`` turn; its commit sends
  ``symfonic_django.run_continuation`` (the clock starts at that publish, taken
  from Celery's ``before_task_publish``). The client, which learns the
  continuation's id from the approval, connects with a watch ticket and waits
  for the first event (``turn.started``). Latency = task sent -> event on the
  socket: the worker's claim, the persisted ``turn.started``, the doorbell,
  the consumer. Split at ``turn.started``'s ``created_at`` (stamped by the claim, just before its statement).
* baseline: a client already connected to the bare consumer; the bench sends
  the bare Celery task ``bench.ws_ping``, which does one ``group_send``.
  Latency = task sent -> message on the socket.
* for reference, not judged: the approval call itself (up to the publish), and
  the whole path over HTTP as a client sees it (``POST pauses/{id}/approve/``
  with a DRF token, then the 202's ``stream.path`` with its ``stream.ticket``).

Prints a markdown table (median, p95) and PASS if ours / baseline (medians)
is under the goal, else FAIL. Exits 0 either way; 1 if it could not run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.e2e.stack import Redis, Stack, free_port  # noqa: E402

DB_NAME = "symfonic_bench_ws"
PG = ["-h", "127.0.0.1", "-p", "5432", "-U", "postgres"]
DATABASE_URL = f"postgres://postgres@127.0.0.1:5432/{DB_NAME}"
GOAL = 1.5
OURS = "approval committed, continuation task sent -> first event on the socket"
BASELINE = "bare Celery task -> `group_send` -> bare consumer (baseline)"
HTTP = "`POST pauses/{id}/approve/` -> first event (for reference)"


def pg(command: str, *args: str) -> None:
    subprocess.run([command, *PG, *args], check=True, stdout=subprocess.DEVNULL)


#: Database connections as the example deploys them: daphne from a small pool (``DB_POOL``),
#: the workers each keeping theirs for a thousand tasks (``CELERY_DB_REUSE_MAX``; Celery's
#: Django fixup closes it around every task otherwise). The baselines touch no database.
PERSISTENT = {"DB_POOL": "1", "CONN_MAX_AGE": "0", "CELERY_DB_REUSE_MAX": "1000"}
FRESH = {"DB_POOL": "0", "CONN_MAX_AGE": "0", "CELERY_DB_REUSE_MAX": "0"}


@contextmanager
def ws_stack(*, persistent: bool = True) -> Iterator[tuple[Stack, int, Path]]:
    """A private Redis, a fresh database, daphne and two workers, and the bare baseline server.

    Shared by both websocket benchmarks; everything is stopped and dropped afterwards.
    ``persistent=False`` opens a database connection per task and per socket instead.
    """
    log_dir = Path(tempfile.mkdtemp(prefix="symfonic-bench-ws-"))
    redis = Redis(free_port(), log_dir).start()
    connections = PERSISTENT if persistent else FRESH
    # The example's deployment default, which the test settings turn off: a worker keeps
    # the tenant it loaded for the next turns of that tenant.
    os.environ.update(DJANGO_SETTINGS_MODULE="bench.ws_settings", DATABASE_URL=DATABASE_URL,
                      REDIS_URL=f"{redis.url}/0", CELERY_BROKER_URL=f"{redis.url}/1", DEBUG="0",
                      SYMFONIC_SCOPE_CACHE_SECONDS="10", **connections)
    stack = Stack(DATABASE_URL, log_dir, settings="bench.ws_settings", debug=False,
                  redis=redis, worker_args=["-I", "bench.ws_baseline"])
    pg("dropdb", "--if-exists", "--force", DB_NAME)
    pg("createdb", DB_NAME)
    try:
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)
        stack.start()
        _, bare_port = stack.serve("baseline", "bench.ws_baseline:application")
        yield stack, bare_port, log_dir
    except Exception:
        print(stack.logs(), file=sys.stderr)
        raise
    finally:
        stack.stop()
        from django.db import connections

        connections.close_all()
        pg("dropdb", "--if-exists", "--force", DB_NAME)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=40, help="samples per side")
    parser.add_argument("--fresh-connections", action="store_true",
                        help="a new database connection per task and per socket "
                             "(no pool, CELERY_DB_REUSE_MAX=0), for comparison")
    parser.add_argument("--quick", action="store_true",
                        help="3 samples per side: proves the benchmark runs to its end (make test runs it); its figures mean nothing")
    args = parser.parse_args()
    if args.quick:
        args.n = 3

    with ws_stack(persistent=not args.fresh_connections) as (stack, bare_port, _):
        return measure(args, stack, bare_port)


def measure(args: argparse.Namespace, stack: Stack, bare_port: int) -> int:
    from celery.signals import before_task_publish
    from django.contrib.auth import get_user_model
    from websockets.asyncio.client import connect

    from symfonic_django.models import AnsweredVia, Pause, TurnEvent
    from symfonic_django.pauses import approve
    from symfonic_django.runs import start_run
    from symfonic_django.tokens import mint_watch_ticket
    from symfonic_django.turns import execute_run
    from tests.testapp.celery import app
    from tests.testapp.seed import seed_users

    token = seed_users()["alice"]["token"]

    def paused() -> str:
        run = start_run("echo", {}, scope="acme", dispatch=False)
        assert execute_run(run.pk) == "paused"
        return str(Pause.objects.get(run=run).pk)

    pauses = [paused() for _ in range(2 * args.n + 4)]
    alice = get_user_model().objects.get(username="alice")
    published: dict[str, float] = {}

    @before_task_publish.connect(weak=False)
    def stamp(sender: str = "", headers: dict | None = None, **kwargs: object) -> None:
        if sender == "symfonic_django.run_continuation":
            published[headers["argsrepr"].strip("[](),' ")] = time.time()

    ours: list[float] = []
    http: list[float] = []
    base: list[float] = []
    parts: dict[str, list[float]] = {k: [] for k in ("approve", "worker", "deliver", "202")}

    async def first_event(run_id: str, ticket: str) -> float:
        url = f"ws://127.0.0.1:{stack.port}/ws/symfonic/runs/{run_id}/?ticket={ticket}"
        async with connect(url, origin=stack.origin, open_timeout=10) as ws:
            first = json.loads(await asyncio.wait_for(ws.recv(), 10))
            received = time.time()
        assert first["seq"] == 1 and first["type"] == "turn.started", first
        return received

    def stored_at(run_id: str) -> float:
        return TurnEvent.objects.get(run_id=run_id, seq=1).created_at.timestamp()

    async def one_ours(pause_id: str) -> float:
        """``pauses.approve()`` commits and sends the task; then the client connects."""
        called = time.time()
        resolution = await asyncio.to_thread(approve, pause_id, actor=alice, via=AnsweredVia.API)
        run_id = str(resolution.continuation.pk)
        received = await first_event(run_id, mint_watch_ticket(resolution.continuation,
                                                               user=alice))
        stored = await asyncio.to_thread(stored_at, run_id)
        parts["approve"].append(published[run_id] - called)
        parts["worker"].append(stored - published[run_id])
        parts["deliver"].append(received - stored)
        return received - published[run_id]

    async def one_http(pause_id: str) -> float:
        """Over the API, as a client sees it: POST, then the 202's stream."""
        started = time.time()
        body = await asyncio.to_thread(stack.approve, pause_id, token)
        parts["202"].append(time.time() - started)
        return await first_event(body["run_id"], body["stream"]["ticket"]) - started

    async def one_base(group: str) -> float:
        async with connect(f"ws://127.0.0.1:{bare_port}/ws/bench/{group}/", origin=stack.origin,
                           open_timeout=10) as ws:
            assert json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] == "ready"
            started = time.time()
            app.send_task("bench.ws_ping", args=[group])
            message = json.loads(await asyncio.wait_for(ws.recv(), 10))
            received = time.time()
        assert message["type"] == "turn.started", message
        return received - started

    async def run_all() -> None:
        # One unmeasured warm-up each: first imports, first connections.
        await one_ours(pauses.pop())
        await one_http(pauses.pop())
        await one_base("warmup")
        for key in parts:
            parts[key].clear()
        sides = [lambda i: one_ours(pauses.pop()), lambda i: one_base(f"g{i}"),
                 lambda i: one_http(pauses.pop())]
        samples = [ours, base, http]
        for i in range(args.n):
            # Rotate which side goes first, so drift in the machine's load hits all alike.
            for k in range(3):
                side = (i + k) % 3
                samples[side].append(await sides[side](i))

    asyncio.run(asyncio.wait_for(run_all(), 150))

    def ms(values: list[float]) -> str:
        return (f"{statistics.median(values) * 1e3:.1f} | "
                f"{percentile(values, 0.95) * 1e3:.1f}")

    ratio = statistics.median(ours) / statistics.median(base)
    http_ratio = statistics.median(http) / statistics.median(base)
    connections = ("a new database connection per task and per socket" if args.fresh_connections
                   else "database connections pooled in daphne, kept by the workers")
    print(f"\n### Approval to first websocket event ({args.n} samples per side, interleaved, "
          f"{connections})\n")
    print("| path | median ms | p95 ms |")
    print("|---|---:|---:|")
    print(f"| {OURS} | {ms(ours)} |")
    print(f"| &nbsp;&nbsp;worker: task sent -> the claim stamps `turn.started` | {ms(parts['worker'])} |")
    print(f"| &nbsp;&nbsp;stamped -> on the client's socket | {ms(parts['deliver'])} |")
    print(f"| {BASELINE} | {ms(base)} |")
    print(f"| `pauses.approve()` call -> task sent (before the above) | {ms(parts['approve'])} |")
    print(f"| {HTTP} | {ms(http)} |")
    print(f"| &nbsp;&nbsp;POST -> 202 | {ms(parts['202'])} |")
    print(f"\nours / baseline (medians): {ratio:.2f}x (goal: under {GOAL}x); "
          f"over the API: {http_ratio:.2f}x")
    print("PASS" if ratio < GOAL else "FAIL")
    return 0


if __name__ == "__main__":
    sys.exit(main())
