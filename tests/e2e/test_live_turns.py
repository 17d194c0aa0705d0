"""Live turns over a real deployment: daphne, two Celery workers, PostgreSQL, Redis.

The client is the ``websockets`` library over TCP, as a browser or a script
would connect; approvals go over HTTP with a reviewer's DRF token, so the
continuation is dispatched by the server process and run by a worker process.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core import signing
from django.utils import timezone
from websockets.exceptions import InvalidStatus

from symfonic_django.models import Run, RunStatus, TurnEvent
from symfonic_django.tokens import TICKET_SALT, mint_watch_ticket
from tests.testapp.models import Refund

from ..conftest import paused_run
from .conftest import in_db, run_async
from .stack import ROOT, Watch, wait_for, watch

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

WATCHERS = 200
BURST = 1000


def stored_seqs(run_id: Any) -> list[int]:
    return list(TurnEvent.objects.filter(run_id=run_id).order_by("seq").values_list("seq", flat=True))


def assert_whole_stream(seen: Watch, run_id: Any) -> None:
    """Every stored event exactly once, in order, ending with the terminal one and 1000."""
    assert seen.seqs == stored_seqs(run_id), seen.seqs
    assert seen.seqs == list(range(1, len(seen.seqs) + 1))
    assert seen.events[0]["type"] == "turn.started"
    assert seen.events[-1]["type"] == "turn.completed"
    assert seen.close_code == 1000


def test_an_approval_streams_the_resumed_turn_to_a_ticket_holder_then_closes_1000(live, users):
    run, pause = paused_run("refund", {"order_id": "E2E-1", "amount": 12.5})
    accepted = live.approve(pause.pk, users["alice"]["token"])
    cont_id, stream = accepted["run_id"], accepted["stream"]
    assert stream["path"] == f"/ws/symfonic/runs/{cont_id}/"

    url = f"ws://127.0.0.1:{live.port}{stream['path']}?ticket={stream['ticket']}"
    seen = run_async(lambda: watch(url, origin=live.origin), timeout=30)

    assert_whole_stream(seen, cont_id)
    assert [e["type"] for e in seen.events] == [
        "turn.started", "tool.started", "tool.completed", "message.delta", "message.delta",
        "message.delta", "message.delta", "turn.completed"]
    started = seen.events[0]
    assert started["data"] == {"agent": "refund", "resumed_from_pause": str(pause.pk)}
    assert started["run_id"] == cont_id and started["root_run_id"] == str(run.pk)
    assert "".join(e["data"]["text"] for e in seen.events if e["type"] == "message.delta") == (
        "Refund of 12.5 on order E2E-1 is done.")
    assert Refund.objects.filter(run_id=cont_id).count() == 1
    assert Run.objects.get(pk=cont_id).status == RunStatus.COMPLETED


def test_a_dropped_watcher_reconnects_with_after_and_gets_exactly_the_missing_events(live, users):
    _, pause = paused_run("stream", {"n": 80, "sleep": 0.03})
    accepted = live.approve(pause.pk, users["alice"]["token"])
    cont_id, ticket = accepted["run_id"], accepted["stream"]["ticket"]  # issued to alice

    async def go() -> tuple[Watch, Watch, str]:
        first = await watch(live.ws_url(cont_id, ticket=ticket), origin=live.origin,
                            until=lambda w: w.last_seq >= 20)
        status = await in_db(lambda: Run.objects.get(pk=cont_id).status)
        second = await watch(live.ws_url(cont_id, ticket=ticket, after=first.last_seq),
                             origin=live.origin)
        return first, second, status

    first, second, status_at_drop = run_async(go, timeout=40)

    assert first.dropped and first.close_code is None
    assert status_at_drop == RunStatus.RUNNING, "the drop was meant to happen mid-stream"
    assert second.seqs[0] == first.last_seq + 1
    both = Watch(events=first.events + second.events, close_code=second.close_code)
    assert_whole_stream(both, cont_id)
    assert len(both.events) == 82  # turn.started, 80 deltas, turn.completed


def test_a_socket_past_the_end_of_a_live_turn_waits_then_closes_1000_after_its_end(
        live, users, tmp_path):
    """``?after=`` beyond anything the turn will store: no event is sent (none is after
    it), and the socket closes 1000 once the turn has ended, as any other watcher's does.
    Before, it stayed open for good."""
    gate = tmp_path / "go"
    _, pause = paused_run("stream", {"n": 20, "sleep": 0.01, "gate": str(gate)})
    cont_id = live.approve(pause.pk, users["alice"]["token"])["run_id"]
    cookie = live.login("admin", users["admin"]["password"])

    async def go() -> Watch:
        waiting = asyncio.ensure_future(watch(live.ws_url(cont_id, after=1000),
                                              origin=live.origin, cookie=cookie, timeout=30))
        await asyncio.sleep(1)
        assert not waiting.done(), "it closed before the turn had ended"
        gate.touch()
        return await waiting

    seen = run_async(go, timeout=40)
    assert seen.events == [] and seen.close_code == 1000
    assert Run.objects.get(pk=cont_id).status == RunStatus.COMPLETED
    assert len(stored_seqs(cont_id)) == 22


def test_two_hundred_watchers_each_get_all_thousand_events_in_order(live, users, tmp_path):
    gate = tmp_path / "go"
    _, pause = paused_run("stream", {"n": BURST, "gate": str(gate)})
    accepted = live.approve(pause.pk, users["alice"]["token"])
    cont_id, ticket = accepted["run_id"], accepted["stream"]["ticket"]  # issued to alice

    async def go() -> tuple[list[tuple[Watch, int]], float]:
        subscribed = [asyncio.Event() for _ in range(WATCHERS)]
        handshakes = asyncio.Semaphore(25)  # a burst of 200 SYNs overflows the accept backlog

        async def watcher(i: int) -> tuple[Watch, int]:
            seen = Watch()

            def until(w: Watch) -> bool:
                subscribed[i].set()  # turn.started replayed: the watcher is in the group
                return False

            async with handshakes:
                task = asyncio.ensure_future(watch(live.ws_url(cont_id, ticket=ticket),
                                                   origin=live.origin, until=until, seen=seen,
                                                   timeout=120))
                await asyncio.wait([task, asyncio.ensure_future(subscribed[i].wait())],
                                   return_when=asyncio.FIRST_COMPLETED)
            await task
            # daphne closes 1000 after the terminal event and drops a socket whose peer has
            # not answered that close within a second (autobahn's closing handshake
            # timeout): under load this one process, reading 200 sockets, is that far
            # behind, and the drop discards what its socket had not read. A client then
            # reconnects with ?after=, as the live viewer does, and gets the rest.
            reconnects = 0
            while seen.close_code == 1006 and reconnects < 3:
                reconnects += 1
                seen.close_code = None
                await watch(live.ws_url(cont_id, ticket=ticket, after=seen.last_seq),
                            origin=live.origin, seen=seen, timeout=60)
            return seen, reconnects

        tasks = [asyncio.ensure_future(watcher(i)) for i in range(WATCHERS)]
        await asyncio.wait_for(asyncio.gather(*(s.wait() for s in subscribed)), 60)
        started = time.monotonic()
        Path(gate).touch()
        results = await asyncio.gather(*tasks)
        return results, time.monotonic() - started

    results, elapsed = run_async(go, timeout=150)

    stored = stored_seqs(cont_id)
    assert len(stored) == BURST + 2
    # Every watcher has every event exactly once, in order, and the last socket closed 1000.
    short = [(i, seen.last_seq, seen.close_code) for i, (seen, _) in enumerate(results)
             if seen.seqs != stored or seen.close_code != 1000]
    assert not short, f"watchers (index, last seq, close code) short of {len(stored)}: {short}"
    for seen, _ in results:
        assert sum(e["type"] == "message.delta" for e in seen.events) == BURST
    reconnected = sum(1 for _, reconnects in results if reconnects)
    print(f"\n{WATCHERS} watchers x {BURST + 2} events in {elapsed:.1f}s "
          f"({WATCHERS * (BURST + 2) / elapsed:,.0f} messages/s); {reconnected} reconnected "
          "after daphne dropped them at the close")
    assert elapsed < 90


def test_a_redis_restart_mid_turn_loses_no_event_and_the_workers_carry_on(live, users):
    _, pause = paused_run("stream", {"n": 120, "sleep": 0.03})
    accepted = live.approve(pause.pk, users["alice"]["token"])
    cont_id, ticket = accepted["run_id"], accepted["stream"]["ticket"]  # issued to alice

    async def go() -> tuple[Watch, int, list[int | None]]:
        seen, restarted_at, codes = Watch(), [], []

        async def restart_redis_mid_stream() -> None:
            while seen.last_seq < 15:
                await asyncio.sleep(0.005)
            restarted_at.append(seen.last_seq)
            await asyncio.to_thread(live.restart_redis)

        restarter = asyncio.ensure_future(restart_redis_mid_stream())
        while seen.close_code != 1000:
            assert len(codes) <= 30, f"gave up reconnecting: {codes}"
            seen.close_code = None
            try:
                await watch(live.ws_url(cont_id, ticket=ticket, after=seen.last_seq),
                            origin=live.origin, seen=seen, timeout=15)
            except (TimeoutError, OSError, InvalidStatus) as exc:
                codes.append(type(exc).__name__)
                await asyncio.sleep(0.2)
            else:
                codes.append(seen.close_code)
        await restarter
        return seen, restarted_at[0], codes

    seen, restarted_at, codes = run_async(go, timeout=60)
    print(f"\nRedis restarted after seq {restarted_at}; connections ended with {codes}")

    assert_whole_stream(seen, cont_id)
    assert seen.events[-1]["data"] == {"output": {"streamed": 120}}
    assert restarted_at < len(seen.events) - 1, "the restart was meant to happen mid-turn"
    assert Run.objects.get(pk=cont_id).status == RunStatus.COMPLETED
    for name in ("worker1", "worker2", "daphne"):
        assert live.proc(name).alive(), f"{name} died with Redis:\n{live.logs()}"

    # After the restart both the server (dispatch) and the workers (consume) reconnected.
    _, pause = paused_run("refund", {"order_id": "AFTER-REDIS", "amount": 3})
    after_id = live.approve(pause.pk, users["alice"]["token"])["run_id"]
    wait_for(lambda: Run.objects.get(pk=after_id).status == RunStatus.COMPLETED, timeout=30,
             what=f"a turn approved after the Redis restart to complete\n{live.logs()}")


def test_a_pause_approved_while_redis_is_down_still_continues_once_it_is_back(live, users):
    """The answer commits; the lost message is sent again by the requeue sweep."""
    _, pause = paused_run("echo")
    live.redis.kill()
    try:
        status, body = live.api("POST", f"pauses/{pause.pk}/approve/", users["alice"]["token"],
                                {})
    finally:
        live.redis.start()
    assert status == 202, (status, str(body)[:300])
    # Its message is overdue once nobody claimed it for RESEND_AFTER (10 s): say it is now.
    assert Run.objects.filter(parent=pause.run_id, status=RunStatus.QUEUED).update(
        resend_after=timezone.now()) == 1
    sweep = subprocess.run([sys.executable, "manage.py", "symfonic_reap"],
                           cwd=ROOT, env=live.env, capture_output=True, text=True, timeout=60)
    assert sweep.returncode == 0, sweep.stderr[-2000:]
    assert "sent again 1 overdue run(s)" in sweep.stdout
    wait_for(lambda: Run.objects.filter(parent=pause.run_id, status=RunStatus.COMPLETED).exists(),
             timeout=30, what="the continuation approved while Redis was down to run")


class _OldTimestampSigner(signing.TimestampSigner):
    def timestamp(self) -> str:
        return signing.b62_encode(int(time.time()) - 2 * 3600)


def test_refused_sockets_get_their_close_code_and_a_foreign_origin_no_handshake(live, users):
    run, _ = paused_run("echo", scope="globex")
    other, _ = paused_run("echo", scope="globex")
    alice = live.login("alice", users["alice"]["password"])
    bob = live.login("bob", users["bob"]["password"])
    bob_user = get_user_model().objects.get(username="bob")  # a reader of globex
    expired = _OldTimestampSigner(salt=TICKET_SALT, algorithm="sha256").sign_object(
        [str(run.root_id), str(run.pk), "user", str(bob_user.pk)])

    async def code(**kwargs: Any) -> int | None:
        seen = await watch(live.ws_url(run.pk, ticket=kwargs.pop("ticket", None)),
                           origin=kwargs.pop("origin", live.origin), timeout=10, **kwargs)
        assert seen.events == [] or seen.close_code == 1000
        return seen.close_code

    async def go() -> dict[str, Any]:
        out = {
            "nothing": await code(),
            "alice's session on globex": await code(cookie=alice),
            "bob's session on globex": await code(cookie=bob),
            "bad ticket": await code(ticket="not-a-ticket"),
            "tampered ticket": await code(ticket=mint_watch_ticket(run, user=bob_user)[:-2] + "xx"),
            "another run's ticket": await code(ticket=mint_watch_ticket(other, user=bob_user)),
            "expired ticket": await code(ticket=expired),
            "fresh ticket": await code(ticket=mint_watch_ticket(run, user=bob_user)),
        }
        try:
            await code(ticket=mint_watch_ticket(run, user=bob_user), origin="http://evil.example")
        except InvalidStatus as exc:
            out["wrong origin"] = exc.response.status_code
        return out

    assert run_async(go, timeout=60) == {
        "nothing": 4401,
        "alice's session on globex": 4404,
        "bob's session on globex": 1000,
        "bad ticket": 4401,
        "tampered ticket": 4401,
        "another run's ticket": 4401,
        "expired ticket": 4401,
        "fresh ticket": 1000,
        "wrong origin": 403,
    }
