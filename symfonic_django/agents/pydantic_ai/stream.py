"""A run's ``run_stream_events`` as the app's typed events.

``run_stream_events`` is the stream that carries every deferred call of a step
(``run_stream`` ends at the first one, so the others would never be asked: the
adapter never uses it). Its events become:

- a text part's start and deltas: ``message.delta``; its end: ``message.completed``;
- a function tool call: ``tool.started`` (a call that waits for approval too:
  it is asked, and started again in the turn that runs it, with the arguments it
  runs with: a reviewer's edit, which the history does not keep);
- a function tool's result: ``tool.completed``, ``status`` ``"error"`` when the
  model got something other than a result (a denied call, a failed or retried
  one), else ``"success"``;
- the run's result is kept (``result``) for the turn's end.

A tool call whose id the model gave before in the run is refused as it ends
streaming, before any tool of its step runs (``ToolCallMismatch``): Pydantic AI
would fail the step on repeated deferred ids, or run both calls of one id.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import AgentRunResultEvent
from pydantic_ai.messages import (
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ToolCallPart,
)
from pydantic_core import to_jsonable_python

from ...events import Event, MessageCompleted, MessageDelta, ToolCompleted, ToolStarted
from ...exceptions import ToolCallMismatch
from ...jsontext import jsonable

__all__ = ["Transcript", "as_json"]


class Transcript:
    """The events of one run, and its result once it ends."""

    def __init__(self, edits: dict[str, dict[str, Any]] | None = None) -> None:
        self.result: Any = None
        self.calls: dict[str, dict[str, Any]] = {}
        # A reviewer's edits, by call id: the history keeps the model's arguments, the
        # events say what the tool runs with.
        self.edits = edits or {}
        self.model_call_ids: set[str] = set()

    def events(self, event: Any) -> list[Event]:
        if isinstance(event, PartStartEvent | PartEndEvent):
            return self._part(event)
        if isinstance(event, PartDeltaEvent):
            delta = event.delta
            if isinstance(delta, TextPartDelta) and delta.content_delta:
                return [MessageDelta(text=delta.content_delta)]
            return []
        if isinstance(event, FunctionToolCallEvent):
            args = self.edits.get(event.tool_call_id) or as_json(event.part.args_as_dict())
            self.calls[event.tool_call_id] = args
            return [ToolStarted(tool_call_id=event.tool_call_id, name=event.part.tool_name,
                                args=args)]
        if isinstance(event, FunctionToolResultEvent):
            part = event.part
            return [ToolCompleted(
                tool_call_id=part.tool_call_id, name=part.tool_name,
                args=self.calls.get(part.tool_call_id, {}), result=as_json(part.content),
                status="success" if part.outcome == "success" else "error")]
        if isinstance(event, AgentRunResultEvent):
            self.result = event.result
        return []

    def _part(self, event: PartStartEvent | PartEndEvent) -> list[Event]:
        part = event.part
        if isinstance(part, ToolCallPart) and isinstance(event, PartEndEvent):
            self._check_new_call_id(part)
        if not isinstance(part, TextPart) or not part.content:
            return []
        if isinstance(event, PartStartEvent):
            return [MessageDelta(text=part.content)]
        return [MessageCompleted(text=part.content)]


    def _check_new_call_id(self, part: ToolCallPart) -> None:
        """Refuse a call id the run's model gave before: two calls of one id would share one
        decision (and one record), so the step is refused before any of its tools runs."""
        if part.tool_call_id in self.model_call_ids:
            raise ToolCallMismatch(
                f"the model gave the tool call id {part.tool_call_id!r} to several calls: each "
                "call takes its own decision and record by its id, so the step is refused")
        self.model_call_ids.add(part.tool_call_id)


def as_json(value: Any) -> Any:
    """A value of the run (a tool's result, a model's output) as JSON an event carries."""
    return jsonable(to_jsonable_python(value, serialize_unknown=True, bytes_mode="base64"))
