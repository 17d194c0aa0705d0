"""The SDK's stream (``RunResultStreaming.stream_events()``) as the app's typed events.

- a text delta of the model's response (``response.output_text.delta``) is
  ``message.delta``; each finished assistant message (``message_output_created``)
  is ``message.completed``;
- each tool call (``tool_called``) is ``tool.started``, with the model's
  arguments; each tool output (``tool_output``) is ``tool.completed``, its status
  "error" for a call a reviewer refused (its output is the reviewer's words);
- approval requests are not streamed by the SDK: the adapter reads them on the
  result once the stream is over (``result.interruptions``) and pauses there.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from agents import (
    ItemHelpers,
    MessageOutputItem,
    RawResponsesStreamEvent,
    RunItemStreamEvent,
    StreamEvent,
    ToolCallItem,
    ToolCallOutputItem,
)

from ...events import Event, MessageCompleted, MessageDelta, ToolCompleted, ToolStarted
from ...jsontext import jsonable

__all__ = ["Transcript"]

#: The raw response event that carries a piece of the model's text.
TEXT_DELTA = "response.output_text.delta"


class Transcript:
    """Turns the SDK's stream events into typed events, pairing outputs with their calls.

    ``refused`` are the call ids a reviewer did not let run (their outputs are the
    reviewer's words); ``calls`` the calls proposed in an earlier turn, by id, so a
    continuation's ``tool.completed`` carries the call's name and arguments.
    """

    def __init__(self, refused: Collection[str] = (),
                 calls: dict[str, tuple[str, dict[str, Any]]] | None = None) -> None:
        self.refused = frozenset(refused)
        self.calls: dict[str, tuple[str, dict[str, Any]]] = dict(calls or {})

    def events(self, event: StreamEvent) -> list[Event]:
        if isinstance(event, RawResponsesStreamEvent):
            delta = getattr(event.data, "delta", "")
            if event.data.type == TEXT_DELTA and isinstance(delta, str) and delta:
                return [MessageDelta(text=delta)]
            return []
        if not isinstance(event, RunItemStreamEvent):
            return []
        item = event.item
        if isinstance(item, MessageOutputItem):
            text = ItemHelpers.text_message_output(item)
            return [MessageCompleted(text=text)] if text else []
        if isinstance(item, ToolCallItem):
            return self._started(item)
        if isinstance(item, ToolCallOutputItem):
            return [self._completed(item)]
        return []

    def _started(self, item: ToolCallItem) -> list[Event]:
        raw = item.raw_item
        call_id = _field(raw, "call_id")
        name = _field(raw, "name")
        if not call_id:
            return []
        args = _parsed(_field(raw, "arguments") or "{}")
        args = args if isinstance(args, dict) else {"arguments": args}
        self.calls[call_id] = (name, args)
        return [ToolStarted(tool_call_id=call_id, name=name, args=args)]

    def _completed(self, item: ToolCallOutputItem) -> ToolCompleted:
        call_id = _field(item.raw_item, "call_id")
        name, args = self.calls.get(call_id, ("", {}))
        refused = call_id in self.refused
        return ToolCompleted(tool_call_id=call_id, name=name, args=args,
                             result=_parsed(item.output), status="error" if refused else
                             "success")


def _field(raw: Any, name: str) -> str:
    """A field of a raw item, which the SDK keeps as a model or as a dict."""
    value = raw.get(name) if isinstance(raw, dict) else getattr(raw, name, None)
    return value if isinstance(value, str) else ""


def _parsed(value: Any) -> Any:
    """A JSON object or array given as text, parsed; anything else as JSON stores it."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return jsonable(value)
