"""A pause as AG-UI interrupts: one per action request of an approval, one for a question.

The interrupt's ``id`` is ``<pause id>:<index of the action request>`` (a
question's: ``<pause id>:0``); its ``reason`` is ``tool_call`` for an approval
(with the ``toolCallId`` of the call it holds back) and ``input_required`` for a
question. ``responseSchema`` is the shape a resume entry's ``payload`` takes
(``resume.py``): ``{"approved", "editedArgs"?, "message"?}`` for an approval,
``editedArgs`` only where the action's review config allows an edit, and the
question's own ``answer_schema`` for a question. No interrupt carries a pause
token: the answer goes through the endpoint, as the caller.

Which tool call an action request holds back: the turn's ``tool.started`` that
has no ``tool.completed`` yet, with the action's name (and arguments, when they
match). An agent that asks before it starts the call (the plain ``refund``
agent) has none; the interrupt then names a call of its own, ``<pause id>:<index>``,
which the stream opens and closes (``TOOL_CALL_START``/``ARGS``/``END``) before the
interrupt, and the continuation's call of that tool is reported against it
(``mapping.Translator``), so a result always comes back to the id the client held.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ag_ui.core import Interrupt

from ... import hitl
from ...events import PauseRequested, ToolCompleted, ToolStarted
from ...models import Pause, PauseKind, Run, TurnEvent
from .wire import meta


@dataclass(frozen=True)
class Call:
    """The tool call an approval's action request holds back."""

    id: str
    name: str
    args: dict[str, Any]
    #: Named by the app (``<pause id>:<index>``): the turn streamed no call for it.
    own: bool = False


def interrupt_id(pause: Pause, index: int) -> str:
    return f"{pause.pk}:{index}"


def iso(moment: Any) -> str:
    text: str = moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return text


def open_calls(rows: Iterable[TurnEvent]) -> list[Call]:
    """The turn's tool calls started and not completed, in the order they started."""
    started: dict[str, Call] = {}
    for row in rows:
        call_id = str(row.data.get("tool_call_id") or "")
        if row.type == ToolStarted.type and call_id:
            started.setdefault(call_id, Call(call_id, str(row.data.get("name", "")),
                                             dict(row.data.get("args") or {})))
        elif row.type == ToolCompleted.type:
            started.pop(call_id, None)
    return list(started.values())


def calls_for(pauses: Iterable[Pause], rows: Iterable[TurnEvent]) -> dict[str, Call]:
    """Interrupt id -> the call each approval's action request holds back (module doc)."""
    available = open_calls(rows)
    calls: dict[str, Call] = {}
    for pause in pauses:
        if pause.kind != PauseKind.APPROVAL:
            continue
        for index, request in enumerate(pause.prompt["action_requests"]):
            same_name = [c for c in available if c.name == request["name"]]
            exact = [c for c in same_name if c.args == request.get("args", {})]
            candidates = exact or same_name
            found = candidates[0] if candidates else None
            if found is None:
                found = Call(interrupt_id(pause, index), request["name"],
                             dict(request.get("args") or {}), own=True)
            else:
                available.remove(found)
            calls[interrupt_id(pause, index)] = found
    return calls


def approval_schema(config: dict[str, Any]) -> dict[str, Any]:
    """What a resume entry's payload is for one action: approve, edit (where the action
    allows it), or reject with a message."""
    properties: dict[str, Any] = {
        "approved": {"type": "boolean", "description": "true lets the action run."},
        "message": {"type": "string", "description": "Why, for a rejection."},
    }
    if "edit" in config.get("allowed_decisions", hitl.DECISION_TYPES):
        properties["editedArgs"] = dict(config.get("args_schema") or {"type": "object"})
    return {"type": "object", "properties": properties, "required": ["approved"],
            "additionalProperties": False}


def pause_interrupts(pause: Pause, calls: dict[str, Call]) -> list[Interrupt]:
    """The interrupts of one pause (module docstring), in action order."""
    common = {"pauseId": str(pause.pk), "kind": pause.kind, "runId": str(pause.run_id),
              "status": pause.status, "approvalsNeeded": pause.approvals_needed}
    expires = iso(pause.expires_at)
    if pause.kind != PauseKind.APPROVAL:
        schema = pause.answer_schema if isinstance(pause.answer_schema, dict) else None
        return [Interrupt(id=interrupt_id(pause, 0), reason="input_required",
                          message=hitl.question_text(pause.prompt), response_schema=schema,
                          expires_at=expires, metadata=meta(**common, index=0,
                                                           prompt=pause.prompt))]
    interrupts = []
    for index, request in enumerate(pause.prompt["action_requests"]):
        config = hitl.review_config(pause.prompt, request["name"])
        call = calls[interrupt_id(pause, index)]
        interrupts.append(Interrupt(
            id=interrupt_id(pause, index), reason="tool_call", tool_call_id=call.id,
            message=request.get("description") or hitl.call_text(request["name"],
                                                                 request.get("args", {})),
            response_schema=approval_schema(config), expires_at=expires,
            metadata=meta(**common, index=index, action={"name": request["name"],
                                                         "args": request.get("args", {})},
                          allowedDecisions=config.get("allowed_decisions",
                                                      list(hitl.DECISION_TYPES)))))
    return interrupts


def turn_pauses(run: Run) -> list[Pause]:
    """The pauses a turn asked, in the order it asked them (its ``pause.requested`` rows)."""
    asked = [str(row.data.get("pause_id")) for row in TurnEvent.objects.filter(
        run_id=run.pk, type=PauseRequested.type).order_by("seq")]
    by_id = {str(p.pk): p for p in Pause.objects.filter(run_id=run.pk)}
    ordered = [by_id.pop(pid) for pid in asked if pid in by_id]
    return ordered + sorted(by_id.values(), key=lambda p: (p.created_at, str(p.pk)))


def tool_rows(run: Run) -> list[TurnEvent]:
    return list(TurnEvent.objects.filter(
        run_id=run.pk, type__in=(ToolStarted.type, ToolCompleted.type)).order_by("seq"))


def paused_turn(run: Run, *, pending_only: bool = False
                ) -> tuple[list[Pause], dict[str, Call], list[Interrupt]]:
    """A paused turn's pauses, the calls they hold back, and their interrupts (every pause
    of the turn, or its pending ones)."""
    pauses = turn_pauses(run)
    calls = calls_for(pauses, tool_rows(run))
    shown = [p for p in pauses if p.is_pending] if pending_only else pauses
    return pauses, calls, [i for pause in shown for i in pause_interrupts(pause, calls)]


def own_calls_resumed_by(continuation: Run) -> list[Call]:
    """The app-named calls of the pauses ``continuation`` resumes: the continuation's own
    call of each such tool is reported against them (``mapping.Translator``)."""
    if continuation.parent_id is None:
        return []
    parent = Run.objects.filter(pk=continuation.parent_id).first()
    if parent is None:
        return []
    _, calls, _ = paused_turn(parent)
    resumed = {str(pk) for pk in Pause.objects.filter(
        continuation_id=continuation.pk).values_list("pk", flat=True)}
    return [call for key, call in calls.items() if call.own and key.split(":")[0] in resumed]
