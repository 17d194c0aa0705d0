"""Approving with several approvers (``APPROVAL_POLICY``): which decisions are offered,
which edits are refused, and counting one approval toward the quorum.

The quorum approves one answer: every approver gives the same decision list, each a
user who may answer the pause's scope when answering; the run's starter never counts.
"""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal
from typing import Any

from .. import hitl, signals
from ..exceptions import AlreadyApproved, ApprovalMismatch, ApprovalNotCounted, InvalidAnswer
from ..models import Decision, Pause, PauseKind, Run
from .creating import approvals_needed
from .guards import label, reviewers_now
from .machine import Approvals

#: The decisions that let an action run: an answer with one of them is an approval.
RUNNING_DECISIONS = ("approve", "edit")


def lets_run(pause: Pause, answer: Any) -> bool:
    """Whether ``answer`` (validated) lets any action of ``pause`` run: an approval's
    ``approve`` or ``edit`` decision anywhere in it, whatever the other decisions are."""
    return pause.kind == PauseKind.APPROVAL and any(
        decision["type"] in RUNNING_DECISIONS for decision in answer["decisions"])


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


def refuse_edit_past_quorum(pause: Pause, answer: Any) -> None:
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


def count_approval(pause: Pause, run: Run, answer: Any, *, action: str, actor: Any, via: str,
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
    standing = reviewers_now({actor_id for actor_id, _, _ in given}, pause.scope_key)
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
                            actor_label=label(actor), via=via, action=action, answer=answer,
                            comment=comment, created_at=now)
    approvals = Approvals(have=len(before) + 1, need=pause.approvals_needed,
                          by=[*before, label(actor)])
    signals.send_on_commit(signals.pause_approved, Pause, pause=pause, approvals=approvals)
    return approvals
