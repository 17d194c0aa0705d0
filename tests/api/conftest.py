"""Clients of the demo's users, and a real server for the heavier API tests.

``alice`` (acme), ``bob`` (globex) and ``admin`` (superuser) are API clients
with the DRF tokens ``seed_demo`` gives them.

The server (daphne serving the test app) is an OS process on a free
loopback port, reading and writing pytest-django's *test* database (so the
tests that use it are ``transaction=True``: what a test writes is committed,
and the server sees it). It is always terminated when the test ends, and
every wait is bounded.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from rest_framework.test import APIClient

from tests.testapp.seed import seed_users

ROOT = Path(__file__).resolve().parents[2]
DAPHNE = Path(sys.executable).with_name("daphne")
API = "/api/symfonic/"


def client_for(token: str | None) -> APIClient:
    """A client sending ``Authorization: Token <token>``, or no credentials at all."""
    client = APIClient()
    if token:
        client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


@pytest.fixture
def users(tenants: dict[str, Any]) -> dict[str, dict[str, str]]:
    """``admin``, ``alice`` and ``bob`` as ``seed_demo`` makes them: passwords and tokens."""
    return seed_users()


@pytest.fixture
def alice(users: dict[str, dict[str, str]]) -> APIClient:
    return client_for(users["alice"]["token"])


@pytest.fixture
def bob(users: dict[str, dict[str, str]]) -> APIClient:
    return client_for(users["bob"]["token"])


@pytest.fixture
def admin(users: dict[str, dict[str, str]]) -> APIClient:
    return client_for(users["admin"]["token"])


def shared_database_url() -> str:
    """The URL of pytest-django's test database (PostgreSQL)."""
    from django.db import connection

    s = connection.settings_dict
    assert s["ENGINE"].endswith("postgresql"), "a server process needs a shared database"
    auth = quote(s["USER"] or "", safe="")
    if s.get("PASSWORD"):
        auth += ":" + quote(str(s["PASSWORD"]), safe="")
    host = s["HOST"] or "127.0.0.1"
    port = f":{s['PORT']}" if s.get("PORT") else ""
    return f"postgres://{auth}@{host}{port}/{quote(s['NAME'], safe='')}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LiveServer:
    """One daphne process; ``url`` is its origin, e.g. ``http://127.0.0.1:43121``."""

    url: str
    proc: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)


def start_server(log_path: Path, *, broker_url: str, timeout: float = 45,
                 **extra_env: str) -> LiveServer:
    """Start daphne on the test database and wait until it serves the schema."""
    port = free_port()
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")}
    env.update(DJANGO_SETTINGS_MODULE="tests.settings", DATABASE_URL=shared_database_url(),
               CELERY_BROKER_URL=broker_url, PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               **extra_env)
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [str(DAPHNE), "-b", "127.0.0.1", "-p", str(port), "tests.testapp.asgi:application"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: stop() ends it and its children
        )
    server = LiveServer(url=f"http://127.0.0.1:{port}", proc=proc, log_path=log_path)
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"daphne exited with {proc.returncode}:\n{server.log()}")
        try:
            with urllib.request.urlopen(f"{server.url}/api/symfonic/schema/", timeout=2) as r:
                if r.status == 200:
                    return server
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            server.stop()
            raise AssertionError(f"daphne did not serve within {timeout:g}s:\n{server.log()}")
        time.sleep(0.1)


@pytest.fixture
def live_server_factory(transactional_db: Any, tmp_path: Path
                        ) -> Iterator[Callable[..., LiveServer]]:
    """``factory(broker_url=..., **env) -> LiveServer``; every server is stopped at the end."""
    started: list[LiveServer] = []

    def factory(*, broker_url: str = "memory://", **extra_env: str) -> LiveServer:
        server = start_server(tmp_path / f"daphne-{len(started)}.log", broker_url=broker_url,
                              **extra_env)
        started.append(server)
        return server

    try:
        yield factory
    finally:
        for server in started:
            server.stop()


def post_at_once(origin: str, path: str, requests: list[tuple[bytes, dict[str, str]]]
                 ) -> list[tuple[Any, Any]]:
    """POST each (body, headers) to ``path``, all released together; (status, body) each.

    Every request has its own connection, opened before a barrier releases them
    all, so they reach the server as close together as the machine allows.
    """
    host = urlsplit(origin)
    barrier = threading.Barrier(len(requests), timeout=30)
    outcomes: list[Any] = [None] * len(requests)

    def send(i: int) -> None:
        body, headers = requests[i]
        conn = http.client.HTTPConnection(host.hostname, host.port, timeout=60)
        try:
            conn.connect()
            barrier.wait()
            conn.request("POST", path, body=body,
                         headers={"Content-Type": "application/json", **headers})
            response = conn.getresponse()
            outcomes[i] = (response.status, json.loads(response.read()))
        except Exception as exc:  # noqa: BLE001 - reported as this request's outcome
            outcomes[i] = ("error", repr(exc))
        finally:
            conn.close()

    threads = [threading.Thread(target=send, args=(i,), daemon=True)
               for i in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=90)
    assert not any(t.is_alive() for t in threads), "a request is still waiting after 90 s"
    return outcomes

