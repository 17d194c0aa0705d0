"""The fault suite's tools: lanes of real Celery workers, their database sessions by name,
gates that hold a worker at a chosen statement, and the checks every trial ends with.

A *lane* is one queue of its own, served by Celery workers started for it (solo,
or prefork with one pool process). Each worker names its database sessions
(libpq reads ``PGAPPNAME``; pool processes inherit it), so a test can find them
in ``pg_stat_activity``: to see that a worker waits at a gate, to end its session
with ``pg_terminate_backend``, or to see a killed process's sessions go. A batch
of trials gives each lane one trial, so trials of several kinds run side by side
and each still knows its own processes and sessions.

Every trial ends by checking the rows (``assert_sound``): events contiguous
1..n with exactly one terminal event per turn, the status final, at most one
refund and only with its ``tool.completed``, and the answer that started the
turn audited as one ``Decision``.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from symfonic_django import pauses
from symfonic_django.models import Decision, Pause, PauseStatus, Run, RunStatus, TurnEvent
from symfonic_django.runs import CONTINUATION_TASK, start_run
from symfonic_django.turns import execute_run
from tests.testapp.models import Refund

from ..conftest import paused_run
from ..e2e.stack import wait_for
from ..integration.conftest import SUCCEEDED, Gate, Worker, Workers

#: "[...: ERROR/MainProcess] Task symfonic_django.run_continuation[<id>] raised unexpected:
#: OperationalError('...')"
RAISED = re.compile(r"Task (?P<task>[\w.]+)\[(?P<id>[0-9a-f-]{36})\] raised unexpected: "
                    r"(?P<error>\w+)")
TERMINAL = frozenset({"turn.completed", "turn.failed", "turn.paused"})
FINAL = frozenset({RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.PAUSED})
#: The statement a gate on an event's ``seq`` holds (the unique index on run and seq).
EVENT_INSERT = f'INSERT INTO "{TurnEvent._meta.db_table}"'
REVIEWER = "reviewer"


# --- lanes ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Session:
    """One database session of a worker, as ``pg_stat_activity`` shows it."""

    pid: int
    state: str
    waiting_on_lock: bool
    query: str


def sessions_named(app: str) -> list[Session]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid, state, wait_event_type, query FROM pg_stat_activity "
                       "WHERE application_name = %s AND datname = current_database()", [app])
        return [Session(pid, state or "", wait == "Lock", query or "")
                for pid, state, wait, query in cursor.fetchall()]


@dataclass(frozen=True)
class Process:
    """The OS process running a task: a solo worker itself, or a pool process of a prefork one."""

    worker: Worker
    pid: int

    @property
    def is_worker(self) -> bool:
        return self.pid == self.worker.pid


def pool_processes(worker: Worker) -> list[int]:
    """The pids of a prefork worker's pool processes (its children)."""
    try:
        children = Path(f"/proc/{worker.pid}/task/{worker.pid}/children").read_text()
    except OSError:
        return []
    return [int(pid) for pid in children.split()]


@dataclass
class Lane:
    """One queue served by Celery workers (``solo``, or ``prefork`` with one pool process).

    Each worker's sessions carry an ``application_name`` of their own (``app_of``);
    a prefork worker's pool processes inherit it.
    """

    name: str
    workers: Workers
    settings: str
    lease_seconds: int
    pool: str = "solo"
    alive: list[Worker] = field(default_factory=list)
    apps: dict[str, str] = field(default_factory=dict)
    generation: int = 0

    def start(self, *, wait: bool = True) -> Worker:
        self.generation += 1
        name = f"{self.name}-{self.generation}"
        app = f"symfonic-faults-{name}"
        with pytest.MonkeyPatch.context() as patch:  # only the worker's environment
            patch.setenv("PGAPPNAME", app)
            worker = self.workers.start(name, pool=self.pool, settings=self.settings,
                                        lease_seconds=self.lease_seconds, wait=wait)
        self.apps[worker.name] = app
        self.alive.append(worker)
        return worker

    @property
    def current(self) -> Worker:
        """The lane's newest worker (the only one, in a lane of one)."""
        assert self.alive, f"lane {self.name} has no worker"
        return self.alive[-1]

    def app_of(self, worker: Worker) -> str:
        return self.apps[worker.name]

    def send(self, run_id: Any) -> str:
        [task_id] = self.workers.send(CONTINUATION_TASK, str(run_id))
        return task_id

    def executing(self, worker: Worker) -> int | None:
        """The pid that runs ``worker``'s tasks: itself (solo) or its one pool process."""
        if self.pool == "solo":
            return worker.pid
        children = pool_processes(worker)
        return children[0] if len(children) == 1 else None

    def waiting_on(self, statement: str) -> Process | None:
        """The process of this lane with a session waiting on a lock in ``statement``."""
        for worker in self.alive:
            if any(s.waiting_on_lock and statement in s.query
                   for s in sessions_named(self.app_of(worker))):
                pid = self.executing(worker)
                return Process(worker, pid) if pid is not None else None
        return None

    def running(self, run_id: Any) -> Process | None:
        """The process of this lane that claimed ``run_id`` (``Run.worker`` is host:pid)."""
        claimed_by = Run.objects.values_list("worker", flat=True).get(pk=run_id)
        for worker in self.alive:
            pid = self.executing(worker)
            if pid is not None and claimed_by.endswith(f":{pid}"):
                return Process(worker, pid)
        return None

    def kill(self, process: Process) -> list[int]:
        """SIGKILL ``process`` (a crash: no shutdown, no ack). A solo worker is gone with it;
        a prefork worker replaces its pool process. Returns the database sessions (backend
        pids) the process had."""
        backends = [s.pid for s in sessions_named(self.app_of(process.worker))]
        if process.is_worker:
            process.worker.kill_group()
            self.alive.remove(process.worker)
        else:
            os.kill(process.pid, signal.SIGKILL)
        return backends

    def terminate(self, statement: str) -> int:
        """``pg_terminate_backend`` the current worker's session whose statement (running,
        waiting, or the last one it ran) is ``statement``: the one doing the work, not the
        idle ones of its pool. Returns how many sessions it ended (one)."""
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) "
                           "FROM pg_stat_activity WHERE application_name = %s "
                           "AND datname = current_database() AND starts_with(query, %s)",
                           [self.app_of(self.current), statement])
            return int(cursor.fetchone()[0])

    def outcomes(self, task_id: str) -> list[str]:
        """Every outcome of ``task_id`` in this lane's logs, worker by worker: the value a
        run of it returned ("completed", "skipped", ...) or ``raised:<exception>``."""
        found: list[tuple[int, int, str]] = []
        for number, worker in enumerate(self.workers.started):
            log = worker.log()
            found += [(number, m.start(), m["result"]) for m in SUCCEEDED.finditer(log)
                      if m["id"] == task_id]
            found += [(number, m.start(), f"raised:{m['error']}") for m in RAISED.finditer(log)
                      if m["id"] == task_id]
        return [outcome for _, _, outcome in sorted(found)]

    def wait_outcome(self, task_id: str, *, count: int = 1, timeout: float = 30) -> list[str]:
        def found() -> list[str]:
            outcomes = self.outcomes(task_id)
            return outcomes if len(outcomes) >= count else []

        return wait_for(found, timeout=timeout, detail=self.workers.logs,
                        what=f"{count} outcome(s) of {task_id} in lane {self.name}")

    def logs(self) -> str:
        return self.workers.logs()


@dataclass
class Lanes:
    """Makes lanes on one Redis broker; every worker is stopped and every queue deleted."""

    broker_url: str
    tmp_path: Path
    made: list[Lane] = field(default_factory=list)

    def make(self, name: str, *, settings: str = "tests.settings", lease_seconds: int = 2,
             pool: str = "solo") -> Lane:
        queue = f"symfonic-faults-{name}-{uuid.uuid4().hex[:8]}"
        log_dir = self.tmp_path / name
        log_dir.mkdir()
        lane = Lane(name, Workers(broker_url=self.broker_url, queue=queue, tmp_path=log_dir),
                    settings, lease_seconds, pool)
        self.made.append(lane)
        return lane

    def start_all(self, per_lane: int = 1) -> None:
        """Start the lanes' first workers side by side (a worker takes seconds to import)."""
        for _ in range(per_lane):
            for lane in self.made:
                lane.start(wait=False)
        for lane in self.made:
            for worker in lane.alive:
                worker.wait_ready()

    def stop_all(self) -> None:
        """Warm shutdown for every worker of every lane at once; SIGKILL what is left after
        a second (the workers are idle by now: nothing of a test waits on their exit)."""
        import redis

        everyone = [worker for lane in self.made for worker in lane.workers.started]
        for worker in everyone:
            if worker.proc.poll() is None:
                worker.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 1
        for worker in everyone:
            try:
                worker.proc.wait(timeout=max(deadline - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                pass
            worker.kill_group()
        client = redis.Redis.from_url(self.broker_url)
        for lane in self.made:
            for key in client.scan_iter(match=f"*{lane.workers.queue}*"):
                client.delete(key)


@pytest.fixture
def lanes(redis_url: str, tmp_path: Path) -> Iterator[Lanes]:
    made = Lanes(redis_url, tmp_path)
    try:
        yield made
    finally:
        made.stop_all()


# --- gates ------------------------------------------------------------------------------

def event_gate(run_id: Any, seq: int) -> Gate:
    """An uncommitted event of ``run_id`` at ``seq``: the worker's own insert of that seq
    waits on the unique index until the gate opens. The foreign key to the run is checked
    at commit (Django makes it deferrable), so the gate takes no lock on the run row."""
    return Gate(f"INSERT INTO {TurnEvent._meta.db_table} (run_id, seq, type, data, scope_key, "
                "created_at) VALUES (%s, %s, 'gate', '{}', '', now())", [str(run_id), seq])


# --- runs to break ------------------------------------------------------------------------

def approved_refund(tenant: Any, order_id: str) -> Run:
    """A refund run paused in-process and approved by the reviewer: its queued continuation."""
    run = start_run("refund", {"order_id": order_id, "amount": 12.5}, scope=tenant,
                    dispatch=False)
    assert execute_run(run.pk) == "paused"
    return approve(Pause.objects.get(run=run))


def approved_stream(n: int, sleep: float, gate: str | None = None) -> Run:
    """A ``stream`` run approved: its continuation streams ``n`` deltas, ``sleep`` s apart,
    after the file ``gate`` exists (when given)."""
    _, pause = paused_run("stream", {"n": n, "sleep": sleep, **({"gate": gate} if gate else {})})
    return approve(pause)


def approve(pause: Pause) -> Run:
    # approve() also dispatches on commit, through this process's own (in-memory) broker;
    # that message reaches no worker. Each test sends the task to its lane's queue.
    continuation = pauses.approve(pause.pk, actor=REVIEWER).continuation
    assert continuation is not None and continuation.status == RunStatus.QUEUED
    return continuation


# --- the checks ---------------------------------------------------------------------------

def event_rows(run_id: Any) -> list[tuple[int, str]]:
    return list(TurnEvent.objects.filter(run_id=run_id).order_by("seq")
                .values_list("seq", "type"))


def assert_stream(run_id: Any, *, final: bool) -> list[str]:
    """Events contiguous 1..n; each turn (from its ``turn.started``) holds exactly one terminal
    event, its last. Only the last turn of a run that is not final may still be open."""
    rows = event_rows(run_id)
    assert [seq for seq, _ in rows] == list(range(1, len(rows) + 1)), rows
    types = [t for _, t in rows]
    starts = [i for i, t in enumerate(types) if t == "turn.started"]
    assert not types or starts[:1] == [0], rows
    for begin, end in zip(starts, [*starts[1:], len(types)], strict=True):
        turn = types[begin:end]
        ended = [i for i, t in enumerate(turn) if t in TERMINAL]
        still_open = not final and end == len(types)
        assert ended == [len(turn) - 1] or (still_open and not ended), rows
    return types


def assert_sound(run_id: Any, *, reviewer: str = REVIEWER) -> Run:
    """The rows a finished trial must leave, whatever broke in it (see the module docstring)."""
    run = Run.objects.get(pk=run_id)
    assert run.status in FINAL, (run.status, event_rows(run_id))
    types = assert_stream(run_id, final=True)
    assert types, "a final run has its events"
    last = TurnEvent.objects.filter(run_id=run_id).order_by("-seq").first()
    assert last is not None
    expected = {RunStatus.COMPLETED: "turn.completed", RunStatus.FAILED: "turn.failed",
                RunStatus.PAUSED: "turn.paused"}[RunStatus(run.status)]
    assert last.type == expected, (run.status, types)
    if run.status == RunStatus.FAILED:
        assert run.error is not None and last.data["code"] == run.error["code"], run.error
    refunds = Refund.objects.filter(run_id=run_id).count()
    # The refund and its tool.completed are committed together (fenced) or not at all.
    assert refunds == types.count("tool.completed") and refunds <= 1, (refunds, types)
    assert_decided(run, reviewer)
    return run


def assert_decided(run: Run, reviewer: str) -> None:
    """The pause this turn resumed from was answered once, and that answer is audited."""
    assert run.resumed_from_id is not None
    pause = Pause.objects.get(pk=run.resumed_from_id)
    assert pause.status == PauseStatus.ANSWERED and pause.continuation_id == run.pk
    decisions = list(Decision.objects.filter(pause=pause).values_list("action", "actor_label"))
    assert decisions == [("approve", reviewer)], decisions


def wait_backends_gone(pids: list[int], timeout: float = 10) -> None:
    """Wait until the sessions ``pids`` have ended: a killed process's sessions end once the
    server notices their client is gone (one held at a gate, only once the gate opens)."""
    def left() -> list[int]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pid FROM pg_stat_activity WHERE pid = ANY(%s)", [pids])
            return [pid for (pid,) in cursor.fetchall()]

    wait_for(lambda: not left(), timeout=timeout, what=f"the sessions {pids} to end",
             detail=lambda: str(left()))


def wait_lease_lapsed(run_ids: list[Any], timeout: float) -> None:
    def lapsed() -> bool:
        now = timezone.now()
        leases = Run.objects.filter(pk__in=run_ids).values_list("lease_until", flat=True)
        return all(until is not None and until < now for until in leases)

    wait_for(lapsed, timeout=timeout, what="the leases to lapse")


def act_on_each_when_held(trials: Sequence[Any], act: Callable[[Any], bool],
                          timeout: float = 30) -> None:
    """Poll every trial; ``act`` on each the moment it reaches its point.

    ``act(trial)`` returns whether the trial was at its point (and acted on);
    each trial has a ``kind`` and a ``lane`` whose logs explain a timeout.
    """
    waiting = list(trials)
    deadline = time.monotonic() + timeout
    while waiting:
        waiting = [trial for trial in waiting if not act(trial)]
        if waiting and time.monotonic() > deadline:
            raise AssertionError(f"timed out holding {[t.kind for t in waiting]}\n"
                                 + "\n".join(t.lane.logs() for t in waiting))
        time.sleep(0.001)


def elapsed(since: float) -> str:
    return f"{time.monotonic() - since:.1f}s"

