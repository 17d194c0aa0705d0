"""A run's events on the run and pause pages: as stored (a table), and as a person
reads them (a transcript of messages, tool calls and notes)."""

from __future__ import annotations

import json
from typing import Any

from django.utils.text import Truncator
from django.utils.translation import gettext as _

from ..forms import pretty_json
from ..models import PauseKind, Run, TurnEvent
from .display import args_rows

#: The pause and run pages show at most this many events of a run.
EVENTS_SHOWN = 200


def event_summary(event: TurnEvent) -> str:
    data = event.data if isinstance(event.data, dict) else {}
    if "text" in data:
        return str(data["text"])
    if event.type.startswith("tool."):
        text = f"{data.get('name')}({pretty_json(data.get('args'))})"
        if "result" in data:
            text += f" → {json.dumps(data['result'], ensure_ascii=False, default=str)}"
        return Truncator(text).chars(300)
    return Truncator(json.dumps(data, ensure_ascii=False, default=str)).chars(300)


def transcript(events: list[TurnEvent]) -> list[dict[str, Any]]:
    """A run's events as a person reads them: each message as its text (its deltas
    joined), each tool call as one card with its arguments and result, and a note
    where the agent asked for a decision or a question, or the turn failed."""
    items: list[dict[str, Any]] = []
    written: list[str] = []  # the deltas of the message being written
    cards: dict[str, dict[str, Any]] = {}

    def end_message(last: str = "") -> None:
        text = "".join(written)
        # A completed message repeats its deltas, or (as the example's agent does)
        # adds its last words to them.
        text = last if last.startswith(text) else text + last
        written.clear()
        if text.strip():
            items.append({"kind": "message", "text": text})

    for event in events:
        data = event.data if isinstance(event.data, dict) else {}
        if event.type == "message.delta":
            written.append(str(data.get("text", "")))
        elif event.type == "message.completed":
            end_message(str(data.get("text", "")))
        elif event.type in ("tool.started", "tool.completed"):
            end_message()
            key = str(data.get("tool_call_id") or f"seq-{event.seq}")
            card = cards.get(key)
            if card is None:
                card = cards[key] = {"kind": "tool", "name": str(data.get("name", "")),
                                     "args": args_rows(data.get("args", {})), "result": None}
                items.append(card)
            if event.type == "tool.completed":
                card["result"] = Truncator(pretty_json(data.get("result"))).chars(2000)
                # An error in place of a result: a rejected call, or a tool that raised.
                card["failed"] = data.get("status") == "error"
        elif event.type == "pause.requested":
            end_message()
            items.append({"kind": "note", "text": (
                _("The agent asked a question.") if data.get("kind") == PauseKind.QUESTION
                else _("The agent asked for a decision."))})
        elif event.type == "turn.failed":
            end_message()
            reason = data.get("message") or data.get("code") or _("no reason given")
            items.append({"kind": "note",
                          "text": _("The turn failed: %(reason)s.") % {"reason": reason}})
    end_message()
    return items


def events_table(run: Run | None) -> dict[str, Any] | None:
    """The first ``EVENTS_SHOWN`` events of ``run`` (one bounded read), as rows and as a
    transcript; ``total`` counts them all only when there are more."""
    if run is None:
        return None
    events = list(TurnEvent.objects.filter(run=run).order_by("seq")[:EVENTS_SHOWN])
    total = len(events)
    if total == EVENTS_SHOWN:
        total = TurnEvent.objects.filter(run=run).count()
    return {"run": run, "rows": [(e, event_summary(e)) for e in events], "total": total,
            "truncated": total > len(events), "transcript": transcript(events)}
