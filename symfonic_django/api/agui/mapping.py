"""A turn's stored events as AG-UI events, row by row.

=====================  ===========================================================
stored event           AG-UI events
=====================  ===========================================================
``turn.started``       none (the stream opens with ``RUN_STARTED`` itself)
``message.delta``      ``TEXT_MESSAGE_START`` (the first of a message), ``_CONTENT``
``message.completed``  what its deltas did not stream, then ``TEXT_MESSAGE_END``
``tool.started``       ``TOOL_CALL_START``, ``_ARGS`` (the arguments as JSON), ``_END``
``tool.completed``     ``TOOL_CALL_RESULT`` against the call's original id
``pause.requested``    none (the pauses become the interrupts of ``RUN_FINISHED``)
terminal events        the stream's own (``stream.py``): ``RUN_FINISHED`` or ``RUN_ERROR``
=====================  ===========================================================

A ``message.completed`` is either the whole message its deltas streamed (its text
starts with theirs: only the rest is sent) or a message of its own, as the live
viewer reads it. An open message is closed before a tool call or the end. The
translation is a pure function of the rows in order, so a reconnecting client
is sent exactly what the rows after its last one give (``stream.follow``).
"""

from __future__ import annotations

import json
from typing import Any

from ag_ui.core import (
    BaseEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from ...events import MessageCompleted, MessageDelta, ToolCompleted, ToolStarted
from ...models import TurnEvent
from .interrupts import Call
from .wire import meta


def call_events(call_id: str, name: str, args: Any, *, message_id: str | None = None
                ) -> list[BaseEvent]:
    """A whole tool call: start, its arguments as one JSON fragment, end."""
    return [ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name,
                               parent_message_id=message_id),
            ToolCallArgsEvent(tool_call_id=call_id, delta=json.dumps(args)),
            ToolCallEndEvent(tool_call_id=call_id)]


def result_text(result: Any) -> str:
    """A tool's result as ``TOOL_CALL_RESULT`` content: text as is, anything else as JSON."""
    return result if isinstance(result, str) else json.dumps(result)


class Translator:
    """Stored rows of one run, in ``seq`` order, to AG-UI events (module docstring).

    ``own_calls`` are the app-named calls of the pauses this run resumes
    (``interrupts.own_calls_resumed_by``): this run's first call of each such
    tool is that call, so its start is not sent again and its result goes to the
    id the client held.
    """

    def __init__(self, run_id: str, own_calls: list[Call] | None = None) -> None:
        self.run_id = run_id
        self.own_calls = list(own_calls or [])
        self.aliases: dict[str, str] = {}
        self.message_id: str | None = None
        self.streamed = ""
        self.last_message_id: str | None = None

    def events(self, row: TurnEvent) -> list[BaseEvent]:
        data: dict[str, Any] = row.data or {}
        if row.type == MessageDelta.type:
            return self.delta(row, str(data.get("text", "")))
        if row.type == MessageCompleted.type:
            return self.completed(row, str(data.get("text", "")))
        if row.type == ToolStarted.type:
            return self.tool_started(data)
        if row.type == ToolCompleted.type:
            return self.close() + self.tool_completed(row, data)
        return []

    def delta(self, row: TurnEvent, text: str) -> list[BaseEvent]:
        events = self.open(row)
        self.streamed += text
        assert self.message_id is not None
        return events + [TextMessageContentEvent(message_id=self.message_id, delta=text)]

    def completed(self, row: TurnEvent, text: str) -> list[BaseEvent]:
        streamed = self.streamed if self.message_id else ""
        rest = text[len(streamed):] if streamed and text.startswith(streamed) else text
        events = self.open(row)
        assert self.message_id is not None
        if rest:
            events.append(TextMessageContentEvent(message_id=self.message_id, delta=rest))
        return events + self.close()

    def open(self, row: TurnEvent) -> list[BaseEvent]:
        if self.message_id is not None:
            return []
        self.message_id = f"{self.run_id}:{row.seq}"
        self.streamed = ""
        return [TextMessageStartEvent(message_id=self.message_id, role="assistant",
                                      metadata=meta(appRunId=self.run_id, seq=row.seq))]

    def close(self) -> list[BaseEvent]:
        """End the open message, if any (before a tool call, a result or the end)."""
        if self.message_id is None:
            return []
        ended = TextMessageEndEvent(message_id=self.message_id)
        self.last_message_id, self.message_id, self.streamed = self.message_id, None, ""
        return [ended]

    def tool_started(self, data: dict[str, Any]) -> list[BaseEvent]:
        events = self.close()
        call_id, name = str(data.get("tool_call_id") or ""), str(data.get("name", ""))
        held = next((c for c in self.own_calls if c.name == name), None)
        if held is not None:
            self.own_calls.remove(held)
            self.aliases[call_id] = held.id
            return events  # the client holds this call already, from the interrupt
        return events + call_events(call_id, name, data.get("args", {}),
                                    message_id=self.last_message_id)

    def tool_completed(self, row: TurnEvent, data: dict[str, Any]) -> list[BaseEvent]:
        call_id = str(data.get("tool_call_id") or "")
        return [ToolCallResultEvent(
            message_id=f"{self.run_id}:{row.seq}", tool_call_id=self.aliases.get(call_id, call_id),
            content=result_text(data.get("result")), role="tool",
            metadata=meta(status=data.get("status", "success"), appRunId=self.run_id))]
