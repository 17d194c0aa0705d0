"""A ``resume`` array as the app's answers: checked whole, then answered in one transaction.

Each entry answers one interrupt, ``<pause id>:<index>`` (``interrupts.py``). The
entries of one pause make its answer: for an approval, one decision per action
request from each entry's ``payload`` (``{"approved": bool, "editedArgs"?: object,
"message"?: str}``; ``status: "cancelled"`` is a rejection), or the pause's whole
``HITLResponse`` as ``payload.answer`` (the same on every entry of the pause);
for a question, the payload is the answer. Then every pause is answered through
``pauses.answer_pause`` as the caller, surface ``ag-ui``, with the scopes
``pauses/{id}/answer/`` gives them: the same checks, in the same code.

What is refused before anything is written: a caller without the answer
permission (``permission_denied``); an interrupt id this app never issued, or a
pause the caller may not read (``not_found``, as an unknown one: nothing about
other scopes leaks); entries of several runs, of another thread or agent, the
same interrupt twice, or a resume that leaves an interrupt of the run out
(``invalid_request``); a payload that is not an answer, or not one the pause
allows (``invalid_answer``). Inside the transaction ``answer_pause`` refuses
what a reviewer's answer would be refused (``already_answered``, ``expired``,
``permission_denied``...), and a refusal of any pause rolls back the others:
a resume is answered whole or not at all.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from ag_ui.core import ResumeEntry
from django.db import transaction
from rest_framework import status
from rest_framework.response import Response

from ... import pauses
from ...exceptions import InvalidAnswer, InvalidRequest, NotFound, PermissionDenied
from ...models import AnsweredVia, Pause, PauseKind, Run
from ...scopes import may_answer, readable_pauses, reviewer_scope_keys
from ..idempotency import once
from ..permissions import CanAnswerPauses
from .inputs import interrupt_key
from .interrupts import interrupt_id

#: The keys a decision's payload may have.
DECISION_KEYS = frozenset({"approved", "editedArgs", "message"})
#: What a cancelled interrupt of an approval says, when its entry gives no message.
CANCELLED = "Cancelled by the AG-UI client."


@dataclass(frozen=True)
class Plan:
    """A resume, checked: the interrupted run and each of its pauses with its answer."""

    run: Run
    answers: list[tuple[Pause, Any]]


def decision(name: str, entry: ResumeEntry) -> dict[str, Any]:
    """One action's decision from its entry (module docstring)."""
    payload = entry.payload if entry.payload is not None else {}
    if not isinstance(payload, dict) or set(payload) - DECISION_KEYS:
        raise InvalidAnswer(f"The payload of interrupt {entry.interrupt_id} must be "
                            '{"approved": bool, "editedArgs"?: object, "message"?: string}.')
    message = payload.get("message")
    if message is not None and not isinstance(message, str):
        raise InvalidAnswer(f"The message of interrupt {entry.interrupt_id} must be a string.")
    if entry.status == "cancelled":
        return {"type": "reject", "message": message or CANCELLED}
    approved = payload.get("approved")
    if not isinstance(approved, bool):
        raise InvalidAnswer(f"The payload of interrupt {entry.interrupt_id} needs approved: "
                            "true or false.")
    if not approved:
        if "editedArgs" in payload:
            raise InvalidAnswer(f"Interrupt {entry.interrupt_id} is not approved, so it "
                                "cannot carry editedArgs.")
        return {"type": "reject", **({"message": message} if message is not None else {})}
    if message is not None:
        raise InvalidAnswer(f"A message goes with a rejection; interrupt {entry.interrupt_id} "
                            "is approved.")
    if "editedArgs" in payload:
        return {"type": "edit", "edited_action": {"name": name, "args": payload["editedArgs"]}}
    return {"type": "approve"}


def answer_for(pause: Pause, entries: dict[int, ResumeEntry]) -> Any:
    """The pause's answer from its entries, by action index (all of them are there)."""
    if pause.kind != PauseKind.APPROVAL:
        entry = entries[0]
        if entry.status == "cancelled":
            raise InvalidAnswer("A question is answered, not cancelled: resume it with "
                                "status resolved and the answer as payload.")
        return entry.payload
    given = [e.payload for e in entries.values()]
    if any(isinstance(p, dict) and "answer" in p for p in given):
        first = given[0]
        if any(p != first for p in given) or not isinstance(first, dict) or set(first) != {
                "answer"} or any(e.status != "resolved" for e in entries.values()):
            raise InvalidAnswer("A pause answered with payload.answer gives the same "
                                '{"answer": <HITLResponse>} on every one of its interrupts.')
        return first["answer"]
    requests = pause.prompt["action_requests"]
    return {"decisions": [decision(requests[index]["name"], entries[index])
                          for index in range(len(requests))]}


def entries_by_pause(resume: list[ResumeEntry]) -> dict[Any, dict[int, ResumeEntry]]:
    grouped: dict[Any, dict[int, ResumeEntry]] = {}
    for entry in resume:
        pause_id, index = interrupt_key(entry.interrupt_id)
        if index in grouped.setdefault(pause_id, {}):
            raise InvalidRequest(f"The resume answers interrupt {entry.interrupt_id} twice.")
        grouped[pause_id][index] = entry
    return grouped


def action_count(pause: Pause) -> int:
    return len(pause.prompt["action_requests"]) if pause.kind == PauseKind.APPROVAL else 1


def interrupted_run(found: list[Pause], *, thread_id: str, agent: str) -> Run:
    """The one run every entry's pause belongs to, on the request's thread and agent."""
    if len({p.run_id for p in found}) != 1:
        raise InvalidRequest("A resume answers the interrupts of one interrupted run; these "
                             "belong to several.")
    run = Run.objects.get(pk=found[0].run_id)
    if run.thread_id != thread_id:
        raise InvalidRequest("These interrupts belong to another thread than threadId.")
    if run.agent != agent:
        raise InvalidRequest(f"These interrupts belong to a run of another agent than {agent!r}.")
    return run


def plan(user: Any, resume: list[ResumeEntry], *, thread_id: str, agent: str) -> Plan:
    """The resume, checked whole before anything is written (module docstring)."""
    if not may_answer(user):
        raise PermissionDenied(CanAnswerPauses.message)
    grouped = entries_by_pause(resume)
    by_id = {p.pk: p for p in readable_pauses(user).filter(pk__in=list(grouped))}
    if len(by_id) != len(grouped):
        raise NotFound("No such interrupt.")
    run = interrupted_run(list(by_id.values()), thread_id=thread_id, agent=agent)
    for pause_id, entries in grouped.items():
        if max(entries) >= action_count(by_id[pause_id]):
            raise NotFound("No such interrupt.")
    wanted = {interrupt_id(p, i) for p in Pause.objects.filter(run=run).pending()
              for i in range(action_count(p))}
    wanted |= {interrupt_id(p, i) for p in by_id.values() for i in range(action_count(p))}
    missing = sorted(wanted - {entry.interrupt_id for entry in resume})
    if missing:
        raise InvalidRequest("A resume answers every interrupt of the run at once; it leaves "
                             f"out {', '.join(missing)}.")
    ordered = sorted(by_id.values(), key=lambda p: (p.created_at, str(p.pk)))
    answers = []
    for pause in ordered:
        answer = answer_for(pause, grouped[pause.pk])
        answers.append((pause, pauses.validate_answer(pause, answer)))
    return Plan(run, answers)


def replay_key(resume: list[ResumeEntry], *, thread_id: str, agent: str) -> str:
    """SHA-256 of what makes two resumes the same: thread, agent, and each entry's
    ``(interruptId, status, payload)``, in id order."""
    entries = sorted(([e.interrupt_id, e.status, e.payload] for e in resume),
                     key=lambda e: str(e[0]))
    text = json.dumps({"thread": thread_id, "agent": agent, "resume": entries},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def answer(user: Any, resume: list[ResumeEntry], *, thread_id: str, agent: str) -> Response:
    """Answer the resume once per caller and replay key: a 202 body naming the interrupted
    run and the continuation (or ``None`` while a quorum waits for more approvers)."""
    checked = plan(user, resume, thread_id=thread_id, agent=agent)

    def handle() -> Response:
        continuation = None
        with transaction.atomic():
            for pause, given in checked.answers:
                resolution = pauses.answer_pause(pause.pk, given, actor=user,
                                                 via=AnsweredVia.AG_UI,
                                                 visible=reviewer_scope_keys(user))
                continuation = resolution.continuation or continuation
        return Response({"run_id": str(checked.run.pk),
                         "continuation_id": str(continuation.pk) if continuation else None},
                        status=status.HTTP_202_ACCEPTED)

    digest = replay_key(resume, thread_id=thread_id, agent=agent)
    return once(f"user:{user.pk}", f"ag-ui:{digest}", digest, handle)
