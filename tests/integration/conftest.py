"""Real processes for the integration tests.

Every test here talks to the *test* database from other OS processes: spawned
Python processes (``contenders.py``) and ``celery -A tests.testapp worker``
processes on a Redis broker. This module builds their environment, starts and
always stops the workers, sends them tasks, and waits on the database with a
bounded timeout (never an unbounded sleep).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ..e2e.stack import database_url, kill_group, wait_for

ROOT = Path(__file__).resolve().parents[2]

# "[2026-11-29 10:00:52,574: INFO/ForkPoolWorker-1] Task symfonic_django.run_continuation[<id>]
#  succeeded in 0.05s: 'skipped'"
SUCCEEDED = re.compile(
    r"\[[^\]]*: \w+/(?P<process>[\w-]+)\] Task (?P<task>[\w.]+)\[(?P<id>[0-9a-f-]{36})\] "
    r"succeeded in [\d.e-]+s: '(?P<result>\w+)'"
)


def live_database_url() -> str:
    """The URL of the database this test uses (pytest-django's test database)."""
    from django.db import connection

    assert connection.vendor == "postgresql", "the integration tests run on PostgreSQL"
    return database_url(connection.settings_dict)


def process_env(*, broker_url: str = "memory://", settings: str = "tests.settings",
                **extra: str) -> dict[str, str]:
    """Environment of a child process: the test database, ``broker_url``, no channel layer."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL",
                        "SYMFONIC_LEASE_SECONDS", "SYMFONIC_ON_EXPIRE")}
    env.update(
        DJANGO_SETTINGS_MODULE=settings,
        DATABASE_URL=live_database_url(),
        CELERY_BROKER_URL=broker_url,
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        PYTHONUNBUFFERED="1",
        **extra,
    )
    return env


# --- Celery workers ---------------------------------------------------------------

@dataclass
class Worker:
    """One ``celery -A tests.testapp worker`` OS process (its own process group)."""

    name: str
    proc: subprocess.Popen[bytes]
    log_path: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout: float = 60) -> None:
        def ready() -> bool:
            if self.proc.poll() is not None:
                raise AssertionError(f"worker {self.name} exited early:\n{self.log()[-3000:]}")
            return " ready." in self.log()

        wait_for(ready, timeout=timeout, what=f"worker {self.name} to be ready")

    def results(self) -> dict[str, tuple[str, str]]:
        """Task id -> (executing process name, returned value), from this worker's log."""
        return {m["id"]: (f"{self.name}/{m['process']}", m["result"])
                for m in SUCCEEDED.finditer(self.log())}

    def kill_group(self) -> None:
        """SIGKILL this worker and its pool children (the group it leads: start_new_session)."""
        kill_group(self.proc)


@dataclass
class Workers:
    """Starts Celery workers on one Redis broker and one queue of this test's own."""

    broker_url: str
    queue: str
    tmp_path: Path
    started: list[Worker] = field(default_factory=list)

    def start(self, name: str, *, pool: str = "solo", concurrency: int = 1,
              settings: str = "tests.settings", lease_seconds: int | None = None,
              wait: bool = True) -> Worker:
        extra = {"SYMFONIC_LEASE_SECONDS": str(lease_seconds)} if lease_seconds else {}
        env = process_env(broker_url=self.broker_url, settings=settings, **extra)
        log_path = self.tmp_path / f"worker-{name}.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "tests.testapp", "worker",
                 "--pool", pool, "--concurrency", str(concurrency), "-n", f"{name}@%h",
                 "-Q", self.queue, "--loglevel", "INFO", "--without-gossip",
                 "--without-mingle", "--without-heartbeat", "--prefetch-multiplier", "1"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )
        worker = Worker(name=name, proc=proc, log_path=log_path)
        self.started.append(worker)
        if wait:
            worker.wait_ready()
        return worker

    def send(self, task: str, *args: Any, count: int = 1) -> list[str]:
        """Publish ``task(*args)`` ``count`` times to this test's queue; returns the task ids."""
        from tests.testapp.celery import app

        ids = [str(uuid.uuid4()) for _ in range(count)]
        with app.connection_for_write(self.broker_url) as conn:
            for task_id in ids:
                app.send_task(task, args=list(args), queue=self.queue, task_id=task_id,
                              connection=conn)
        return ids

    def results(self) -> dict[str, tuple[str, str]]:
        merged: dict[str, tuple[str, str]] = {}
        for worker in self.started:
            merged.update(worker.results())
        return merged

    def logs(self) -> str:
        return "\n".join(f"--- {w.name} ---\n{w.log()[-4000:]}" for w in self.started)

    def stop_all(self) -> None:
        """Warm shutdown for all at once; SIGKILL whatever is left after 3 s."""
        for worker in self.started:
            if worker.proc.poll() is None:
                worker.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 3  # nothing of a test waits on a graceful exit
        for worker in self.started:
            try:
                worker.proc.wait(timeout=max(deadline - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                pass
            worker.kill_group()


@pytest.fixture
def celery_workers(redis_url: str, tmp_path: Path) -> Iterator[Workers]:
    """Start workers with ``.start(...)``; every one is stopped when the test ends.

    Each test consumes a queue of its own, so a message left over by another
    test (or by the in-process on_commit dispatch) never reaches its workers.
    """
    import redis

    workers = Workers(broker_url=redis_url, queue=f"symfonic-it-{uuid.uuid4().hex[:12]}",
                      tmp_path=tmp_path)
    try:
        yield workers
    finally:
        workers.stop_all()
        client = redis.Redis.from_url(redis_url)
        for key in client.scan_iter(match=f"*{workers.queue}*"):  # the queue, its bindings
            client.delete(key)


class Gate:
    """A transaction on a connection of its own that holds a lock until it is opened."""

    def __init__(self, sql: str, params: list) -> None:
        from django.db import connections

        self.conn = connections.create_connection("default")
        self.conn.set_autocommit(False)
        with self.conn.cursor() as cursor:
            cursor.execute(sql, params)

    def open(self) -> None:
        if self.conn.connection is not None:
            self.conn.rollback()
            self.conn.close()
