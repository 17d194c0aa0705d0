"""Encoding AG-UI events as server-sent events, and a refusal as ``RUN_ERROR``.

Every event goes through ``ag_ui.encoder.EventEncoder`` (``data: <json>``); an
event that comes from a stored row is preceded by an SSE ``id:`` line,
``<app run id>:<seq>``, which a client sends back to resume the stream after
it (``Last-Event-ID`` or ``forwardedProps.after``, ``inputs.read_after``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ag_ui.core import BaseEvent, RunErrorEvent
from ag_ui.encoder import EventEncoder

from ...exceptions import SymfonicError

#: The key of the app's own fields in an event's, an interrupt's or a result's ``metadata``.
#: (AG-UI reserves ``ag-ui``; every other key is the producer's.)
META = "symfonic"

ENCODER = EventEncoder()
MEDIA_TYPE = ENCODER.get_content_type()

#: An SSE comment, sent while a turn is quiet so proxies keep the response open.
KEEPALIVE = ": keepalive\n\n"


def encode(events: Sequence[BaseEvent], *, event_id: str | None = None) -> str:
    """``events`` as one SSE chunk; each carries ``event_id`` when one is given."""
    prefix = f"id: {event_id}\n" if event_id else ""
    return "".join(prefix + ENCODER.encode(event) for event in events)


def meta(**fields: Any) -> dict[str, Any]:
    """``metadata`` holding the app's ``fields`` (``None`` values left out)."""
    return {META: {key: value for key, value in fields.items() if value is not None}}


def run_error(code: str, message: str, *, status: int | None = None,
              run_id: str | None = None, app_run_id: str | None = None) -> RunErrorEvent:
    """The ``RUN_ERROR`` of a refusal or a failed turn: the app's ``code`` and its words.

    ``RUN_ERROR`` carries no run id of its own; the client's ``runId`` and the
    app's run go in ``metadata``, with the HTTP status the same refusal has on
    the rest of the API.
    """
    return RunErrorEvent(message=message or code, code=code,
                         metadata=meta(runId=run_id, appRunId=app_run_id, status=status))


def refusal(exc: SymfonicError, *, run_id: str | None = None) -> RunErrorEvent:
    return run_error(exc.code, exc.detail, status=exc.status, run_id=run_id)
