"""Contenders that resume one interrupt through AG-UI or answer its pause through the API.

As in ``contenders``: each is an OS process of its own, set up from the environment it
is handed, released at a barrier. An AG-UI contender whose resume wins follows the
continuation's stream and runs that continuation itself, as a worker would (its
stream's wait runs the run: ``execute_run`` is a no-op for a run another process holds).
Nothing here imports Django at module level.
"""

from __future__ import annotations

import json
import time
from typing import Any

from .contenders import _setup_django

#: The surfaces, alternating: AG-UI and the API, each as alice (one caller: her replays
#: meet her own idempotency record) and as admin (another caller).
SURFACES = (("ag-ui", "alice"), ("api", "alice"), ("ag-ui", "admin"), ("api", "admin"))


def resume_at_barrier(env: dict[str, str], ids: dict[str, Any], index: int, barrier: Any,
                      results: Any) -> None:
    """Go for the pause once every racer is ready; report ``(index, surface, outcome)``."""
    surface, who = SURFACES[index % len(SURFACES)]
    try:
        _setup_django(env)
    except BaseException as exc:
        barrier.abort()
        results.put((index, surface, f"error: setup failed: {exc!r}"))
        raise
    barrier.wait(timeout=120)
    try:
        outcome = (_ag_ui if surface == "ag-ui" else _api)(ids, ids["tokens"][who])
    except Exception as exc:  # a 5xx-class failure: report it, the test fails on it
        outcome = f"error: {exc!r}"
    results.put((index, f"{surface} as {who}", outcome))


def _api(ids: dict[str, Any], token: str) -> str:
    from django.test import Client

    response = Client().post(f"/api/symfonic/pauses/{ids['pause']}/answer/",
                             {"answer": {"decisions": [{"type": "approve"}]}},
                             content_type="application/json", HTTP_AUTHORIZATION=f"Token {token}")
    return "answered" if response.status_code == 202 else response.json().get(
        "code", str(response.status_code))


def _ag_ui(ids: dict[str, Any], token: str) -> str:
    import asyncio
    from unittest.mock import patch

    from asgiref.sync import async_to_sync, sync_to_async
    from django.test import Client

    from symfonic_django.api.agui import stream
    from symfonic_django.turns import execute_run

    async def run_it(run_id: Any, seconds: float) -> None:
        await sync_to_async(execute_run)(run_id)
        await asyncio.sleep(0.05)

    async def read(response: Any) -> bytes:
        return b"".join([chunk async for chunk in response.streaming_content])

    body = {"threadId": ids["thread"], "runId": f"race-{time.time_ns()}", "messages": [],
            "resume": [{"interruptId": f"{ids['pause']}:0", "status": "resolved",
                        "payload": {"approved": True}}]}
    with patch.object(stream, "wait_for_more", run_it):
        response = Client().post("/api/symfonic/ag-ui/refund/", body,
                                 content_type="application/json",
                                 HTTP_ACCEPT="text/event-stream",
                                 HTTP_AUTHORIZATION=f"Token {token}")
        text = async_to_sync(read)(response).decode()
    events = [json.loads(frame.split("data: ", 1)[1]) for frame in text.split("\n\n")
              if "data: " in frame]
    last = events[-1]
    if last["type"] == "RUN_ERROR":
        return str(last.get("code"))
    return f"streamed:{last['outcome']['type']}"


def start_at_barrier(env: dict[str, str], ids: dict[str, Any], index: int, barrier: Any,
                     results: Any) -> None:
    """Send a new input on ``ids["thread"]`` over AG-UI once every racer is ready, without
    running anything (the turn stays queued); report ``(index, outcome)``: the run it
    started, or the refusal's code."""
    try:
        _setup_django(env)
    except BaseException as exc:
        barrier.abort()
        results.put((index, f"error: setup failed: {exc!r}"))
        raise
    barrier.wait(timeout=120)
    try:
        outcome = _start(ids, index)
    except Exception as exc:  # a 5xx-class failure: report it, the test fails on it
        outcome = f"error: {exc!r}"
    results.put((index, outcome))


def _start(ids: dict[str, Any], index: int) -> str:
    import asyncio
    from unittest.mock import patch

    from asgiref.sync import async_to_sync
    from django.test import Client

    from symfonic_django.api.agui import stream

    async def leave(response: Any) -> bytes:
        # The first event names the run (RUN_STARTED) or the refusal (RUN_ERROR).
        async for chunk in response.streaming_content:
            return bytes(chunk)
        return b""

    async def never(run_id: Any, seconds: float) -> None:
        await asyncio.sleep(3600)

    body = {"threadId": ids["thread"], "runId": f"start-{index}", "messages": [],
            "forwardedProps": {"input": {"order_id": f"T-{index}", "amount": 1}}}
    with patch.object(stream, "wait_for_more", never):
        response = Client().post("/api/symfonic/ag-ui/refund/", body,
                                 content_type="application/json",
                                 HTTP_ACCEPT="text/event-stream",
                                 HTTP_AUTHORIZATION=f"Token {ids['token']}")
        first = json.loads(async_to_sync(leave)(response).decode().split("data: ", 1)[1])
    return "started" if first["type"] == "RUN_STARTED" else str(first.get("code"))
