"""The graph's stream as the app's typed events.

Model tokens are ``message.delta``; each model message is
``message.completed``; each tool call it makes is ``tool.started`` and its
result ``tool.completed``; subgraphs' events are included, each message once.
A turn that completes ends with the last message's text as its output
(``last_message_text``, the default ``output``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langgraph.types import StreamMode

from ...events import Event, MessageCompleted, MessageDelta, ToolCompleted, ToolStarted
from ...jsontext import jsonable

__all__ = ["STREAM_MODES", "Transcript", "last_message_text"]

#: How the graph streams: tokens from ``messages``, finished nodes' writes from ``updates``.
STREAM_MODES: list[StreamMode] = ["messages", "updates"]


class Transcript:
    """What the thread has said: each message and tool call becomes events once.

    A node's update repeats messages already streamed (``HumanInTheLoopMiddleware``
    writes the model's message again with its revised tool calls; a parent
    repeats its subgraph's messages), and a continuation starts from a thread
    whose messages were streamed by earlier turns.
    """

    def __init__(self, values: Any = None) -> None:
        self.seen: set[str] = set()
        self.calls: dict[str, dict[str, Any]] = {}
        for message in _messages_in(values):
            self.seen.add(_message_key(message))
            self._register_calls(message)

    def events(self, mode: str, chunk: Any) -> list[Event]:
        if mode == "messages":
            message = chunk[0] if isinstance(chunk, tuple) and chunk else None
            if isinstance(message, AIMessageChunk) and message.text:
                return [MessageDelta(text=message.text)]
            return []
        if mode != "updates" or not isinstance(chunk, dict):
            return []
        events: list[Event] = []
        for node, update in chunk.items():
            if not node.startswith("__"):
                for message in _messages_in(update):
                    events += self._said(message)
        return events

    def _said(self, message: BaseMessage) -> list[Event]:
        key = _message_key(message)
        new = key not in self.seen
        self.seen.add(key)
        self._register_calls(message)  # the latest revision: what will run
        if not new:
            return []
        if isinstance(message, ToolMessage):
            call = self.calls.get(message.tool_call_id, {})
            return [ToolCompleted(tool_call_id=message.tool_call_id,
                                  name=message.name or call.get("name", ""),
                                  args=call.get("args", {}), result=_tool_result(message),
                                  status=message.status)]
        if not isinstance(message, AIMessage):
            return []
        events: list[Event] = [MessageCompleted(text=message.text)] if message.text else []
        events += [ToolStarted(tool_call_id=call["id"] or "", name=call["name"],
                               args=jsonable(call["args"])) for call in message.tool_calls]
        return events

    def _register_calls(self, message: BaseMessage) -> None:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                if call["id"]:
                    self.calls[call["id"]] = {"name": call["name"],
                                              "args": jsonable(call["args"])}


def _messages_in(update: Any) -> Iterable[BaseMessage]:
    """The messages a node's update (or a state's values) holds."""
    if isinstance(update, list):
        for item in update:
            yield from _messages_in(item)
        return
    if not isinstance(update, dict):
        return
    messages = update.get("messages")
    for message in messages if isinstance(messages, list) else [messages]:
        if isinstance(message, BaseMessage):
            yield message


def _message_key(message: BaseMessage) -> str:
    if isinstance(message, ToolMessage):
        return f"tool:{message.tool_call_id}"
    if message.id:
        return f"id:{message.id}"
    calls = [c["id"] for c in message.tool_calls] if isinstance(message, AIMessage) else []
    return f"{message.type}:{json.dumps([message.content, calls], default=str)}"


def _tool_result(message: ToolMessage) -> Any:
    """A tool's result as the event carries it: a JSON object or array parsed, else as given."""
    content = message.content
    if isinstance(content, str) and content[:1] in "[{":
        try:
            return json.loads(content)
        except ValueError:
            return content
    return jsonable(content)


def last_message_text(values: Any) -> Any:
    """The default output of a completed turn: the last message's text, else the state as JSON."""
    messages = list(_messages_in(values))
    if messages:
        return messages[-1].text
    return jsonable(values)
