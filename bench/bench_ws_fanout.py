"""One turn's events fanned out to 200 websocket watchers, against bare Channels.

One command: ``.venv/bin/python bench/bench_ws_fanout.py`` (PostgreSQL on
127.0.0.1:5432 as ``postgres``, ``redis-server`` on PATH; bounded well under
three minutes).

The same deployment as ``bench/bench_ws_latency.py``: database
``symfonic_bench_ws`` (dropped first and at the end), a private Redis, two
Celery workers, a daphne serving ``tests.testapp.asgi:application`` and one
serving the bare consumer of ``bench/ws_baseline.py``, with the example's database
connections as a deployment keeps them. Each side's watchers
all connect first (ours: with the watch ticket; each has received
``turn.started``; baseline: each has been told ``ready``), then the clock starts:

* ours: the continuation of a ``stream`` turn, waiting at a gate, is let go:
  it persists and announces 1,000 ``message.delta`` events and
  ``turn.completed``; every watcher reads until the server closes (1000).
  Every event is a committed row before its doorbell rings.
* baseline: the bare Celery task ``bench.ws_burst`` does 1,001 ``group_send``
  calls of event-shaped messages to the bare consumers' group (a layer
  capacity that never drops, a consumer with no database and no per-message
  hop to the database thread: bare Channels at its best; ``--default-dispatch``
  keeps Channels' hop, which makes the baseline several times slower).

Throughput = messages received by all watchers / (start -> last watcher done).
Every watcher must receive every message, in order. Prints a markdown table
and PASS if ours / baseline >= the goal, else FAIL. Exits 0 either way; 1 if
it could not run.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_ws_latency import ws_stack  # noqa: E402
from tests.e2e.stack import Stack, Watch, watch  # noqa: E402

GOAL = 0.5
BUDGET = 170.0  # seconds, from start to verdict: the benchmark is bounded
STARTED = time.monotonic()


def remaining() -> float:
    left = BUDGET - (time.monotonic() - STARTED)
    if left <= 5:
        raise TimeoutError(f"over the {BUDGET:.0f} s budget: this machine is too slow or loaded")
    return left
HANDSHAKES = 25  # concurrent opening handshakes: a burst of 200 SYNs overflows the backlog


async def connect_all(urls: list[str], origin: str, *, ready: int,
                      until: object = None) -> list[asyncio.Future[Watch]]:
    """Open every socket; return once each has received ``ready`` messages."""
    gate = asyncio.Semaphore(HANDSHAKES)
    opened = [asyncio.Event() for _ in urls]

    def reached(i: int):
        def check(seen: Watch) -> bool:
            if len(seen.events) >= ready:
                opened[i].set()
            return until(seen) if until else False
        return check

    async def one(i: int, url: str) -> Watch:
        async with gate:
            task = asyncio.ensure_future(watch(url, origin=origin, until=reached(i),
                                               timeout=remaining()))
            await asyncio.wait([task, asyncio.ensure_future(opened[i].wait())],
                               return_when=asyncio.FIRST_COMPLETED)
        return await task

    tasks = [asyncio.ensure_future(one(i, url)) for i, url in enumerate(urls)]
    waiting = asyncio.ensure_future(asyncio.gather(*(e.wait() for e in opened)))
    pending: set[asyncio.Future] = {waiting, *tasks}
    deadline = time.monotonic() + min(60, remaining())
    while not waiting.done():
        done, pending = await asyncio.wait(pending, timeout=deadline - time.monotonic(),
                                           return_when=asyncio.FIRST_COMPLETED)
        ended = [t for t in done if t is not waiting]
        if not done or ended:  # out of time, or a socket ended before it was ready
            for task in tasks:
                task.cancel()
            why = ended and (ended[0].exception() or ended[0].result())
            raise RuntimeError(f"the watchers did not all connect: {why or 'timeout'}")
    return tasks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--watchers", type=int, default=200)
    parser.add_argument("--events", type=int, default=1000, help="message.delta events")
    parser.add_argument("--rounds", type=int, default=1, help="timed rounds per side")
    parser.add_argument("--default-dispatch", action="store_true",
                        help="baseline consumer keeps Channels' per-message database hop")
    parser.add_argument("--quick", action="store_true",
                        help="5 watchers of 50 events: proves the benchmark runs to its end (make test runs it); its figures mean nothing")
    args = parser.parse_args()
    if args.quick:
        args.watchers, args.events, args.rounds = 5, 50, 1

    with ws_stack() as (stack, bare_port, log_dir):
        return measure(args, stack, bare_port, log_dir)


def measure(args: argparse.Namespace, stack: Stack, bare_port: int, log_dir: Path) -> int:
    from django.contrib.auth import get_user_model

    from symfonic_django.models import Pause, TurnEvent
    from symfonic_django.pauses import approve
    from symfonic_django.runs import start_run
    from symfonic_django.tokens import mint_watch_ticket
    from symfonic_django.turns import execute_run
    from tests.testapp.celery import app
    from tests.testapp.seed import seed_users

    seed_users()
    alice = get_user_model().objects.get(username="alice")  # a reader of acme
    total = args.events + 2  # turn.started, the deltas, turn.completed
    ours: list[float] = []
    base: list[float] = []
    emits: list[float] = []

    def ours_round(i: int) -> None:
        gate = log_dir / f"gate-{i}"
        run = start_run("stream", {"n": args.events, "gate": str(gate)}, scope="acme",
                        dispatch=False)
        assert execute_run(run.pk) == "paused"
        continuation = approve(Pause.objects.get(run=run).pk).continuation
        run_id = str(continuation.pk)
        url = stack.ws_url(run_id, ticket=mint_watch_ticket(continuation, user=alice))

        async def go() -> tuple[list[Watch], float]:
            tasks = await connect_all([url] * args.watchers, stack.origin, ready=1)
            started = time.perf_counter()
            gate.touch()
            watches = await asyncio.gather(*tasks)
            return watches, time.perf_counter() - started

        watches, elapsed = asyncio.run(go())
        for seen in watches:
            assert seen.seqs == list(range(1, total + 1)) and seen.close_code == 1000, (
                f"a watcher saw {len(seen.events)} events, closed {seen.close_code}")
        stamps = list(TurnEvent.objects.filter(run_id=run_id, seq__gt=1).order_by("seq")
                      .values_list("created_at", flat=True))
        emits.append((stamps[-1] - stamps[0]).total_seconds())
        ours.append(args.watchers * (total - 1) / elapsed)  # turn.started came before the clock

    def base_round(i: int) -> None:
        group = f"fanout{i}"
        route = "bench-default" if args.default_dispatch else "bench"
        url = f"ws://127.0.0.1:{bare_port}/ws/{route}/{group}/"

        async def go() -> tuple[list[Watch], float]:
            tasks = await connect_all([url] * args.watchers, stack.origin, ready=1,
                                      until=lambda seen: len(seen.events) > total - 1)
            started = time.perf_counter()
            app.send_task("bench.ws_burst", args=[group, total - 1])
            watches = await asyncio.gather(*tasks)
            return watches, time.perf_counter() - started

        watches, elapsed = asyncio.run(go())
        for seen in watches:
            assert seen.seqs == list(range(0, total)), f"a bare watcher saw {len(seen.events)}"
        base.append(args.watchers * (total - 1) / elapsed)

    for i in range(args.rounds):
        # ABBA: alternate which side goes first, so drift in the machine's load hits both.
        for side in ((base_round, ours_round) if i % 2 == 0 else (ours_round, base_round)):
            remaining()
            side(i)

    ratio = statistics.median(ours) / statistics.median(base)
    print(f"\n### Fan-out of one turn: {args.watchers} watchers x {total - 1} events "
          f"({args.rounds} round(s) per side)\n")
    print("| path | messages/s (median) | rounds |")
    print("|---|---:|---|")
    print(f"| symfonic: persisted events, doorbell, `RunStreamConsumer` "
          f"| {statistics.median(ours):,.0f} | {', '.join(f'{x:,.0f}' for x in ours)} |")
    print(f"| bare Channels: `group_send` to a bare consumer (baseline"
          f"{', default dispatch' if args.default_dispatch else ''}) "
          f"| {statistics.median(base):,.0f} | {', '.join(f'{x:,.0f}' for x in base)} |")
    print(f"\nthe worker persisted and announced the {args.events} deltas in "
          f"{statistics.median(emits):.1f} s (median)")
    print(f"ours / baseline: {ratio:.2f} (goal: at least {GOAL})")
    print("PASS" if ratio >= GOAL else "FAIL")
    return 0


if __name__ == "__main__":
    sys.exit(main())
