"""A live deployment in OS processes: a private Redis, daphne and Celery workers.

Used by the end-to-end tests (``tests/e2e``) and by the websocket benchmarks
(``bench/bench_ws_*.py``). Everything runs from this checkout's virtualenv
against one PostgreSQL database given by URL. Redis is a server of our own on
a free port, never the shared 6379, so a test may kill and restart it without
disturbing anyone. Every process leads its own process group and is stopped
(SIGTERM, then SIGKILL of the group) by ``Stack.stop()``; every wait is bounded.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kill_group(popen: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group ``popen`` leads (``start_new_session``) and reap it."""
    try:
        os.killpg(popen.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        popen.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def wait_for(check: Callable[[], T], *, timeout: float, what: str,
             detail: Callable[[], str] | None = None, interval: float = 0.05) -> T:
    """Poll ``check`` until it returns something truthy; fail after ``timeout`` seconds.

    ``detail`` (say, the workers' logs) is read when the wait fails, not before.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}"
                                 + (f"\n{detail()}" if detail else ""))
        time.sleep(interval)


def database_url(settings_dict: dict[str, Any]) -> str:
    """A ``postgres://`` URL for a Django connection's ``settings_dict``."""
    s = settings_dict
    auth = quote(s["USER"] or "", safe="")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"], safe="")
    host = quote(s["HOST"] or "127.0.0.1", safe="")  # a socket directory is a path
    port = f":{s['PORT']}" if s.get("PORT") else ""
    return f"postgres://{auth}@{host}{port}/{quote(s['NAME'], safe='')}"


@dataclass
class Proc:
    """One child process in its own process group, its output in a log file."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log_path: Path
    popen: subprocess.Popen[bytes] | None = None

    def start(self) -> Proc:
        with self.log_path.open("ab") as log:
            self.popen = subprocess.Popen(self.argv, cwd=ROOT, env=self.env, stdout=log,
                                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          start_new_session=True)
        return self

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def check_alive(self) -> None:
        if not self.alive():
            raise AssertionError(f"{self.name} exited early:\n{self.log()[-3000:]}")

    def kill(self) -> None:
        """SIGKILL at once (a crash, not a shutdown)."""
        if self.popen is not None and self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(timeout=10)

    def stop(self, grace: float = 5) -> None:
        if self.popen is None:
            return
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        kill_group(self.popen)  # children (pool processes) share the group it leads


@dataclass
class Redis:
    """A private ``redis-server`` without persistence: a restart starts it empty."""

    port: int
    log_dir: Path
    proc: Proc | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def start(self) -> Redis:
        server = shutil.which("redis-server")
        assert server, "redis-server is not installed"
        self.proc = Proc("redis", [server, "--port", str(self.port), "--bind", "127.0.0.1",
                                   "--save", "", "--appendonly", "no", "--daemonize", "no",
                                   "--dir", str(self.log_dir)],
                         dict(os.environ), self.log_dir / "redis.log").start()
        wait_for(lambda: self.proc.check_alive() or self.ping(), timeout=10,
                 what=f"redis-server on port {self.port}")
        return self

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop(grace=2)


@dataclass
class Stack:
    """Redis, one daphne serving ``application``, and ``workers`` Celery worker processes."""

    database_url: str
    log_dir: Path
    workers: int = 2
    application: str = "tests.testapp.asgi:application"
    settings: str = "tests.settings"
    debug: bool = True
    extra_env: dict[str, str] = field(default_factory=dict)
    worker_args: list[str] = field(default_factory=list)
    profile_daphne: Path | None = None  # write daphne's cProfile stats here when it stops
    redis: Redis | None = None
    port: int = 0
    procs: list[Proc] = field(default_factory=list)

    # --- lifecycle ---------------------------------------------------------------

    @property
    def env(self) -> dict[str, str]:
        assert self.redis is not None
        env = {k: v for k, v in os.environ.items()
               if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")
               and not k.startswith("SYMFONIC_")}
        env.update(DJANGO_SETTINGS_MODULE=self.settings, DATABASE_URL=self.database_url,
                   REDIS_URL=f"{self.redis.url}/0", CELERY_BROKER_URL=f"{self.redis.url}/1",
                   DEBUG="1" if self.debug else "0", PYTHONUNBUFFERED="1",
                   PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT),
                                                            os.environ.get("PYTHONPATH")])),
                   **self.extra_env)
        return env

    def start(self) -> Stack:
        try:
            if self.redis is None:
                self.redis = Redis(free_port(), self.log_dir).start()
            workers = [self.spawn(f"worker{i}", [
                str(BIN / "celery"), "-A", "tests.testapp", "worker", "--pool", "solo",
                "-n", f"e2e{i}-{self.redis.port}@%h", "--loglevel", "INFO", "--without-gossip",
                "--without-mingle", *self.worker_args]) for i in range(1, self.workers + 1)]
            daphne, self.port = self.serve("daphne", self.application)
            wait_for(lambda: daphne.check_alive() or self.http_ready(), timeout=30,
                     what="daphne to answer HTTP")
            for worker in workers:
                wait_for(lambda w=worker: w.check_alive() or " ready." in w.log(), timeout=60,
                         what=f"{worker.name} to be ready")
        except BaseException:
            self.stop()
            raise
        return self

    def serve(self, name: str, application: str) -> tuple[Proc, int]:
        """Start one more daphne serving ``application``; returns it and its port."""
        port = free_port()
        profile = ([sys.executable, "-m", "cProfile", "-o", str(self.profile_daphne)]
                   if self.profile_daphne and name == "daphne" else [])
        proc = self.spawn(name, [*profile, str(BIN / "daphne"), "-b", "127.0.0.1", "-p",
                                 str(port), "-v", "0", application])

        def listening() -> bool:
            proc.check_alive()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                return True
            except OSError:
                return False

        wait_for(listening, timeout=30, what=f"{name} to listen on {port}")
        return proc, port

    def spawn(self, name: str, argv: list[str]) -> Proc:
        proc = Proc(name, argv, self.env, self.log_dir / f"{name}.log").start()
        self.procs.append(proc)
        return proc

    def proc(self, name: str) -> Proc:
        return next(p for p in self.procs if p.name == name)

    def stop(self) -> None:
        for proc in self.procs:
            proc.stop()
        if self.redis is not None:
            self.redis.stop()

    def restart_redis(self, down_for: float = 0.5) -> None:
        """Crash Redis (SIGKILL) and start a fresh, empty one on the same port."""
        assert self.redis is not None
        self.redis.kill()
        time.sleep(down_for)
        self.redis.start()

    def logs(self) -> str:
        return "\n".join(f"--- {p.name} ---\n{p.log()[-4000:]}" for p in self.procs)

    # --- HTTP ----------------------------------------------------------------------

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def http_ready(self) -> bool:
        try:
            return self.request("GET", "/admin/login/")[0] == 200
        except OSError:
            return False

    def request(self, method: str, path: str, body: Any = None, *,
                headers: dict[str, str] | None = None, form: bool = False,
                ) -> tuple[int, Any, http.client.HTTPResponse]:
        """One HTTP request; returns (status, parsed JSON or text, response)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            headers = dict(headers or {})
            data = None
            if body is not None:
                data = (urlencode(body) if form else json.dumps(body)).encode()
                headers["Content-Type"] = ("application/x-www-form-urlencoded" if form
                                           else "application/json")
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
            raw = response.read().decode(errors="replace")
            if response.getheader("Content-Type", "").startswith("application/json"):
                return response.status, json.loads(raw), response
            return response.status, raw, response
        finally:
            conn.close()

    def api(self, method: str, path: str, token: str, body: Any = None) -> tuple[int, Any]:
        status, data, _ = self.request(method, "/api/symfonic/" + path.lstrip("/"), body,
                                       headers={"Authorization": f"Token {token}"})
        return status, data

    def approve(self, pause_id: Any, token: str) -> dict[str, Any]:
        """Approve over the API; returns the 202 body (``run_id``, ``stream``)."""
        status, body = self.api("POST", f"pauses/{pause_id}/approve/", token, {})
        assert status == 202, (status, body)
        return body

    def login(self, username: str, password: str) -> str:
        """Log in through the admin's form; returns the ``sessionid`` cookie value."""
        status, page, response = self.request("GET", "/admin/login/")
        csrf = _cookie(response, "csrftoken")
        middleware_token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        assert status == 200 and csrf and middleware_token, (status, page[:500])
        status, page, response = self.request(
            "POST", "/admin/login/?next=/admin/",
            {"username": username, "password": password, "next": "/admin/",
             "csrfmiddlewaretoken": middleware_token.group(1)},
            headers={"Cookie": f"csrftoken={csrf}"}, form=True)
        session = _cookie(response, "sessionid")
        assert status == 302 and session, f"login of {username} failed: {status} {page[:500]}"
        return session

    # --- websocket -------------------------------------------------------------------

    def ws_url(self, run_id: Any, *, ticket: str | None = None, after: int | None = None) -> str:
        query = {k: v for k, v in (("after", after), ("ticket", ticket)) if v is not None}
        return (f"ws://127.0.0.1:{self.port}/ws/symfonic/runs/{run_id}/"
                + (f"?{urlencode(query)}" if query else ""))


def _cookie(response: http.client.HTTPResponse, name: str) -> str | None:
    for header in response.headers.get_all("Set-Cookie") or []:
        match = re.match(rf"{name}=([^;]*)", header)
        if match:
            return match.group(1)
    return None


# --- a websocket watcher -----------------------------------------------------------------

@dataclass
class Watch:
    """What one watcher saw: the events in arrival order and how the socket ended."""

    events: list[dict[str, Any]] = field(default_factory=list)
    close_code: int | None = None
    dropped: bool = False
    resumed: int = 0  # times the server closed it 4408 (too far behind) and it resumed

    @property
    def seqs(self) -> list[int]:
        return [e["seq"] for e in self.events]

    @property
    def last_seq(self) -> int:
        return self.events[-1]["seq"] if self.events else 0


TOO_FAR_BEHIND = 4408


def with_after(url: str, after: int) -> str:
    """``url`` with its ``after`` query parameter set to ``after``."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "after"] + [("after", str(after))]
    return urlunsplit(parts._replace(query=urlencode(query)))


async def watch(url: str, *, origin: str, cookie: str | None = None, timeout: float = 30,
                until: Callable[[Watch], bool] | None = None, seen: Watch | None = None,
                ) -> Watch:
    """Read events from ``url`` until the server closes (or ``until(watch)`` holds).

    A close 4408 (too far behind) is followed as a client should: reconnect with
    ``?after=<last seq>``. With ``until`` the connection is then dropped without a
    closing handshake, as a network failure would drop it. Events are appended to
    ``seen`` when given.
    """
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed

    result = seen if seen is not None else Watch()
    headers = {"Cookie": f"sessionid={cookie}"} if cookie else None

    async def read(url: str) -> None:
        async with connect(url, origin=origin, additional_headers=headers, open_timeout=10,
                           max_size=None, close_timeout=2) as ws:
            try:
                async for text in ws:
                    result.events.append(json.loads(text))
                    if until is not None and until(result):
                        ws.transport.abort()
                        result.dropped = True
                        return
            except ConnectionClosed:
                pass
            result.close_code = ws.close_code

    async def follow() -> None:
        await read(url)
        while result.close_code == TOO_FAR_BEHIND:
            result.resumed += 1
            result.close_code = None
            await read(with_after(url, result.last_seq))

    await asyncio.wait_for(follow(), timeout)
    return result
