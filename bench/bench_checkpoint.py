"""The Django checkpoint saver against langgraph-checkpoint-postgres, on one PostgreSQL.

One command: ``.venv/bin/python bench/bench_checkpoint.py`` (PostgreSQL on
127.0.0.1:5432 as ``postgres``, as ``make services`` starts it; about a minute).

It creates the database ``symfonic_bench_checkpoint`` (dropped first if a
crashed run left it, dropped again at the end), migrates it for the app and
runs ``PostgresSaver.setup()`` in it, so both savers write to the same server
and database, each to its own tables. Each side works as a graph's loop does,
from one thread: per thread of a round, ``STEPS`` supersteps, each one a
``put`` of the next checkpoint (a growing list of LangChain messages and a few
plain channels, the new versions only of the channels that step changed), a
``put_writes`` of the step's task (two writes), a ``get_tuple`` of the
thread's latest checkpoint (as a resume loads it), and at the end a ``list``
of the thread's history. Both use LangGraph's default serializer; the Django
saver on the example's deployment settings (``DEBUG`` off, its connection pool,
its connection open as a turn's is), the postgres saver on one autocommit
connection as ``from_conn_string`` opens it.

Every call is timed; a round's time per operation is the sum over its calls.
The sides alternate (ABBA) over ``--rounds`` rounds after a warm-up round, and
the medians are compared: the ratio Django / postgres per operation and in
total. Goal: the total within 1.5x. Exits 0 either way, printing PASS or
FAIL; exits 1 only if the benchmark itself could not run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "symfonic_bench_checkpoint"
PG = ["-h", "127.0.0.1", "-p", "5432", "-U", "postgres"]
DATABASE_URL = f"postgres://postgres@127.0.0.1:5432/{DB_NAME}"
GOAL = 1.5
THREADS, STEPS = 20, 10
OPERATIONS = ("put", "put_writes", "get_tuple", "list")
DJANGO, POSTGRES = "DjangoSaver", "PostgresSaver (baseline)"

ENV = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": DATABASE_URL,
       "CELERY_BROKER_URL": "memory://", "DEBUG": "0", "PYTHONPATH": str(ROOT)}
ENV.pop("REDIS_URL", None)
os.environ.update(ENV)
os.environ.pop("REDIS_URL", None)
sys.path.insert(0, str(ROOT))


def pg(command: str, *args: str) -> None:
    done = subprocess.run([command, *PG, *args], env=ENV, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"{command} {' '.join(args)} failed: {done.stderr.strip()}")


def run_thread(saver: Any, timings: dict[str, float]) -> None:
    """One graph thread of ``STEPS`` supersteps on ``saver``, adding each call's time."""
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.base.id import uuid6

    def timed(operation: str, call: Callable[..., Any], *args: Any) -> Any:
        started = time.perf_counter()
        result = call(*args)
        timings[operation] += time.perf_counter() - started
        return result

    thread_id = str(uuid.uuid4())
    thread = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    config: dict[str, Any] = thread
    checkpoint = empty_checkpoint()
    messages: list[Any] = [HumanMessage(f"Please refund order A-{thread_id[:8]}: it arrived "
                                        "broken, the box was crushed and two items are missing.")]
    versions: dict[str, Any] = {}
    for step in range(STEPS):
        messages = [*messages, AIMessage(f"Step {step}: checked the order, proposing a refund "
                                         f"of {10 + step}.50 for the damaged items.")]
        changed = {"messages": messages, "step": step, "order_id": f"A-{thread_id[:8]}"}
        if step == 0:
            changed["branch:to:agent"] = None
        for channel in changed:
            versions[channel] = saver.get_next_version(versions.get(channel), None)
        checkpoint = {
            **checkpoint,
            "id": str(uuid6()),  # time-ordered, as LangGraph makes them
            "channel_values": {**checkpoint["channel_values"], **changed},
            "channel_versions": dict(versions),
            "versions_seen": {"agent": dict(versions)},
        }
        metadata = {"source": "loop", "step": step, "parents": {}, "run_id": thread_id}
        new_versions = {channel: versions[channel] for channel in changed}
        config = timed("put", saver.put, config, checkpoint, metadata, new_versions)
        writes = [("messages", [messages[-1]]), ("step", step + 1)]
        timed("put_writes", saver.put_writes, config, writes, str(uuid.uuid4()),
              f"~__pregel_pull, agent:{step}")
        latest = timed("get_tuple", saver.get_tuple, thread)
        assert latest.checkpoint["id"] == checkpoint["id"] and len(latest.pending_writes) == 2
    history = timed("list", lambda: [*saver.list(thread)])
    assert len(history) == STEPS


def run_round(saver: Any) -> dict[str, float]:
    timings = dict.fromkeys(OPERATIONS, 0.0)
    for _ in range(THREADS):
        run_thread(saver, timings)
    return timings


def measure(rounds: int) -> dict[str, dict[str, list[float]]]:
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from langgraph.checkpoint.postgres import PostgresSaver

    from symfonic_django.checkpoint import DjangoSaver

    call_command("migrate", verbosity=0, interactive=False)
    connection.ensure_connection()  # a turn's thread has its connection open
    results: dict[str, dict[str, list[float]]] = {
        side: {operation: [] for operation in OPERATIONS} for side in (DJANGO, POSTGRES)}
    with PostgresSaver.from_conn_string(DATABASE_URL) as postgres_saver:
        postgres_saver.setup()
        sides = {DJANGO: DjangoSaver(), POSTGRES: postgres_saver}
        for saver in sides.values():  # warm-up, discarded
            run_round(saver)
        for i in range(rounds):
            order = list(sides.items()) if i % 2 == 0 else list(reversed(sides.items()))
            for name, saver in order:
                for operation, seconds in run_round(saver).items():
                    results[name][operation].append(seconds)
    return results


def report(results: dict[str, dict[str, list[float]]], rounds: int) -> None:
    from importlib.metadata import version

    import django

    calls = {"put": THREADS * STEPS, "put_writes": THREADS * STEPS,
             "get_tuple": THREADS * STEPS, "list": THREADS}
    print(f"\nCheckpoint savers: {rounds} alternating rounds of {THREADS} threads x {STEPS} "
          f"steps per side, Python {sys.version.split()[0]}, Django {django.get_version()}, "
          f"langgraph-checkpoint {version('langgraph-checkpoint')}, "
          f"langgraph-checkpoint-postgres {version('langgraph-checkpoint-postgres')}\n")
    print(f"| operation | calls/round | {DJANGO} ms/call | {POSTGRES} ms/call | ratio |")
    print("|---|---:|---:|---:|---:|")
    totals = {DJANGO: 0.0, POSTGRES: 0.0}
    for operation in OPERATIONS:
        medians = {side: statistics.median(results[side][operation]) for side in totals}
        for side in totals:
            totals[side] += medians[side]
        per_call = {side: medians[side] / calls[operation] * 1000 for side in totals}
        print(f"| {operation} | {calls[operation]} | {per_call[DJANGO]:.3f} | "
              f"{per_call[POSTGRES]:.3f} | {medians[DJANGO] / medians[POSTGRES]:.2f}x |")
    ratio = totals[DJANGO] / totals[POSTGRES]
    print(f"| total per round | | {totals[DJANGO] * 1000:.0f} ms | "
          f"{totals[POSTGRES] * 1000:.0f} ms | {ratio:.2f}x |")
    verdict = "PASS" if ratio <= GOAL else "FAIL"
    print(f"\nratio (Django / postgres, total) = {ratio:.2f}  goal <= {GOAL:.1f}  {verdict}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6, help="rounds per side (default 6)")
    parser.add_argument("--quick", action="store_true",
                        help="one round: proves the benchmark runs to its end (make test runs it); its figures mean nothing")
    args = parser.parse_args()
    if args.quick:
        args.rounds = 1
    try:
        pg("dropdb", "--if-exists", "--force", DB_NAME)
        pg("createdb", DB_NAME)
        results = measure(args.rounds)
    except Exception:
        traceback.print_exc()
        print("the benchmark could not run", file=sys.stderr)
        return 1
    finally:
        from django.db import connections

        connections.close_all()
        pg("dropdb", "--if-exists", "--force", DB_NAME)
    report(results, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
