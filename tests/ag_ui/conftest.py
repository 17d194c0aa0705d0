"""The AG-UI endpoint driven in-process: a client that reads the event stream, checks every
event against ``ag-ui-protocol``'s own models, and runs the turns it waits for.

No worker runs here: the stream's wait (``agui.stream.wait_for_more``) is replaced by
running every queued run in this process, so a started or resumed turn happens while its
stream waits for it, as a worker's would.
"""

from __future__ import annotations

import importlib.util
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from ag_ui.core import Event
from asgiref.sync import async_to_sync, sync_to_async
from pydantic import TypeAdapter
from rest_framework.test import APIClient

from symfonic_django.models import Run, RunStatus
from symfonic_django.turns import execute_run
from tests.api.conftest import client_for

API = "/api/symfonic/"
EVENT = TypeAdapter(Event)


@dataclass
class Stream:
    """One response: its status, its events (validated, as dicts in wire form) and SSE ids."""

    status: int
    content_type: str
    events: list[dict[str, Any]]
    ids: list[str | None] = field(default_factory=list)

    @property
    def types(self) -> list[str]:
        return [e["type"] for e in self.events]

    @property
    def last(self) -> dict[str, Any]:
        return self.events[-1]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]

    @property
    def interrupts(self) -> list[dict[str, Any]]:
        assert self.last["type"] == "RUN_FINISHED", self.events
        assert self.last["outcome"]["type"] == "interrupt", self.last
        found: list[dict[str, Any]] = self.last["outcome"]["interrupts"]
        return found


def parse(text: str) -> tuple[list[dict[str, Any]], list[str | None]]:
    """SSE frames as (events, the id: line of each); every event validated by ag_ui."""
    events: list[dict[str, Any]] = []
    ids: list[str | None] = []
    for frame in text.split("\n\n"):
        if not frame.strip() or frame.startswith(":"):
            continue
        event_id = None
        data = None
        for line in frame.split("\n"):
            if line.startswith("id: "):
                event_id = line[4:]
            elif line.startswith("data: "):
                data = line[6:]
        assert data is not None, f"a frame without data: {frame!r}"
        raw = json.loads(data)
        model = EVENT.validate_python(raw)  # ag-ui-protocol's own models
        assert model.type.value == raw["type"]
        events.append(raw)
        ids.append(event_id)
    return events, ids


def run_queued() -> None:
    """Run every queued run in this process, as a worker would (continuations included)."""
    for run_id in Run.objects.filter(status=RunStatus.QUEUED).order_by(
            "created_at").values_list("pk", flat=True):
        execute_run(run_id)


@pytest.fixture(autouse=True)
def worker_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    async def run_them(run_id: Any, seconds: float) -> None:
        await sync_to_async(run_queued)()

    monkeypatch.setattr("symfonic_django.api.agui.stream.wait_for_more", run_them)


#: What the tests start and answer: one refund, approved.
REFUND = {"order_id": "AG-1", "amount": 12.5}
APPROVE = {"approved": True}
needs_langgraph = pytest.mark.skipif(importlib.util.find_spec("langgraph") is None,
                                     reason="refund_graph needs the [langgraph] extra")


def resumed(interrupts: list[dict[str, Any]], *payloads: Any, status: str = "resolved"
            ) -> list[dict[str, Any]]:
    """A ``resume`` array: one entry per interrupt, with its payload."""
    return [{"interruptId": i["id"], "status": status, "payload": p}
            for i, p in zip(interrupts, payloads, strict=True)]


def body(thread: str, *, input: Any = None, resume: list[dict[str, Any]] | None = None,
         run_id: str | None = None, after: str | None = None) -> dict[str, Any]:
    """A ``RunAgentInput`` as ``@ag-ui/client`` sends one."""
    props: dict[str, Any] = {}
    if input is not None:
        props["input"] = input
    if after is not None:
        props["after"] = after
    sent: dict[str, Any] = {"threadId": thread, "runId": run_id or str(uuid.uuid4()),
                            "messages": [], "tools": [], "context": [], "state": {},
                            "forwardedProps": props}
    if resume is not None:
        sent["resume"] = resume
    return sent


async def read_all(response: Any) -> bytes:
    """The whole stream, read as an ASGI server reads it (the content is an async iterator)."""
    return b"".join([chunk async for chunk in response.streaming_content])


def post(client: APIClient, agent: str, sent: Any, **headers: str) -> Stream:
    # As HttpAgent sends it: a JSON body, accepting the event stream.
    response = client.post(f"{API}ag-ui/{agent}/", sent, format="json",
                           **{"HTTP_ACCEPT": "text/event-stream", **headers})
    content = async_to_sync(read_all)(response) if response.streaming else response.content
    events, ids = parse(content.decode())
    assert events, "the endpoint sent no event"
    assert events[0]["type"] in ("RUN_STARTED", "RUN_ERROR"), events[0]
    assert events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR"), events[-1]
    return Stream(response.status_code, response["Content-Type"], events, ids)


@pytest.fixture
def agui(users: dict[str, dict[str, str]]) -> Callable[..., Stream]:
    """``agui("alice", "refund", body(...))``: the user's AG-UI request, as a Stream."""
    def send(who: str | None, agent: str, sent: Any, **headers: str) -> Stream:
        return post(client_for(users[who]["token"] if who else None), agent, sent, **headers)
    return send


@pytest.fixture
def thread() -> Iterator[str]:
    yield f"thread-{uuid.uuid4()}"
