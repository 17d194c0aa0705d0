"""The pause state machine, in one place: every write of ``Pause.status`` happens here.

::

    pending --answer / approve / reject / respond--> answered
    pending --expires_at passed-->                   expired
    pending --cancel (or a sibling died)-->          cancelled

A pause leaves ``pending`` once, in one short ``transaction.atomic()`` that
locks the paused run's row, then the pause's, through a conditional UPDATE
that is the single-use claim on every backend (row locks serialize siblings
on PostgreSQL; SQLite serializes writers itself). Expiry and answers race
through that same guard. A refusal raises before any write. When the last
pending pause of a paused run leaves ``pending``, ``settle`` asks the run
state machine (``runs``) to queue the continuation, or to fail the run.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from . import hitl, jsontext, runs, signals
from .binding import PauseBinding
from .conf import ALL_SCOPES, settings
from .datetimes import format_datetime
from .exceptions import (
    AlreadyAnswered,
    AlreadyApproved,
    ApprovalMismatch,
    ApprovalNotCounted,
    ClaimHeld,
    ClaimNotHeld,
    InteractionConfigurationError,
    InvalidAnswer,
    InvalidProposal,
    InvalidRequest,
    NotFound,
    PauseCancelled,
    PauseExpired,
    PayloadTooLarge,
    PermissionDenied,
)
from .models import (
    AnsweredVia,
    Decision,
    Pause,
    PauseKind,
    PauseSearch,
    PauseStatus,
    Run,
    RunStatus,
)
from .scopes import may_answer, may_read_pauses, scope_key, started_run
from .tokens import PauseClaims, mint_token, pin_hash, scope_hash

#: What an expired pause answers with when ``ON_EXPIRE`` is ``"resume"``.
TIMEOUT_ANSWER = {"timeout": True}

PENDING = PauseStatus.PENDING
#: The most approvers a policy may ask for (``Pause.approvals_needed`` is a small integer).
MAX_APPROVERS = 20
#: The pauses one expiry transaction takes at most (``expire_due``).
EXPIRY_BATCH = 500
#: How long one sweep (``expire_all_due``: the beat's ``expire_pauses``, ``manage.py
#: symfonic_expire``) goes on taking batches: less than the beat's 30 s, so that a sweep
#: draining a backlog has ended when the next one is due.
SWEEP_SECONDS = 20.0
#: Where a person answers as a reviewer: there every answer needs the answer permission in
#: the pause's scope, held at that moment. (A token answers through ``resume/``: ``TOKEN``.)
REVIEWER_SURFACES = (AnsweredVia.ADMIN, AnsweredVia.API)
#: The decisions that let an action run: an answer with one of them is an approval.
RUNNING_DECISIONS = ("approve", "edit")
#: The allowed edges: a pause leaves ``pending`` once, for one of these, and never returns.
EDGES: dict[str, tuple[str, str]] = {
    "answer": (PENDING, PauseStatus.ANSWERED),
    "expire": (PENDING, PauseStatus.EXPIRED),
    "cancel": (PENDING, PauseStatus.CANCELLED),
}


def _leave(pause_ids: list[Any], edge: str, **changes: Any) -> int:
    """Take ``edge`` for those of the pauses still pending; returns how many did.

    The one place a pause status is written.
    """
    source, target = EDGES[edge]
    return Pause.objects.filter(pk__in=pause_ids, status=source).update(status=target, **changes)


def _leave_all(pauses: list[Pause], edge: str, *, action: str, now: datetime,
               answer: Any = None, comment: str = "") -> list[Decision]:
    """Take ``edge`` for every one of ``pauses``, which the caller locked while pending,
    as the system: one guarded UPDATE and one ``bulk_create`` of their decisions.

    Row locks make the UPDATE move them all (SQLite serializes writers itself);
    a shortfall would mean neither held, and raises before anything commits.
    ``pauses`` are left as this transaction leaves their rows.
    """
    if _leave([pause.pk for pause in pauses], edge, answer=answer,
              answered_via=AnsweredVia.SYSTEM, answered_at=now, updated_at=now) != len(pauses):
        raise AlreadyAnswered()
    decisions = Decision.objects.bulk_create(
        Decision(pause=pause, scope_key=pause.scope_key, via=AnsweredVia.SYSTEM, action=action,
                 actor_label="system", answer=answer, comment=comment, created_at=now)
        for pause in pauses)
    for pause in pauses:
        pause.status, pause.answer = EDGES[edge][1], answer
        pause.answered_via, pause.answered_at, pause.updated_at = AnsweredVia.SYSTEM, now, now
    return decisions


@dataclass(frozen=True)
class Approvals:
    """Where a pause that needs several approvers stands: ``have`` of ``need``, by whom."""

    have: int
    need: int
    by: list[str]


@dataclass(frozen=True)
class Resolution:
    """The outcome of a transition: the pause as it now is, and the turn it started.

    ``approvals`` is set when an approval counted toward a quorum that it did
    not complete: the pause is still pending.
    """

    pause: Pause
    continuation: Run | None
    approvals: Approvals | None = None


# --- creating ---------------------------------------------------------------

def claims_for(pause: Pause) -> PauseClaims:
    """The claims of ``pause``, rebuilt from its row (the token is never stored)."""
    return PauseClaims(
        jti=str(pause.id), run_id=pause.bound_run_id, root_run_id=pause.bound_root_run_id,
        scope_hash=scope_hash(pause.scope_key), session_id=pause.session_id,
        thread_id=pause.thread_id, checkpoint_id=pause.checkpoint_id, pin_hash=pause.pin_hash,
        kind=pause.kind, iat=int(pause.created_at.timestamp()),
        # Rounded up: the token never dies before the row; the row's expiry is exact.
        exp=math.ceil(pause.expires_at.timestamp()),
    )


def token_for(pause: Pause) -> str:
    return mint_token(claims_for(pause))


def create_pause(
    *, run: Run, binding: PauseBinding, kind: str, prompt: Any, answer_schema: Any = None,
    ttl: float | timedelta | None = None, idempotency_key: str | None = None,
) -> tuple[Pause, bool]:
    """Persist a pause of ``run`` (or return the one with the same idempotency key).

    An approval whose action args do not fit their own ``args_schema`` is refused
    with ``InvalidProposal`` before anything is written.
    """
    if kind not in PauseKind.values:
        raise InvalidRequest(f"kind must be one of {PauseKind.values}, not {kind!r}.")
    jsontext.refuse_unstorable([prompt, answer_schema, idempotency_key or ""],
                               "The pause's prompt",
                               InvalidProposal if kind == PauseKind.APPROVAL else InvalidRequest)
    if kind == PauseKind.APPROVAL:
        prompt = hitl.validate_proposal(prompt)
        digest = hitl.action_digest(prompt)
    else:
        hitl.check_schema(answer_schema)
        digest = ""
    if idempotency_key:
        existing = Pause.objects.filter(root_run_id=run.root_id or run.id,
                                        idempotency_key=idempotency_key).first()
        if existing is not None:
            return existing, False
    ttl = settings.TOKEN_MAX_AGE if ttl is None else ttl
    seconds = ttl.total_seconds() if isinstance(ttl, timedelta) else float(ttl)
    if seconds <= 0:
        raise InvalidRequest("A pause's ttl must be positive.")
    now = timezone.now()
    pause = Pause(
        run=run, root_run_id=run.root_id or run.id,
        scope_key=scope_key(binding.scope) if binding.scope is not None else run.scope_key,
        kind=kind, prompt=prompt, action_digest=digest, answer_schema=answer_schema,
        pin_hash=pin_hash(binding.pin), session_id=binding.session_id,
        thread_id=binding.thread_id, checkpoint_id=binding.checkpoint_id,
        idempotency_key=idempotency_key or "", bound_run_id=binding.run_id,
        bound_root_run_id=binding.root_run_id, created_at=now,
        expires_at=now + timedelta(seconds=seconds),
    )
    pause.approvals_needed = approvals_needed(pause)
    try:
        with transaction.atomic():
            pause.save(force_insert=True)
            PauseSearch.objects.create(pause=pause, text=hitl.search_text(
                kind, prompt, binding.session_id, binding.thread_id))
            signals.send_on_commit(signals.pause_requested, Pause, pause=pause)
    except IntegrityError:
        # A concurrent re-execution of the same step created it first.
        existing = Pause.objects.filter(root_run_id=pause.root_run_id,
                                        idempotency_key=idempotency_key).first()
        if existing is None:
            raise
        return existing, False
    return pause, True


def approvals_needed(pause: Pause) -> int:
    """How many distinct people must approve ``pause``: ``APPROVAL_POLICY``'s say, else 1."""
    policy = settings.APPROVAL_POLICY
    if pause.kind != PauseKind.APPROVAL or policy is None:
        return 1
    needed = policy(pause)
    if not isinstance(needed, int) or isinstance(needed, bool) or not 1 <= needed <= MAX_APPROVERS:
        raise InteractionConfigurationError(
            f"SYMFONIC['APPROVAL_POLICY'] must return a whole number from 1 to "
            f"{MAX_APPROVERS}, not {needed!r}.")
    return needed


# --- answering --------------------------------------------------------------

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


def _label(actor: Any) -> str:
    if actor is None:
        return ""
    return actor.get_username() if hasattr(actor, "get_username") else str(actor)


def _clock(moment: datetime) -> str:
    """A time of day in a refusal's words, as every page shows times: ``07:40:00 UTC``."""
    return format_datetime(moment, "time")


def _refuse_closed(pause: Pause, now: datetime, *, caller: Any = None) -> None:
    """Raise the refusal for a pause that can no longer be answered.

    Who answered, and when, is told only to a ``caller`` who may read the pause's
    scope: a token holder who may not learns only that it was answered.
    """
    when = _clock(pause.answered_at) if pause.answered_at else ""
    if pause.status == PauseStatus.ANSWERED:
        if not may_read_pauses(caller, pause.scope_key):
            raise AlreadyAnswered("This pause has already been answered.")
        who = pause.answered_by.get_username() if pause.answered_by else pause.answered_via
        raise AlreadyAnswered(f"Already answered by {who} at {when}.")
    if pause.status == PauseStatus.CANCELLED:
        raise PauseCancelled(f"This pause was cancelled at {when}.")
    if pause.status == PauseStatus.EXPIRED or pause.expires_at <= now:
        raise PauseExpired(f"This pause expired at {_clock(pause.expires_at)}.")


def _lookup(pause_id: Any, visible: Any) -> Pause:
    try:
        UUID(str(pause_id))
    except ValueError:
        raise NotFound("No such pause.") from None
    pause = Pause.objects.filter(pk=pause_id).in_scopes(visible).first()
    if pause is None:
        raise NotFound("No such pause.")
    return pause


def lets_run(pause: Pause, answer: Any) -> bool:
    """Whether ``answer`` (validated) lets any action of ``pause`` run: an approval's
    ``approve`` or ``edit`` decision anywhere in it, whatever the other decisions are."""
    return pause.kind == PauseKind.APPROVAL and any(
        decision["type"] in RUNNING_DECISIONS for decision in answer["decisions"])


def _reviewer_now(actor: Any, key: str) -> bool:
    """Whether ``actor`` is, as the database has it now, an active user who may answer the
    pauses of scope ``key``.

    The user is read again rather than trusted as the caller holds it: a reviewer
    deactivated or revoked since the caller loaded them (a page opened before, a
    long bulk action, a process's cached permissions) no longer answers.
    """
    if getattr(actor, "pk", None) is None or not getattr(actor, "is_authenticated", False):
        return False
    user = get_user_model().objects.filter(pk=actor.pk).first()
    return bool(user is not None and user.is_active and may_answer(user, key))


def _reviewers_now(user_ids: set[Any], key: str) -> set[Any]:
    """Those of ``user_ids`` who are, as the database has it now, active users who may
    answer the pauses of scope ``key``."""
    users = get_user_model().objects.filter(pk__in=user_ids - {None}, is_active=True)
    return {user.pk for user in users if may_answer(user, key)}


def _refuse_unless_reviewer(pause: Pause, actor: Any, *, counts: bool) -> None:
    """Refuse an answer from anyone but a reviewer of the pause's scope, as of now.

    Asked of every answer through a reviewer surface, and of every answer that
    would count toward a quorum whatever its surface: a token alone, a token held by
    a user without the answer permission, or a user of another scope never counts.
    """
    if _reviewer_now(actor, pause.scope_key):
        return
    if counts:
        who = ("an answer that names nobody (a token alone)"
               if getattr(actor, "pk", None) is None else "your answer")
        raise PermissionDenied(
            f"This approval needs {pause.approvals_needed} different reviewers who may answer "
            f"this pause; {who} cannot count as one of them.")
    raise PermissionDenied("You may not answer this pause.")


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
    run on a pause that needs several approvers is counted (``_count_approval``) and
    leaves ``pending`` only as the last of them. Any other answer leaves at once.
    """
    pause = _lookup(pause_id, visible)
    jsontext.refuse_unstorable(comment, "The comment", InvalidAnswer)
    if validate:
        answer = validate_answer(pause, answer)
    now = now or timezone.now()
    status = EDGES[edge][1]
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=pause.run_id)
        pause = (Pause.objects.select_for_update(of=("self",)).select_related("answered_by")
                 .get(pk=pause.pk))
        if pause.status != PENDING or pause.expires_at <= now:
            _refuse_closed(pause, now, caller=actor)
        user = actor if getattr(actor, "pk", None) is not None else None
        counts = edge == "answer" and pause.approvals_needed > 1 and lets_run(pause, answer)
        if edge == "answer" and (counts or via in REVIEWER_SURFACES):
            _refuse_unless_reviewer(pause, actor, counts=counts)
        elif (edge == "answer" and via == AnsweredVia.TOKEN and user is not None
              and not started_run(user, run)):
            # A token sent with a login names who answers: the starter, or a reviewer of
            # the scope. Anyone else is refused, so the audit never names a user who may
            # not answer; the token alone (no login) still answers a one-approver pause.
            _refuse_unless_reviewer(pause, actor, counts=False)
        if action == Decision.Action.EDIT:
            _refuse_edit_past_quorum(pause, answer)
        if counts:
            approvals = _count_approval(pause, run, answer, action=action, actor=user,
                                        via=via, comment=comment, now=now)
            if approvals is not None:
                return Resolution(pause=pause, continuation=None, approvals=approvals)
        won = _leave([pause.pk], edge, answer=answer, answered_by=user, answered_via=via,
                     answered_at=now, updated_at=now)
        if not won:  # SQLite has no row locks: the conditional UPDATE is the claim
            raise AlreadyAnswered()
        decision = Decision.objects.create(
            pause=pause, scope_key=pause.scope_key, actor=user,
            actor_label=_label(actor) or via, via=via, action=action, answer=answer,
            comment=comment, created_at=now)
        # The row as this transaction leaves it, without reading it back.
        pause.status, pause.answer, pause.answered_via = status, answer, via
        pause.answered_by, pause.answered_at, pause.updated_at = user, now, now
        continuation = settle(run, dispatch=dispatch, now=now)
        pause.continuation = continuation
        if edge == "answer":
            signals.send_on_commit(signals.pause_answered, Pause, pause=pause,
                                   decision=decision, continuation=continuation)
        else:
            signals.send_on_commit(signals.pause_cancelled, Pause, pause=pause,
                                   decision=decision)
    return Resolution(pause=pause, continuation=continuation)


def offered_decisions(pause: Pause, action_name: str, reviewer: Any = None) -> list[str]:
    """The decisions a reviewer may give on ``action_name``: its ``allowed_decisions``,
    without ``edit`` on a pause that needs several approvers (they approve the proposal).

    To a ``reviewer`` whose approval of such a pause already counts, none that lets the
    action run (a second approval from them is refused): they may still reject it.
    """
    allowed = hitl.review_config(pause.prompt, action_name).get("allowed_decisions",
                                                               list(hitl.DECISION_TYPES))
    offered = [d for d in allowed if not (d == "edit" and pause.approvals_needed > 1)]
    if pause.approvals_needed > 1 and getattr(reviewer, "pk", None) is not None and (
            Decision.objects.filter(pause=pause, action=Decision.Action.APPROVE,
                                    actor_id=reviewer.pk).exists()):
        offered = [d for d in offered if d not in RUNNING_DECISIONS]
    return offered


def _refuse_edit_past_quorum(pause: Pause, answer: Any) -> None:
    """Refuse an edit that the approval policy would ask more approvers for than the pause.

    The policy read the proposal; an edit is another proposal (a refund of 40 edited
    to 9,999), and one reviewer must not approve alone what needs two.
    """
    requests = pause.prompt["action_requests"]
    edited = [{**request, "args": decision["edited_action"]["args"]}
              if decision.get("type") == "edit" else request
              for request, decision in zip(requests, answer["decisions"], strict=True)]
    needed = approvals_needed(Pause(kind=pause.kind, scope_key=pause.scope_key,
                                    run_id=pause.run_id, root_run_id=pause.root_run_id,
                                    prompt={**pause.prompt, "action_requests": edited}))
    if needed > pause.approvals_needed:
        raise InvalidAnswer(
            f"This edit would need {needed} approvers, and the pause was asked with "
            f"{pause.approvals_needed}: approve the actions as proposed, or reject them and "
            "let the agent propose the edited one.")


def _compared(value: Any) -> Any:
    """A JSON value as two approvals' decision lists are compared: numbers by their
    decimal value, tagged so that ``true`` is not ``1``; strings, ``null`` and booleans
    exactly; objects whatever their key order.

    By value because a stored list comes back from the database, which may write a
    number another way than the request did (PostgreSQL's ``jsonb`` reads ``1e+16`` back
    as ``10000000000000000``): ``500`` and ``500.0`` are one amount to the tool.
    """
    if isinstance(value, dict):
        return {key: _compared(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_compared(item) for item in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return ("number", Decimal(str(value)))
    return value


def same_decisions(one: Any, other: Any) -> bool:
    """Whether two validated ``HITLResponse`` answers are the same decision list: the same
    type for each action in order, the same edited arguments, and the same messages,
    character for character (a message is what the agent reads instead of a run)."""
    return bool(_compared(one) == _compared(other))


def _count_approval(pause: Pause, run: Run, answer: Any, *, action: str, actor: Any, via: str,
                    comment: str, now: datetime) -> Approvals | None:
    """Record one approver of a pause that needs several, under its row lock.

    ``answer`` lets an action run, and ``actor`` was found a reviewer of the scope
    now. The quorum approves one answer: each approval is of its exact decision
    list, and a list other than the ones already counted is refused
    (``ApprovalMismatch``), as are an edit (the others approved what was proposed),
    the run's own starter, and the same person twice. Returns where the quorum
    stands when this approval does not complete it (the pause stays pending);
    ``None`` for the approval that completes it: the pause leaves pending with it.
    """
    if action == Decision.Action.EDIT:
        raise InvalidAnswer(f"This approval needs {pause.approvals_needed} approvers: approve "
                            "the actions as proposed, or reject them.")
    if actor.pk == run.started_by_id:
        raise ApprovalNotCounted("You started this run: your approval does not count toward "
                                 "its own quorum. Another reviewer must approve it.")
    given = list(Decision.objects.filter(pause=pause, action=Decision.Action.APPROVE)
                 .order_by("pk").values_list("actor_id", "actor_label", "answer"))
    # An earlier approval counts while its approver still may answer: one revoked or
    # deactivated since (a reviewer who left, a compromised account) no longer moves the
    # action. Their decision stays in the audit; the pause waits for another reviewer.
    standing = _reviewers_now({actor_id for actor_id, _, _ in given}, pause.scope_key)
    approved = [approval for approval in given if approval[0] in standing]
    before = [label for _, label, _ in approved]
    if any(actor_id == actor.pk for actor_id, _, _ in approved):
        raise AlreadyApproved(
            f"You already approved this; it needs {pause.approvals_needed - len(before)} "
            "more approver(s).")
    differing = next((earlier for _, _, earlier in approved
                      if not same_decisions(earlier, answer)), None)
    if differing is not None:
        shown = json.dumps(differing["decisions"], ensure_ascii=False, separators=(", ", ": "))
        raise ApprovalMismatch(
            f"This pause needs {pause.approvals_needed} approvers of one answer, and the "
            f"approval already given is of other decisions: {shown}. Give exactly these "
            "decisions to add your approval, or reject every action to end the pause.")
    if len(before) + 1 >= pause.approvals_needed:
        return None  # the last approval: the pause leaves pending with it
    Decision.objects.create(pause=pause, scope_key=pause.scope_key, actor=actor,
                            actor_label=_label(actor), via=via, action=action, answer=answer,
                            comment=comment, created_at=now)
    approvals = Approvals(have=len(before) + 1, need=pause.approvals_needed,
                          by=[*before, _label(actor)])
    signals.send_on_commit(signals.pause_approved, Pause, pause=pause, approvals=approvals)
    return approvals


def answer_pause(pause_id: Any, answer: Any, *, actor: Any = None, via: str = AnsweredVia.PYTHON,
                 visible: Any = ALL_SCOPES, dispatch: bool = True, comment: str = "") -> Resolution:
    """Answer a pause with a ``HITLResponse`` (approvals) or its schema's value (questions)."""
    pause = _lookup(pause_id, visible)
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
    pause = _lookup(pause_id, visible)
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


def expire(pause_id: Any, *, now: datetime | None = None) -> Resolution | None:
    """Expire one pause if it is pending and due; ``None`` when it is not (anymore)."""
    try:
        UUID(str(pause_id))
    except ValueError:
        return None
    expired = _expire(Pause.objects.filter(pk=pause_id), now=now or timezone.now())
    return expired[0] if expired else None


def expire_due(*, now: datetime | None = None, limit: int = EXPIRY_BATCH) -> int:
    """Expire pending pauses whose time is up, up to ``limit``, in one transaction; returns
    how many it expired."""
    now = now or timezone.now()
    return len(_expire(Pause.objects.due(now).order_by("expires_at")[:limit], now=now))


def expire_all_due(*, seconds: float = SWEEP_SECONDS, batch: int = EXPIRY_BATCH) -> int:
    """The expiry sweep: ``expire_due`` a batch at a time (each its own transaction, its
    own ``now``) until a batch finds nothing left to expire or ``seconds`` have passed;
    returns how many it expired.

    A backlog (the beat was down, thousands of pauses shared a deadline) drains at
    the sweep's rate, not one batch a beat. Two sweeps at once are harmless: the
    second waits on the first's row locks and finds those pauses expired.
    """
    deadline = time.monotonic() + seconds
    expired = 0
    while done := expire_due(limit=batch):
        expired += done
        if time.monotonic() >= deadline:
            break
    return expired


def _expire(candidates: QuerySet[Pause], *, now: datetime) -> list[Resolution]:
    """Expire those of ``candidates`` still pending and due at ``now``, in one transaction.

    A few queries for the whole batch, plus what settling each run writes:
    the runs are locked first, then their pauses, in the order every answer
    takes them; the pauses found still pending and due under those locks leave
    ``pending`` in one guarded UPDATE, with one ``Decision`` each. Each pause
    sends ``pause_expired`` on commit, and each of their runs is settled.
    """
    answer = TIMEOUT_ANSWER if settings.ON_EXPIRE == "resume" else None
    with transaction.atomic():
        chosen = list(candidates.values_list("pk", "run_id"))
        pause_ids, run_ids = {pk for pk, _ in chosen}, sorted({run_id for _, run_id in chosen})
        locked = {run.pk: run for run in
                  Run.objects.select_for_update().filter(pk__in=run_ids).order_by("pk")}
        by_run: dict[Any, list[Pause]] = {}
        for pause in (Pause.objects.select_for_update().filter(run_id__in=run_ids)
                      .order_by("created_at")):
            by_run.setdefault(pause.run_id, []).append(pause)
        due = [pause for pauses in by_run.values() for pause in pauses
               if pause.pk in pause_ids and pause.status == PENDING and pause.expires_at <= now]
        if not due:
            return []
        _leave_all(due, "expire", action=Decision.Action.EXPIRE, answer=answer, now=now)
        continuations = _settle([(locked[run_id], by_run[run_id])
                                 for run_id in dict.fromkeys(pause.run_id for pause in due)],
                                dispatch=True, now=now)
        resolutions = [Resolution(pause=pause, continuation=continuations[pause.run_id])
                       for pause in due]
        for resolution in resolutions:
            resolution.pause.continuation = resolution.continuation
        signals.send_each_on_commit(signals.pause_expired, Pause, (
            {"pause": r.pause, "continuation": r.continuation} for r in resolutions))
    return resolutions


# --- review claims ----------------------------------------------------------------
#
# "Being reviewed by alice until 07:40:00 UTC": a claim tells other reviewers someone is on it.
# It informs and locks nothing: anyone who may answer the pause still can, and an
# answer ends the claim's meaning with the pause. A claim is not a status, so these
# write only ``claimed_by`` / ``claimed_until``, each under the pause's row lock with a
# guarded UPDATE (the claim on SQLite, which has no row locks), and a ``Decision``.

def _claimable(pause_id: Any, actor: Any, visible: Any, now: datetime) -> Pause:
    """``pause_id`` locked, pending and in time, claimed or released by a signed-in user."""
    if getattr(actor, "pk", None) is None:
        raise PermissionDenied("A claim names the reviewer who holds it: sign in to claim "
                               "or release a pause.")
    pause = _lookup(pause_id, visible)
    pause = (Pause.objects.select_for_update(of=("self",))
             .select_related("answered_by", "claimed_by").get(pk=pause.pk))
    if pause.status != PENDING or pause.expires_at <= now:
        _refuse_closed(pause, now, caller=actor)
    return pause


def claim(pause_id: Any, *, actor: Any, via: str = AnsweredVia.PYTHON,
          visible: Any = ALL_SCOPES, now: datetime | None = None) -> Pause:
    """Claim a pending pause for ``actor`` for ``CLAIM_SECONDS``; the holder may claim again
    to extend it. Returns the pause as claimed.

    Refused, changing nothing: ``ClaimHeld`` while another reviewer's claim has not
    lapsed; ``AlreadyAnswered`` / ``PauseCancelled`` / ``PauseExpired`` for a closed pause;
    ``NotFound`` outside ``visible``; ``PermissionDenied`` for no user.

    A claim whose holder may no longer answer the pause (deactivated, the answer
    permission or the scope taken away) has lapsed: it blocks nobody.
    """
    now = now or timezone.now()
    until = now + timedelta(seconds=settings.CLAIM_SECONDS)
    with transaction.atomic():
        pause = _claimable(pause_id, actor, visible, now)
        holder = pause.claimant_at(now)
        free = Q(claimed_by__isnull=True) | Q(claimed_by=actor.pk) | Q(claimed_until__lte=now)
        if holder is not None and holder.pk != actor.pk:
            if _reviewer_now(holder, pause.scope_key):
                raise ClaimHeld(f"Being reviewed by {_label(holder)} until "
                                f"{_clock(pause.claimed_until or now)}.")
            free |= Q(claimed_by=holder.pk)  # revoked since it claimed: taken over
        if not Pause.objects.filter(free, pk=pause.pk, status=PENDING).update(
                claimed_by=actor.pk, claimed_until=until, updated_at=now):
            # SQLite, without row locks: another reviewer claimed it since it was read.
            raise ClaimHeld("Another reviewer claimed this pause a moment ago.")
        Decision.objects.create(pause=pause, scope_key=pause.scope_key, actor=actor,
                                actor_label=_label(actor), via=via,
                                action=Decision.Action.CLAIM, comment=f"until {_clock(until)}",
                                created_at=now)
    pause.claimed_by, pause.claimed_until, pause.updated_at = actor, until, now
    return pause


def release(pause_id: Any, *, actor: Any, via: str = AnsweredVia.PYTHON,
            visible: Any = ALL_SCOPES, now: datetime | None = None) -> Pause:
    """Give up ``actor``'s claim on a pending pause before it lapses. Returns the pause.

    Refused, changing nothing: ``ClaimNotHeld`` when ``actor`` holds no live claim on
    it (another reviewer's, a lapsed one, none), and as ``claim`` for the rest.
    """
    now = now or timezone.now()
    with transaction.atomic():
        pause = _claimable(pause_id, actor, visible, now)
        holder = pause.claimant_at(now)
        if holder is not None and holder.pk != actor.pk:
            raise ClaimNotHeld(f"You hold no claim on this pause: it is being reviewed by "
                               f"{_label(holder)} until {_clock(pause.claimed_until or now)}.")
        mine = Q(claimed_by=actor.pk, claimed_until__gt=now)
        if holder is None or not Pause.objects.filter(mine, pk=pause.pk, status=PENDING).update(
                claimed_by=None, claimed_until=None, updated_at=now):
            raise ClaimNotHeld("You hold no claim on this pause (or it has lapsed).")
        Decision.objects.create(pause=pause, scope_key=pause.scope_key, actor=actor,
                                actor_label=_label(actor), via=via,
                                action=Decision.Action.RELEASE, created_at=now)
    pause.claimed_by, pause.claimed_until, pause.updated_at = None, None, now
    return pause


# --- reminders and escalations -----------------------------------------------------
#
# Each pause is reminded once and escalated once: the sweep (``notifications``) asks for
# the pauses it found due, and these take the ones still pending and not yet told, under
# their row locks (skipping rows another sweep holds), with a guarded UPDATE and one
# ``Decision`` each, in the caller's transaction, so two sweeps racing tell each once.

#: A decision's comment, or how to write one for each pause.
Comment = str | Callable[[Pause], str]


def mark_reminded(pause_ids: list[Any], *, now: datetime, comment: Comment = "") -> list[Pause]:
    """Record the reminder of those of ``pause_ids`` still pending, unexpired and not yet
    reminded, with a ``Decision`` each (``comment``); returns them (with ``claimed_by``).

    Call it inside the ``transaction.atomic()`` that writes what they announce: the
    marks and the deliveries commit together, or neither does.
    """
    return _mark(pause_ids, "reminded_at", Decision.Action.REMIND, now=now, comment=comment)


def mark_escalated(pause_ids: list[Any], *, now: datetime, comment: Comment = "") -> list[Pause]:
    """``mark_reminded`` for the escalation (``escalated_at``)."""
    return _mark(pause_ids, "escalated_at", Decision.Action.ESCALATE, now=now, comment=comment)


def _mark(pause_ids: list[Any], column: str, action: str, *, now: datetime,
          comment: Comment) -> list[Pause]:
    untold = Q(status=PENDING, expires_at__gt=now, **{f"{column}__isnull": True})
    with transaction.atomic():
        chosen = list(Pause.objects.select_for_update(of=("self",), skip_locked=True)
                      .select_related("claimed_by").filter(untold, pk__in=pause_ids)
                      .order_by("expires_at", "pk"))
        if not chosen:
            return []
        marked = Pause.objects.filter(untold, pk__in=[p.pk for p in chosen]).update(
            **{column: now})
        if marked != len(chosen):  # without row locks another sweep got there: tell none
            raise AlreadyAnswered("Another sweep is telling these pauses' reviewers.")
        Decision.objects.bulk_create(
            Decision(pause=pause, scope_key=pause.scope_key, via=AnsweredVia.SYSTEM,
                     action=action, actor_label="system", created_at=now,
                     comment=comment(pause) if callable(comment) else comment)
            for pause in chosen)
    for pause in chosen:
        setattr(pause, column, now)
    return chosen


# --- settling a paused run ---------------------------------------------------

def _is_dead(pause: Pause) -> bool:
    return pause.status == PauseStatus.CANCELLED or (
        pause.status == PauseStatus.EXPIRED and pause.answer is None
    )


def settle(run: Run, *, dispatch: bool = True, now: datetime | None = None) -> Run | None:
    """Decide what a paused run does now; the caller holds ``run``'s row lock.

    A cancelled pause (or one expired with ``ON_EXPIRE="fail"``) fails the run
    and cancels its still-pending siblings. Once no pause is pending, the
    continuation run is queued (once) and, if ``dispatch``, sent to a worker
    when the transaction commits. Returns the continuation, if there is one.
    """
    pauses = list(Pause.objects.select_for_update().filter(run=run).order_by("created_at"))
    return _settle([(run, pauses)], dispatch=dispatch, now=now or timezone.now())[run.pk]


def _settle(paused: list[tuple[Run, list[Pause]]], *, dispatch: bool, now: datetime,
            ) -> dict[Any, Run | None]:
    """``settle`` for runs whose rows and pauses (oldest first) the caller has locked.

    The siblings that die with their runs are cancelled together, in one
    guarded UPDATE with one ``bulk_create`` of their decisions, however many
    runs there are (the expiry sweep settles a whole batch).
    """
    outcome: dict[Any, Run | None] = {}
    dying: list[tuple[Run, Pause]] = []
    orphans: list[Pause] = []
    for run, pauses in paused:
        outcome[run.pk] = None
        if run.status != RunStatus.PAUSED:
            continue  # still running: the turn settles itself when it ends
        dead = next((p for p in pauses if _is_dead(p)), None)
        if dead is not None:
            dying.append((run, dead))
            orphans += [p for p in pauses if p.status == PENDING]
            continue
        if any(p.status == PENDING for p in pauses):
            continue
        existing = next((p.continuation for p in pauses if p.continuation_id), None)
        if existing is not None:
            outcome[run.pk] = existing
            continue
        last = max(pauses, key=lambda p: p.answered_at or now)
        continuation = runs.queue_continuation(
            run, resumed_from=last, answers={str(p.pk): p.answer for p in pauses},
            dispatch=dispatch, now=now)
        Pause.objects.filter(run=run).update(continuation=continuation)
        outcome[run.pk] = continuation
    if orphans:
        decisions = _leave_all(orphans, "cancel", action=Decision.Action.CANCEL, now=now,
                               comment="a sibling pause was cancelled or expired")
        signals.send_each_on_commit(signals.pause_cancelled, Pause, (
            {"pause": sibling, "decision": decision}
            for sibling, decision in zip(orphans, decisions, strict=True)))
    for code, status in (("pause_expired", PauseStatus.EXPIRED),
                         ("pause_cancelled", PauseStatus.CANCELLED)):
        runs.abandon([run for run, dead in dying if dead.status == status], code=code, now=now)
    return outcome
