"""What the review page of a pause shows, as typed values the template reads
(``review.<field>`` in ``pause/review.html``).

``present_review`` reads the pause, its decisions and its runs' events once and says
everything the page shows: what the agent asks (each action, its arguments, the
decisions offered and what each will do, the form's inputs), where several approvals
stand, the decision taken, the audit and what the agent did before and after.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest
from django.utils.translation import gettext as _

from .. import hitl, pauses
from ..forms import decision_label, pretty_json
from ..hitl import review_config
from ..models import Decision, Pause, PauseKind
from ..scopes import ALL_SCOPES, VIEW_RUN_PERMISSION
from ..viewer import viewer_url
from .base import readable_scopes
from .display import (
    action_call,
    age_text,
    answer_rows,
    approvals_text,
    args_rows,
    decision_rows,
    expires_text,
)
from .transcript import events_table

#: (name, value, is_json): one row of an arguments or answer table.
Row = tuple[str, str, bool]


@dataclass(frozen=True)
class ActionReview:
    """One proposed action of an approval, as the page shows and edits it."""

    index: int
    name: str
    description: str
    args: list[Row]
    #: The labels of the decisions this reviewer may give on it.
    allowed: list[str]
    #: ``(decision, label, line)``: what choosing each decision will do.
    outcomes: list[tuple[str, str, str]]
    #: The action's argument schema as JSON ("" if it has none).
    args_schema: str
    #: The answer form's fields for it ({} without a form).
    fields: dict[str, Any]
    #: Its argument inputs in fieldsets (``input_groups``).
    input_groups: list[dict[str, Any]]


@dataclass(frozen=True)
class ApprovalsReview:
    """Where a pause that needs several approvers stands: "1 of 2 approvals"."""

    have: int
    need: int
    by: list[str]
    #: "You approved; waiting for 1 more approval" once this reviewer approved ("" if not).
    mine: str


@dataclass(frozen=True)
class ReviewPage:
    """Everything the review page shows besides the pause itself and its form."""

    title: str
    subtitle: str
    is_approval: bool
    approvals: ApprovalsReview | None
    actions: list[ActionReview]
    #: A question's words (``None`` for an approval), its description and answer schema.
    question: str | None
    question_description: Any
    answer_schema: str
    comment_field: Any
    #: The decision taken: each action's (``decision_rows``), or a question's answer.
    decided: list[dict[str, Any]]
    negative: bool
    answer_json: str | None
    answer_rows: list[Row] | None
    #: ``(decision, answer text, edit changes)`` per audit row, oldest first.
    history: list[tuple[Decision, str, list[Any]]]
    #: The events of the continuation run and of the run that asked (``events_table``),
    #: ``None`` to a reviewer who may not read the pause's runs.
    events: dict[str, Any] | None
    asked_events: dict[str, Any] | None
    expires_in: str
    age: str
    viewer_url: str | None


def outcomes(pause: Pause, action: dict[str, Any], allowed: list[str]
             ) -> list[tuple[str, str, str]]:
    """``(decision, label, line)`` per allowed decision on ``action``: the line says
    what choosing it will do."""
    name, call = action.get("name"), action_call(action)
    need = pause.approvals_needed
    lines = {
        "approve": (_("counts as one of %(need)d approvals; the agent runs %(call)s once "
                      "%(need)d reviewers approve.") % {"need": need, "call": call}
                    if need > 1 else _("the agent runs %(call)s.") % {"call": call}),
        "edit": _("the agent runs %(name)s with the arguments you set (shown as changes "
                  "against the proposal).") % {"name": name},
        "reject": _("%(name)s does not run; the agent is told it was rejected, with your "
                    "message if you write one.") % {"name": name},
        "respond": _("%(name)s does not run; your message goes back to the agent "
                     "instead.") % {"name": name},
    }
    return [(d, decision_label(d), lines[d]) for d in allowed if d in lines]


def input_groups(inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An action's argument inputs in runs of the same enclosing object: one fieldset
    each, its legend the object's path (empty for the top level)."""
    groups: list[dict[str, Any]] = []
    for entry in inputs:
        legend = ".".join(entry["item"].group)
        if not groups or groups[-1]["legend"] != legend:
            groups.append({"legend": legend, "depth": entry["item"].depth, "inputs": []})
        groups[-1]["inputs"].append(entry)
    return groups


def _actions(pause: Pause, form: Any, user: Any) -> list[ActionReview]:
    """Each proposed action of an approval, with the decisions ``user`` is offered."""
    actions = []
    for i, action in enumerate(pause.prompt.get("action_requests") or []):
        config = review_config(pause.prompt, action["name"])
        allowed = pauses.offered_decisions(pause, action["name"], user)
        fields = form.action_fields(i) if form is not None else {}
        actions.append(ActionReview(
            index=i, name=action["name"], description=action.get("description", ""),
            args=args_rows(action.get("args", {})),
            allowed=[decision_label(d) for d in allowed],
            outcomes=outcomes(pause, action, allowed),
            args_schema=(pretty_json(config["args_schema"])
                         if config.get("args_schema") else ""),
            fields=fields,
            input_groups=input_groups(fields.get("inputs", []))))
    return actions


def _approvals(pause: Pause, history: list[Decision], user: Any) -> ApprovalsReview | None:
    """Where a pause that needs several approvers stands (``None`` if it needs one)."""
    if pause.approvals_needed <= 1:
        return None
    approved = [d for d in history if d.action == Decision.Action.APPROVE]
    have, need = len(approved), pause.approvals_needed
    mine = pause.is_pending and any(d.actor_id == user.pk for d in approved)
    return ApprovalsReview(have=have, need=need, by=[d.actor_label for d in approved],
                           mine=approvals_text(have, need, True) if mine else "")


def _history_row(pause: Pause, decision: Decision) -> tuple[Decision, str, list[Any]]:
    """An audit row: the decision, its answer as text, and an edit's changes."""
    return (decision, "" if decision.answer is None else hitl.shown(decision.answer),
            hitl.edit_changes(pause.prompt, decision.answer)
            if decision.action == Decision.Action.EDIT else [])


def _question_description(pause: Pause) -> Any:
    """A question's description, as the agent gave it ("" for an approval)."""
    if pause.kind != PauseKind.APPROVAL and isinstance(pause.prompt, dict):
        return pause.prompt.get("description", "")
    return ""


def _answer_rows(pause: Pause) -> list[Row] | None:
    """A question's answer as rows (``None`` for an approval, or no answer)."""
    if pause.kind != PauseKind.APPROVAL and isinstance(pause.answer, dict):
        return answer_rows(pause)
    return None


def _reads_runs(request: HttpRequest, pause: Pause) -> bool:
    """Whether the reviewer may read the pause's runs: a run's events are read with the
    run's view permission, on this page too."""
    runs_of = readable_scopes(request, VIEW_RUN_PERMISSION)
    return bool(runs_of == ALL_SCOPES or pause.scope_key in runs_of)


def present_review(request: HttpRequest, pause: Pause, form: Any) -> ReviewPage:
    """The review page of ``pause`` for ``request.user``, with ``form`` (``None``: no
    answer form is shown). ``pause`` comes with its run, answerer and continuation."""
    is_approval = pause.kind == PauseKind.APPROVAL
    history = list(Decision.objects.filter(pause=pause).select_related("actor")
                   .order_by("created_at"))
    actions = _actions(pause, form, request.user) if is_approval else []
    decided = decision_rows(pause) if is_approval else []
    reads_runs = _reads_runs(request, pause)
    return ReviewPage(
        title=(_("Approval: %(names)s") % {"names": ", ".join(a.name for a in actions)}
               if is_approval else _("Question")),
        subtitle=_("%(kind)s pause %(id)s") % {"kind": pause.get_kind_display(), "id": pause.pk},
        is_approval=is_approval,
        approvals=_approvals(pause, history, request.user),
        actions=actions,
        question=None if is_approval else hitl.question_text(pause.prompt),
        question_description=_question_description(pause),
        answer_schema=pretty_json(pause.answer_schema) if pause.answer_schema else "",
        comment_field=form.comment_field() if form is not None else None,
        decided=decided,
        negative=any(row["type"] in ("reject", "respond") for row in decided),
        answer_json=None if pause.answer is None else pretty_json(pause.answer),
        answer_rows=_answer_rows(pause),
        history=[_history_row(pause, d) for d in history],
        events=events_table(pause.continuation) if reads_runs else None,
        asked_events=events_table(pause.run) if reads_runs else None,
        expires_in=expires_text(pause),
        age=age_text(pause),
        viewer_url=viewer_url(pause.continuation),
    )
