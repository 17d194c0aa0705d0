"""Shared pieces of the notification tests: a real local webhook receiver and the settings.

The receiver is a ``http.server`` on a free port of 127.0.0.1, in a thread of the
test process: it records every request as it arrived (its headers, names in lower case as
HTTP compares them, and its raw body) and
answers 500 to the first ``fail_first`` of them, then 200.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from tests.testapp.seed import seed_users

#: A Standard Webhooks secret: "whsec_" and the base64 of 32 bytes.
SECRET = "whsec_" + base64.b64encode(bytes(range(32))).decode()
SITE_URL = "https://review.example.com"


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """A webhook receiver: ``url``, what it ``received``, and how often it fails first."""

    fail_first: int = 0
    status_after: int = 200
    received: list[Received] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/hooks"

    def answer_for(self, number: int) -> int:
        return 500 if number <= self.fail_first else self.status_after

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802  (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = {name.lower(): value for name, value in self.headers.items()}
                receiver.received.append(Received(self.path, headers, body))
                status = receiver.answer_for(len(receiver.received))
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", "http://127.0.0.1:9/elsewhere")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the test reads what was received, not a log

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    started = Receiver().start()
    try:
        yield started
    finally:
        started.stop()


def endpoint(url: str, **extra: Any) -> dict[str, Any]:
    return {"NAME": "ops", "URL": url, "SECRET": SECRET, **extra}


@pytest.fixture
def notify(settings: Any) -> Any:
    """``notify(**keys)`` sets ``SYMFONIC["NOTIFY"]`` for the test (a site URL by default)."""

    def set_to(**keys: Any) -> None:
        settings.SYMFONIC = {**settings.SYMFONIC, "NOTIFY": {"SITE_URL": SITE_URL, **keys}}

    return set_to


@pytest.fixture
def reviewers(tenants: Any) -> dict[str, Any]:
    """The demo's users (alice reviews acme, bob globex), with email addresses, and carol:
    a member of acme who may view but not answer, so is never emailed."""
    seed_users()
    User = get_user_model()
    for name in ("alice", "bob"):
        User.objects.filter(username=name).update(email=f"{name}@example.com")
    carol = User.objects.create_user("carol", email="carol@example.com", is_staff=True)
    from tests.testapp.models import Membership

    Membership.objects.create(user=carol, tenant=tenants["acme"])
    return {u.username: u for u in User.objects.all()}
