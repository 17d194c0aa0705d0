"""Answering a pause, and cancelling one: the one guarded transition out of ``pending``.

It runs in one short ``transaction.atomic()`` that locks the paused run's row, then
the pause's, and leaves ``pending`` through the machine's conditional UPDATE, the
single-use claim on every backend (row locks serialize siblings on PostgreSQL;
SQLite serializes writers itself). Expiry races through the same guard. A refusal
raises before any write.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from .. import hitl, jsontext, signals
from ..conf import ALL_SCOPES, settings
from ..exceptions import AlreadyAnswered, InvalidAnswer, PayloadTooLarge
from ..models import AnsweredVia, Decision, Pause, PauseKind, Run
from ..scopes import started_run
from .guards import label, lookup, refuse_closed, refuse_unless_reviewer
from .machine import MACHINE, PENDING, Resolution
from .quorum import count_approval, lets_run, refuse_edit_past_quorum
from .settling import settle

#: Where a person answers as a reviewer: there every answer needs the answer permission in
#: the pause's scope, held at that moment. (A token answers through ``resume/``: ``TOKEN``.)
#: An AG-UI resume is the caller's answer, judged as ``pauses/{id}/answer/`` judges it.
REVIEWER_SURFACES = (AnsweredVia.ADMIN, AnsweredVia.API, AnsweredVia.AG_UI)


def _check_size(answer: Any) -> None:
    size = len(json.dumps(answer, separators=(",", ":"), default=str).encode())
    if size > settings.MAX_ANSWER_BYTES:
        raise PayloadTooLarge(
            f"The answer is {size} bytes; this deployment accepts at most "
            f"{settings.MAX_ANSWER_BYTES} (SYMFONIC['MAX_ANSWER_BYTES'])."
        )


def validate_answer(pause: Pause, answer: Any) -> Any:
    _check_size(answer)
    jsontext.refuse_unstorable(answer, "The answer", InvalidAnswer)
    if pause.kind == PauseKind.APPROVAL:
        return hitl.validate_response(pause.prompt, answer)
    return hitl.validate_question_answer(pause.answer_schema, answer)


def _leave_pending(
    pause_id: Any, *, edge: str, answer: Any, action: str, actor: Any, via: str,
    comment: str = "", visible: Any = ALL_SCOPES, validate: bool = True,
    dispatch: bool = True, now: datetime | None = None,
) -> Resolution:
    """The one guarded transition out of ``pending``.

    Under the paused run's and the pause's row locks, in this order: a closed pause
    is refused; an answer through a reviewer surface, or one that would count toward
    a quorum, needs a reviewer of the pause's scope now (``PermissionDenied``); an edit
    the policy would ask more approvers for is refused; an answer that lets an action
    run on a pause that needs several approvers is counted (``count_approval``) and
    leaves ``pending`` only as the last of them. Any other answer leaves at once.
    """
    pause = lookup(pause_id, visible)
    jsontext.refuse_unstorable(comment, "The comment", InvalidAnswer)
    if validate:
        answer = validate_answer(pause, answer)
    now = now or timezone.now()
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=pause.run_id)
        pause = (Pause.objects.select_for_update(of=("self",)).select_related("answered_by")
                 .get(pk=pause.pk))
        if pause.status != PENDING or pause.expires_at <= now:
            refuse_closed(pause, now, caller=actor)
        user = actor if getattr(actor, "pk", None) is not None else None
        counts = False
        if edge == "answer":
            counts = _refuse_unless_answerer(pause, run, answer, actor=actor, user=user, via=via)
        if action == Decision.Action.EDIT:
            refuse_edit_past_quorum(pause, answer)
        if counts:
            approvals = count_approval(pause, run, answer, action=action, actor=user,
                                       via=via, comment=comment, now=now)
            if approvals is not None:
                return Resolution(pause=pause, continuation=None, approvals=approvals)
        decision = _leave(pause, edge, answer=answer, action=action, actor=actor, user=user,
                          via=via, comment=comment, now=now)
        continuation = settle(run, dispatch=dispatch, now=now)
        pause.continuation = continuation
        _announce(pause, edge, decision, continuation)
    return Resolution(pause=pause, continuation=continuation)


def _refuse_unless_answerer(pause: Pause, run: Run, answer: Any, *, actor: Any, user: Any,
                            via: str) -> bool:
    """Refuse an answer from someone who may not give it; whether it counts toward the
    pause's quorum of approvers (it lets an action run, and several are needed)."""
    counts = pause.approvals_needed > 1 and lets_run(pause, answer)
    if counts or via in REVIEWER_SURFACES:
        refuse_unless_reviewer(pause, actor, counts=counts)
    elif via == AnsweredVia.TOKEN and user is not None and not started_run(user, run):
        # A token sent with a login names who answers: the starter, or a reviewer of
        # the scope. Anyone else is refused, so the audit never names a user who may
        # not answer; the token alone (no login) still answers a one-approver pause.
        refuse_unless_reviewer(pause, actor, counts=False)
    return counts


def _leave(pause: Pause, edge: str, *, answer: Any, action: str, actor: Any, user: Any,
           via: str, comment: str, now: datetime) -> Decision:
    """Take ``edge`` for the locked ``pause`` and record its ``Decision``; ``pause`` is left
    as this transaction leaves its row."""
    if not MACHINE.move_rows([pause], edge, now=now, answer=answer, answered_by=user,
                             answered_via=via, answered_at=now):
        raise AlreadyAnswered()  # SQLite has no row locks: the conditional UPDATE is the claim
    return Decision.objects.create(
        pause=pause, scope_key=pause.scope_key, actor=user,
        actor_label=label(actor) or via, via=via, action=action, answer=answer,
        comment=comment, created_at=now)


def _announce(pause: Pause, edge: str, decision: Decision, continuation: Run | None) -> None:
    if edge == "answer":
        signals.send_on_commit(signals.pause_answered, Pause, pause=pause,
                               decision=decision, continuation=continuation)
    else:
        signals.send_on_commit(signals.pause_cancelled, Pause, pause=pause,
                               decision=decision)


def answer_pause(pause_id: Any, answer: Any, *, actor: Any = None, via: str = AnsweredVia.PYTHON,
                 visible: Any = ALL_SCOPES, dispatch: bool = True, comment: str = "") -> Resolution:
    """Answer a pause with a ``HITLResponse`` (approvals) or its schema's value (questions)."""
    pause = lookup(pause_id, visible)
    action: str = Decision.Action.ANSWER
    if pause.kind == PauseKind.APPROVAL and isinstance(answer, dict):
        # An answer that lets any action run is an approval (of that list), whatever the
        # other decisions are; only one that lets none run is a rejection or a response.
        decisions = answer.get("decisions")
        # Only the words a decision may be: any other ``type`` (a list, an object) is the
        # malformed answer ``validate_answer`` refuses, never a reason to fail here.
        types = {d.get("type") for d in decisions
                 if isinstance(d, dict) and isinstance(d.get("type"), str)} if isinstance(
            decisions, list) else set()
        action = next((a for a in ("edit", "approve", "reject", "respond") if a in types),
                      "approve")
    return _leave_pending(pause_id, edge="answer", answer=answer, action=action,
                          actor=actor, via=via, visible=visible, dispatch=dispatch,
                          comment=comment)


def _approval(pause_id: Any, visible: Any) -> Pause:
    pause = lookup(pause_id, visible)
    if pause.kind != PauseKind.APPROVAL:
        raise InvalidAnswer("Approve and reject apply to approvals; answer a question instead.")
    return pause


def approve(pause_id: Any, *, actor: Any = None, via: str = AnsweredVia.PYTHON,
            comment: str = "", edited_args: dict[str, Any] | None = None,
            visible: Any = ALL_SCOPES) -> Resolution:
    """Approve every action; ``edited_args`` edits the single action of a one-action pause."""
    pause = _approval(pause_id, visible)
    requests = pause.prompt["action_requests"]
    if edited_args is not None:
        if len(requests) != 1:
            raise InvalidAnswer("edited_args applies only to a pause with exactly one action.")
        decisions = [{"type": "edit",
                      "edited_action": {"name": requests[0]["name"], "args": edited_args}}]
    else:
        decisions = [{"type": "approve"} for _ in requests]
    return _leave_pending(pause_id, edge="answer", answer={"decisions": decisions},
                          action="edit" if edited_args is not None else "approve", actor=actor,
                          via=via, comment=comment, visible=visible)


def reject(pause_id: Any, *, actor: Any = None, via: str = AnsweredVia.PYTHON,
           comment: str = "", visible: Any = ALL_SCOPES) -> Resolution:
    """Reject every action, with ``comment`` as the message."""
    pause = _approval(pause_id, visible)
    decision = {"type": "reject", **({"message": comment} if comment else {})}
    answer = {"decisions": [dict(decision) for _ in pause.prompt["action_requests"]]}
    return _leave_pending(pause_id, edge="answer", answer=answer, action="reject",
                          actor=actor, via=via, comment=comment, visible=visible)


def respond(pause_id: Any, message: str, *, actor: Any = None, via: str = AnsweredVia.PYTHON,
            visible: Any = ALL_SCOPES) -> Resolution:
    """Answer every action with a message instead of running it."""
    pause = _approval(pause_id, visible)
    answer = {"decisions": [{"type": "respond", "message": message}
                            for _ in pause.prompt["action_requests"]]}
    return _leave_pending(pause_id, edge="answer", answer=answer,
                          action="respond", actor=actor, via=via, comment=message,
                          visible=visible)


def cancel(pause_id: Any, *, actor: Any = None, via: str = AnsweredVia.PYTHON,
           comment: str = "") -> Resolution:
    """Cancel a pending pause; the paused run fails (its siblings are cancelled too)."""
    return _leave_pending(pause_id, edge="cancel", answer=None, action="cancel",
                          actor=actor, via=via, comment=comment, validate=False)
