"""What watchers cost a real daphne: sockets that never read, and a burst of disconnects.

Both run against the live stack (daphne, its private Redis, PostgreSQL). The
figures they print are the ones ``docs/reliability.md`` states ("Watchers that
do not read").
"""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from symfonic_django.consumers import PAGE_BYTES, PAGE_EVENTS
from symfonic_django.events import MessageDelta, group_name
from symfonic_django.models import Run, RunStatus, TurnEvent
from symfonic_django.runs import start_run

from ..conftest import paused_run
from .conftest import run_async
from .stack import Stack, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

SILENT_SOCKETS = 20
EVENTS = 20_000
EVENT_TEXT = "x" * 1000  # an event of about 1 KB on the wire
BURST = 300
LIVE_EVENTS = 5_000


def rss_kb(pid: int) -> int:
    """The process's resident set (``VmRSS`` of /proc/<pid>/status), in kB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


@contextmanager
def peak_rss(pid: int) -> Iterator[list[int]]:
    """Sample ``pid``'s RSS every 20 ms while the block runs; yields ``[peak kB]``."""
    peak = [rss_kb(pid)]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.02):
            peak[0] = max(peak[0], rss_kb(pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield peak
    finally:
        stop.set()
        sampler.join()


def live_run_with_events(n: int) -> Run:
    """A run still live (queued, no terminal event) that already stores ``n`` deltas."""
    run = start_run("echo", {}, scope="acme", dispatch=False)
    TurnEvent.objects.bulk_create(
        [TurnEvent(run=run, seq=i, type=MessageDelta.type, data={"text": EVENT_TEXT},
                   scope_key=run.scope_key) for i in range(1, n + 1)], batch_size=2000)
    return run


def group_members(live: Stack, run_id: Any) -> int:
    """Members of the run's group as channels_redis keeps them (a sorted set per group)."""
    import redis

    assert live.redis is not None
    client = redis.Redis(host="127.0.0.1", port=live.redis.port, db=0)
    try:
        return int(client.zcard(f"asgi:group:{group_name(run_id)}"))
    finally:
        client.close()


def open_silent_socket(live: Stack, path: str, cookie: str) -> socket.socket:
    """Complete a websocket handshake over raw TCP, then never read again.

    The receive buffer is made small before connecting, so the kernel takes
    little of what the server sends: the rest stays in the server.
    """
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(10)
    sock.connect(("127.0.0.1", live.port))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{live.port}\r\n"
                  "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                  f"Origin: {live.origin}\r\nCookie: sessionid={cookie}\r\n\r\n").encode())
    head = b""
    while not head.endswith(b"\r\n\r\n"):  # a byte at a time: not one byte of a frame
        byte = sock.recv(1)
        assert byte, f"closed during the handshake: {head!r}"
        head += byte
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


def drain(sock: socket.socket, timeout: float) -> tuple[bytes, bool]:
    """Everything left to read on ``sock`` and whether the server ended the connection."""
    data = b""
    sock.settimeout(timeout)
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except TimeoutError:
        return data, False
    except ConnectionResetError:  # daphne drops a peer that does not answer its close
        pass
    return data, True


def frames(data: bytes) -> Iterator[tuple[int, bytes]]:
    """The (opcode, payload) of each whole unmasked server frame in ``data``."""
    at = 0
    while at + 2 <= len(data):
        opcode, size = data[at] & 0x0F, data[at + 1] & 0x7F
        at += 2
        if size == 126:
            size, at = int.from_bytes(data[at:at + 2], "big"), at + 2
        elif size == 127:
            size, at = int.from_bytes(data[at:at + 8], "big"), at + 8
        if at + size > len(data):
            return
        yield opcode, data[at:at + size]
        at += size


def silent_sockets_cost(live: Stack, run_id: Any, cookie: str, what: str,
                        start: Callable[[], None] | None = None) -> float:
    """Open ``SILENT_SOCKETS`` sockets on the run that never read (then ``start()`` the
    run streaming, when given), until the server has closed them all; daphne's peak RSS
    growth in MB. Each socket must have been handed a page at most, and closed 4408."""
    daphne = live.proc("daphne").pid
    path = f"/ws/symfonic/runs/{run_id}/?after=0"
    before = rss_kb(daphne)
    started = time.monotonic()
    with peak_rss(daphne) as peak:
        sockets = [open_silent_socket(live, path, cookie) for _ in range(SILENT_SOCKETS)]
        try:
            if start is not None:
                start()
            # Each is handed a page, then closed 4408, and its consumer leaves the group.
            # Watch 3 s at least (the sockets may join after the first look), 30 s at most.
            while time.monotonic() - started < 30 and (
                    time.monotonic() - started < 3 or group_members(live, run_id)):
                time.sleep(0.2)
            seconds = time.monotonic() - started
            after = rss_kb(daphne)
            ended = [drain(sock, timeout=5) for sock in sockets]
        finally:
            for sock in sockets:
                sock.close()
    grew_mb = (peak[0] - before) / 1024
    print(f"\n{SILENT_SOCKETS} silent sockets, {what}: daphne {before / 1024:.0f} MB before, "
          f"peak {peak[0] / 1024:.0f} MB (+{grew_mb:.1f} MB), {after / 1024:.0f} MB after; "
          f"out of the group after {seconds:.1f} s")
    for data, closed in ended:
        assert closed, "the server never ended a socket that does not read"
        sent = list(frames(data))
        texts = [payload for opcode, payload in sent if opcode == 0x1]
        assert len(texts) <= PAGE_EVENTS and sum(map(len, texts)) <= PAGE_BYTES  # a page at most
        codes = [int.from_bytes(payload[:2], "big") for opcode, payload in sent if opcode == 0x8]
        assert codes in ([], [4408])  # a close frame that arrived before the drop says 4408
    return grew_mb


def test_twenty_sockets_that_never_read_a_20000_event_run_grow_daphne_by_under_50_mb(
        live, users):
    run = live_run_with_events(EVENTS)
    cookie = live.login("admin", users["admin"]["password"])
    grew_mb = silent_sockets_cost(live, run.pk, cookie, f"{EVENTS:,} stored events of ~1 KB")
    assert grew_mb < 50


def test_twenty_sockets_that_never_read_a_turn_streaming_live_grow_daphne_by_under_50_mb(
        live, users, tmp_path):
    """The same sockets on a turn a worker streams while they watch: events rung one by
    one count toward the page as replayed ones do."""
    gate = tmp_path / "go"
    _, pause = paused_run("stream", {"n": LIVE_EVENTS, "pad": 1000, "gate": str(gate)})
    cont_id = live.approve(pause.pk, users["alice"]["token"])["run_id"]
    cookie = live.login("admin", users["admin"]["password"])
    grew_mb = silent_sockets_cost(live, cont_id, cookie,
                                  f"a turn streaming {LIVE_EVENTS:,} events of ~1 KB live",
                                  start=gate.touch)
    assert grew_mb < 50
    wait_for(lambda: Run.objects.get(pk=cont_id).status == RunStatus.COMPLETED, timeout=90,
             what="the streaming turn to complete", detail=live.logs)
    assert TurnEvent.objects.filter(run_id=cont_id).count() == LIVE_EVENTS + 2


def test_three_hundred_sockets_closed_at_once_leave_no_member_in_the_group(live, users):
    run = live_run_with_events(1)
    cookie = live.login("admin", users["admin"]["password"])
    url = live.ws_url(run.pk)

    async def go() -> float:
        from websockets.asyncio.client import connect

        handshakes = asyncio.Semaphore(25)  # a burst of SYNs overflows the accept backlog

        async def open_one() -> Any:
            async with handshakes:
                ws = await connect(url, origin=live.origin, open_timeout=30,
                                   additional_headers={"Cookie": f"sessionid={cookie}"})
                await ws.recv()  # seq 1: connected, and in the group
                return ws

        sockets = await asyncio.gather(*(open_one() for _ in range(BURST)))
        members = await asyncio.to_thread(group_members, live, run.pk)
        assert members == BURST, members
        started = time.monotonic()
        await asyncio.gather(*(ws.close() for ws in sockets))
        left = await asyncio.to_thread(wait_for, lambda: group_members(live, run.pk) == 0,
                                       timeout=20, what="every socket to leave the group",
                                       detail=lambda: f"{group_members(live, run.pk)} left")
        assert left
        return time.monotonic() - started

    emptied = run_async(go, timeout=110)
    print(f"\n{BURST} sockets closed at once: the group was empty {emptied:.2f} s later")
    assert group_members(live, run.pk) == 0
