"""A live deployment restarted under its watchers: daphne, then Redis, mid-turn.

One deployment for the module (``tests/e2e/stack.py``): a private ``redis-server``
on a free port (never the machine's shared one), daphne, two Celery workers.
Approvals go over HTTP, so the server dispatches each turn and a worker runs it.
Watchers hold a watch ticket and reconnect with ``?after=<last seq>`` whenever
their socket ends without the turn's end (daphne gone, a refused connection, a
close other than 1000), as the viewer page does.

``daphne_restarted``
    50 watchers follow a streaming turn; daphne is stopped (SIGKILL and SIGTERM in
    turn) and started again on the same port while the turn streams. Invariant:
    every watcher ends with every stored event exactly once, in order, the last one
    ``turn.completed``, and a 1000 close after it.
``redis_restarted``
    Watchers follow a streaming turn; Redis (broker and channel layer) is killed and
    started again, empty, mid-turn. Invariant: the turn completes, every watcher gets
    every event exactly once, in order, and closes 1000; the workers and daphne carry
    on (each next trial is dispatched through the restarted Redis).

Every turn's rows then pass ``assert_sound``: events contiguous with one terminal
event, the status final, the approval audited once.
"""

from __future__ import annotations

import asyncio
import random
import socket
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from websockets.exceptions import WebSocketException

from symfonic_django.models import Run, RunStatus, TurnEvent
from tests.testapp.models import Refund

from ..conftest import paused_run
from ..e2e.conftest import in_db, run_async, running_stack
from ..e2e.stack import Stack, Watch, wait_for, watch
from .conftest import assert_sound, elapsed

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

TRIALS = 20
DAPHNE_WATCHERS = 50
REDIS_WATCHERS = 10
#: Each turn streams its deltas SLEEP s apart: long enough to outlast the restart.
DAPHNE_DELTAS, REDIS_DELTAS, SLEEP = 80, 40, 0.03
#: The restart comes once every watcher has this many events.
RESTART_AFTER = 10
#: Reconnections a watcher may make in one trial before the trial fails (with its backoff,
#: about a minute of a server that does not come back).
MAX_CONNECTIONS = 60
#: Who approves over HTTP (``seed_demo``'s reviewer of acme).
REVIEWER = "alice"


@pytest.fixture(scope="module")
def deployment(django_db_setup: Any, tmp_path_factory: pytest.TempPathFactory,
               ) -> Iterator[Stack]:
    # Idle by the end: nothing of a test waits on a graceful exit.
    with running_stack(tmp_path_factory.mktemp("faults-live"), kill_first=True) as stack:
        yield stack


@pytest.fixture
def reviewer_token(tenants: Any) -> str:
    """A DRF token of ``seed_demo``'s alice, who may answer acme's pauses."""
    from tests.testapp.seed import seed_users

    return seed_users()[REVIEWER]["token"]


@dataclass
class Follower:
    """One watcher: every event it got over all its connections, and how each ended."""

    seen: Watch = field(default_factory=Watch)
    endings: list[int | str | None] = field(default_factory=list)

    async def follow(self, stack: Stack, run_id: str, ticket: str, rng: random.Random) -> None:
        refused = 0  # connections in a row that got nothing: the server is not back yet
        while True:
            assert len(self.endings) < MAX_CONNECTIONS, f"gave up reconnecting: {self.endings}"
            self.seen.close_code = None
            before = self.seen.last_seq
            try:
                await watch(stack.ws_url(run_id, ticket=ticket, after=self.seen.last_seq),
                            origin=stack.origin, seen=self.seen, timeout=30)
            except (OSError, TimeoutError, WebSocketException) as exc:
                self.endings.append(type(exc).__name__)
            else:
                self.endings.append(self.seen.close_code)
                if self.seen.close_code == 1000:
                    return
            refused = 0 if self.seen.last_seq > before else refused + 1
            # Spread the reconnections, backing off (up to 8 times) while the server is down,
            # as a client should: the budget then spans a slow restart on a loaded machine.
            await asyncio.sleep(rng.uniform(0.05, 0.15) * min(2 ** refused, 8))


@dataclass
class Trial:
    number: int
    run_id: str
    followers: list[Follower]
    deltas: int
    restarted_at: int = 0  # the lowest seq the watchers had when the restart began
    watching_seconds: float = 0.0  # from the approval until every watcher had turn.started
    restart_seconds: float = 0.0
    running_after: bool = False  # the turn still streamed once the restarted process was up
    seconds: float = 0.0


def approved_stream(stack: Stack, token: str, deltas: int, gate: Path) -> tuple[str, str]:
    """A stream turn approved over HTTP, and the watch ticket the approval was given;
    it streams once ``gate`` exists."""
    _, pause = paused_run("stream", {"n": deltas, "sleep": SLEEP, "gate": str(gate)})
    accepted = stack.approve(pause.pk, token)
    return str(accepted["run_id"]), accepted["stream"]["ticket"]


def run_trial(number: int, stack: Stack, token: str, watchers: int, deltas: int,
              tmp_path: Path, restart: Callable[[], None]) -> Trial:
    """Start a turn, let ``watchers`` follow it, call ``restart()`` mid-turn, follow to the end."""
    started = time.monotonic()
    gate = tmp_path / f"go-{number}"
    run_id, ticket = approved_stream(stack, token, deltas, gate)
    rng = random.Random(number)
    trial = Trial(number, run_id, [Follower() for _ in range(watchers)], deltas)

    async def go() -> None:
        tasks = [asyncio.ensure_future(f.follow(stack, run_id, ticket, rng))
                 for f in trial.followers]
        try:
            while min(f.seen.last_seq for f in trial.followers) < 1:  # all of them watch
                await asyncio.sleep(0.01)
            trial.watching_seconds = time.monotonic() - started
            gate.touch()
            while min(f.seen.last_seq for f in trial.followers) < RESTART_AFTER:
                await asyncio.sleep(0.002)
            trial.restarted_at = min(f.seen.last_seq for f in trial.followers)
            began = time.monotonic()
            await asyncio.to_thread(restart)
            trial.restart_seconds = time.monotonic() - began
            trial.running_after = await in_db(
                lambda: Run.objects.get(pk=run_id).status == RunStatus.RUNNING)
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()

    run_async(go, timeout=90)
    trial.seconds = time.monotonic() - started
    check(trial)
    return trial


def check(trial: Trial) -> None:
    run = assert_sound(trial.run_id, reviewer=REVIEWER)
    assert run.status == RunStatus.COMPLETED, (run.status, run.error)
    stored = list(TurnEvent.objects.filter(run_id=trial.run_id).order_by("seq")
                  .values_list("seq", flat=True))
    assert stored == list(range(1, trial.deltas + 3))  # turn.started, the deltas, turn.completed
    assert trial.restarted_at < len(stored), "the restart was meant to happen mid-turn"
    for follower in trial.followers:
        seen = follower.seen
        assert seen.seqs == stored, (seen.seqs, follower.endings)  # each once, in order
        assert seen.events[-1]["type"] == "turn.completed"
        assert seen.close_code == 1000 and follower.endings[-1] == 1000, follower.endings


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return True
    except OSError:
        return False


def restart_daphne(stack: Stack, *, crash: bool) -> None:
    """Stop daphne (SIGKILL for a crash, else SIGTERM) and start it again on its port."""
    daphne = stack.proc("daphne")
    if crash:
        daphne.kill()
    else:
        daphne.stop(grace=10)
    daphne.start()
    def back() -> bool:
        daphne.check_alive()  # fails at once if the new daphne exited
        return listening(stack.port)

    wait_for(back, timeout=30, what="daphne to listen again", detail=stack.logs)


def summary(trials: list[Trial]) -> str:
    endings = Counter(str(e) for t in trials for f in t.followers for e in f.endings[:-1])
    connections = [len(f.endings) for t in trials for f in t.followers]
    return (f"every watcher got every event once, in order, and closed 1000 "
            f"({sum(len(t.followers) for t in trials)} watchers); restarted after seq "
            f"{min(t.restarted_at for t in trials)}..{max(t.restarted_at for t in trials)} of "
            f"{trials[0].deltas + 2}, back after {min(t.restart_seconds for t in trials):.1f}.."
            f"{max(t.restart_seconds for t in trials):.1f}s; "
            f"turn still streaming once the process was back {sum(t.running_after for t in trials)}"
            f"/{len(trials)}; connections per watcher {min(connections)}..{max(connections)}; "
            f"ends before the last {dict(endings)}; "
            f"{mean(t.seconds for t in trials):.1f}s per trial (all watching after "
            f"{mean(t.watching_seconds for t in trials):.1f}s, the restart "
            f"{mean(t.restart_seconds for t in trials):.1f}s)")


def mean(values: Iterable[float]) -> float:
    values = list(values)
    return sum(values) / len(values)


def test_fifty_watchers_reconnect_through_daphne_restarts_and_get_every_event_once(
        deployment: Stack, reviewer_token: str, tmp_path: Path) -> None:
    started = time.monotonic()
    trials = [run_trial(n, deployment, reviewer_token, DAPHNE_WATCHERS, DAPHNE_DELTAS, tmp_path,
                        partial(restart_daphne, deployment, crash=n % 2 == 0))
              for n in range(TRIALS)]
    print(f"\ndaphne restarted: {len(trials)} trials ({TRIALS // 2} SIGKILL, {TRIALS // 2} "
          f"SIGTERM) with {DAPHNE_WATCHERS} watchers each in {elapsed(started)}: "
          f"{summary(trials)}")


def test_a_redis_restart_mid_turn_loses_no_event_and_the_deployment_carries_on(
        deployment: Stack, reviewer_token: str, tmp_path: Path) -> None:
    started = time.monotonic()
    trials = [run_trial(n, deployment, reviewer_token, REDIS_WATCHERS, REDIS_DELTAS, tmp_path,
                        partial(deployment.restart_redis, down_for=0.3))
              for n in range(TRIALS)]
    for name in ("worker1", "worker2", "daphne"):
        assert deployment.proc(name).alive(), f"{name} died with Redis:\n{deployment.logs()}"

    # The last restart too: the server dispatches through it and a worker consumes it.
    _, pause = paused_run("refund", {"order_id": "AFTER-REDIS", "amount": 3})
    after_id = deployment.approve(pause.pk, reviewer_token)["run_id"]
    wait_for(lambda: Run.objects.get(pk=after_id).status == RunStatus.COMPLETED, timeout=30,
             what="a turn approved after the last Redis restart to complete",
             detail=deployment.logs)
    assert_sound(after_id, reviewer=REVIEWER)
    assert Refund.objects.filter(run_id=after_id).count() == 1
    print(f"\nRedis restarted: {len(trials)} trials with {REDIS_WATCHERS} watchers each in "
          f"{elapsed(started)}: every turn completed; {summary(trials)}; workers and daphne "
          f"alive, a turn approved after the last restart completed")
