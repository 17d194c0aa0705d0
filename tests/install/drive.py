"""Drive the installed app in the README's project: start -> pause -> approve -> completed.

Run by ``scripts/install_check.sh`` with the fresh virtualenv's Python, in the
project made by ``startproject proj`` (``DJANGO_SETTINGS_MODULE=proj.settings``),
while a real Celery worker (``celery -A proj worker``) and an ASGI server
(``daphne proj.asgi:application`` or ``uvicorn proj.asgi:application``) serve
it. It uses only what the README shows: ``start_run`` from Python, then the
HTTP API with the reviewer's ``Authorization: Token`` header, then the run's
websocket with the ticket of the 202. Standard library besides the installed
project.

    python drive.py shipped               # the installed templates load; the beat schedule
    python drive.py api BASE_URL TOKEN    # a turn through the API and its websocket
    python drive.py pause BASE_URL TOKEN  # a run paused on the worker: its pending pause's id,
                                          # alone on stdout (progress on stderr), for browse.py

Each prints its steps and exits non-zero at the first failure.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from importlib.resources import files
from typing import Any, TypeVar
from urllib.parse import urlsplit

import django

T = TypeVar("T")
#: Seconds a worker gets to pick up and finish a turn; a short turn takes well under one.
TURN_TIMEOUT = 60.0


class Failed(Exception):
    pass


class Api:
    """The reviewer's view of the HTTP API, as the README's curl lines use it."""

    def __init__(self, base_url: str, token: str) -> None:
        self.base_url, self.token = base_url.rstrip("/"), token

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.base_url + path, data=data, method=method,
            headers={"Authorization": f"Token {self.token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode(errors="replace")[:500]

    def ok(self, method: str, path: str, expected: int, body: Any = None) -> Any:
        status, payload = self.call(method, path, body)
        if status != expected:
            raise Failed(f"{method} {path} answered {status}, not {expected}: {payload}")
        return payload


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = TURN_TIMEOUT) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value is not None:
            return value
        time.sleep(0.2)
    raise Failed(f"timed out after {timeout:.0f} s waiting for {what}")


def run_status(api: Api, run_id: str, wanted: str) -> Callable[[], dict[str, Any] | None]:
    def probe() -> dict[str, Any] | None:
        run = api.ok("GET", f"/api/symfonic/runs/{run_id}/", 200)
        if run["status"] == "failed":
            raise Failed(f"run {run_id} failed: {run['error']}")
        return run if run["status"] == wanted else None
    return probe


def websocket_messages(base_url: str, path: str, timeout: float = TURN_TIMEOUT) -> list[Any]:
    """Every text message of one websocket until the server closes it (RFC 6455, client side).

    A few lines of the standard library instead of a client package, so the
    fresh virtualenv holds only what the README installs.
    """
    url = urlsplit(base_url)
    host, port = url.hostname or "127.0.0.1", url.port or 80
    key = base64.b64encode(os.urandom(16)).decode()
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                      "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                      f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                      f"Origin: {url.scheme}://{host}:{port}\r\n\r\n").encode())
        stream = sock.makefile("rb")
        status = stream.readline().decode().strip()
        if " 101 " not in f"{status} ":
            raise Failed(f"the websocket {path} was refused: {status!r}")
        while stream.readline() not in (b"\r\n", b""):
            pass  # the rest of the handshake's headers
        messages: list[Any] = []
        while True:
            first, second = stream.read(2)
            opcode, length = first & 0x0F, second & 0x7F
            if length == 126:
                (length,) = struct.unpack("!H", stream.read(2))
            elif length == 127:
                (length,) = struct.unpack("!Q", stream.read(8))
            payload = stream.read(length)  # frames from a server are never masked
            if opcode == 0x8:  # close
                return messages
            if opcode == 0x1:
                messages.append(json.loads(payload))


def check_shipped_files() -> None:
    from django.template.loader import get_template

    root = files("symfonic_django") / "templates"
    names: list[str] = []

    def walk(node: Any, prefix: str) -> None:
        for child in node.iterdir():
            if child.is_dir():
                walk(child, f"{prefix}{child.name}/")
            elif child.name.endswith(".html"):
                names.append(prefix + child.name)

    walk(root, "")
    for name in names:
        try:
            get_template(name)
        except Exception as error:  # noqa: BLE001  (any reason it does not load is the failure)
            raise Failed(f"the installed template {name} does not load: {error!r}") from error
    if not names:
        raise Failed("the installed app has no templates")
    print(f"  ok: {len(names)} templates of the installed app load")


def check_beat_schedule() -> None:
    from proj.celery import app

    from symfonic_django.tasks import BEAT_SCHEDULE

    app.finalize()
    missing = sorted(set(BEAT_SCHEDULE) - set(app.conf.beat_schedule))
    if missing:
        raise Failed(f"celery -A proj beat would not schedule {missing}")
    print(f"  ok: the beat schedule has {sorted(BEAT_SCHEDULE)}")


def drive(base_url: str, token: str) -> None:
    from symfonic_django import start_run

    api = Api(base_url, token)
    schema = api.ok("GET", "/api/symfonic/schema/?format=json", 200)
    approve_path = "/api/symfonic/pauses/{id}/approve/"
    if approve_path not in schema.get("paths", {}):
        raise Failed(f"the schema does not describe {approve_path}")
    print(f"  ok: GET /api/symfonic/schema/ 200, {len(schema['paths'])} paths")

    started = time.monotonic()
    run = start_run("refund", {"order_id": "A-1", "amount": 20}, scope="acme")
    wait_for("the worker to pause the run", run_status(api, str(run.pk), "paused"))
    print(f"  ok: run {run.pk} paused on the worker ({time.monotonic() - started:.1f} s)")

    page = api.ok("GET", f"/api/symfonic/pauses/?status=pending&run={run.pk}", 200)
    if len(page["results"]) != 1:
        raise Failed(f"expected one pending pause of run {run.pk}, got {page['results']}")
    pause_id = page["results"][0]["id"]
    accepted = api.ok("POST", f"/api/symfonic/pauses/{pause_id}/approve/", 202, {})
    continuation = accepted["run_id"]
    print(f"  ok: pause {pause_id} approved with the Token header (202), continuation "
          f"{continuation}")

    stream = accepted["stream"]
    events = websocket_messages(base_url, f"{stream['path']}?ticket={stream['ticket']}")
    types = [event["type"] for event in events]
    if not types or types[-1] != "turn.completed":
        raise Failed(f"the websocket of {continuation} ended without turn.completed: {types}")
    print(f"  ok: the websocket streamed {types}")

    done = wait_for("the continuation to complete",
                    run_status(api, continuation, "completed"))
    if done["output"] != {"refunded": True}:
        raise Failed(f"the continuation's output is {done['output']}, not {{'refunded': True}}")
    print(f"  ok: continuation completed with {done['output']} "
          f"({time.monotonic() - started:.1f} s from start_run)")


def pending_pause(base_url: str, token: str) -> None:
    """Start a run, wait for the worker to pause it, print its pending pause's id."""
    from symfonic_django import start_run

    api = Api(base_url, token)
    run = start_run("refund", {"order_id": "B-2", "amount": 35}, scope="acme")
    wait_for("the worker to pause the run", run_status(api, str(run.pk), "paused"))
    page = api.ok("GET", f"/api/symfonic/pauses/?status=pending&run={run.pk}", 200)
    if len(page["results"]) != 1:
        raise Failed(f"expected one pending pause of run {run.pk}, got {page['results']}")
    print(f"  ok: run {run.pk} paused for the browser", file=sys.stderr)
    print(page["results"][0]["id"])


def main() -> int:
    command, *args = sys.argv[1:]
    django.setup()
    try:
        if command == "shipped":
            check_shipped_files()
            check_beat_schedule()
        elif command == "api":
            drive(*args)
        elif command == "pause":
            pending_pause(*args)
        else:
            raise Failed(f"no command {command!r}: shipped, api or pause")
    except Failed as failure:
        print(f"  FAILED: {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
