"""What a pause says, in a line and in a table, and the small pieces of HTML every
admin page of the app shows: a status badge, a link to a row, a JSON block, a time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.text import Truncator
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop, ngettext

from .. import hitl
from ..datetimes import format_datetime
from ..forms import choice_labels, pretty_json
from ..models import Decision, Pause, PauseKind, PauseStatus

SUMMARY_CHARS = 90
#: A headline longer than this is cut (the page shows it whole).
HEADLINE_CHARS = 160


def _action_requests(pause: Pause) -> list[Any]:
    """An approval's proposed actions ([] for a question)."""
    if pause.kind == PauseKind.APPROVAL and isinstance(pause.prompt, dict):
        return list(pause.prompt.get("action_requests") or [])
    return []


def action_call(request: Any) -> str:
    """One action request as a call (``hitl.call_text``): ``refund(order_id=A-1, amount=99.99)``."""
    request = request if isinstance(request, dict) else {}
    return hitl.call_text(request.get("name"), request.get("args"))


def summarize(pause: Pause) -> str:
    """One line: the proposed action(s) with their arguments, or the question."""
    if pause.kind == PauseKind.APPROVAL and isinstance(pause.prompt, dict):
        text = "; ".join(action_call(r) for r in _action_requests(pause))
    else:
        text = hitl.question_text(pause.prompt)
    # Truncator normalizes and walks the text; most summaries are short enough as they are.
    return text if len(text) <= SUMMARY_CHARS else Truncator(text).chars(SUMMARY_CHARS)


def headline(pause: Pause) -> str:
    """What a reviewer reads first: the agent's description of the (first) proposed
    action, or its call when it has none, or the question's words."""
    if pause.kind == PauseKind.APPROVAL and isinstance(pause.prompt, dict):
        requests = [r for r in _action_requests(pause) if isinstance(r, dict)]
        first = requests[0] if requests else {}
        description = first.get("description")
        text = description if isinstance(description, str) and description else action_call(first)
        if len(requests) > 1:
            more = len(requests) - 1
            text += " " + ngettext("(and %(count)d more action)", "(and %(count)d more actions)",
                                   more) % {"count": more}
    else:
        text = hitl.question_text(pause.prompt)
    return text if len(text) <= HEADLINE_CHARS else Truncator(text).chars(HEADLINE_CHARS)


def edited_text(pause: Pause) -> str:
    """What an edit changed, for a row that shows the proposal ("Edited: amount: 99.99 →
    50"): the arguments that ran, not only the ones the agent proposed ("" if none)."""
    if pause.kind != PauseKind.APPROVAL or pause.is_pending:
        return ""
    changes = [f"{where}: {was} → {now}" for _name, rows in hitl.edit_changes(pause.prompt,
                                                                             pause.answer)
               for where, was, now in rows]
    return _("Edited: %(changes)s") % {"changes": "; ".join(changes)} if changes else ""


def args_rows(args: Any) -> list[tuple[str, str, bool]]:
    """(name, value, is_json) rows of an arguments table; strings are shown bare."""
    if not isinstance(args, dict):
        return [("", hitl.shown(args), True)]
    return [(str(k), hitl.shown(v), not isinstance(v, str)) for k, v in args.items()]


def answer_rows(pause: Pause) -> list[tuple[str, str, bool]]:
    """A question's answer as rows, a choice shown by its label from the answer schema
    ("DHL" for "dhl")."""
    schema = pause.answer_schema if isinstance(pause.answer_schema, dict) else {}
    properties = schema.get("properties")
    answer = pause.answer if isinstance(pause.answer, dict) else {}
    rows = []
    for name, value, is_json in args_rows(answer):
        sub = properties.get(name) if isinstance(properties, dict) else None
        label = next((text for v, text in choice_labels(sub) or [] if v == answer[name]), None)
        rows.append((name, label, False) if label is not None else (name, value, is_json))
    return rows


def decision_rows(pause: Pause) -> list[dict[str, Any]]:
    """What was decided on each action of an answered approval."""
    answer = pause.answer if isinstance(pause.answer, dict) else {}
    requests = (pause.prompt or {}).get("action_requests") or []
    rows = []
    for request, decision in zip(requests, answer.get("decisions") or [], strict=False):
        kind = decision.get("type")
        edited = (decision.get("edited_action") or {}).get("args")
        rows.append({
            "name": request.get("name"),
            "label": dict(Decision.Action.choices).get(kind, kind),
            "type": kind,
            "message": decision.get("message", ""),
            "args": args_rows(edited) if edited is not None else None,
            # An edit as changes against the proposal: amount 99.99 → 50.
            "changes": (hitl.args_changes(request.get("args"), edited)
                        if edited is not None else None),
        })
    return rows


def span(seconds: float) -> str:
    """A short duration for a crowded column: "40 s", "5 min", "3 h", "2 d"."""
    seconds = max(0, int(seconds))
    for unit, size in ((gettext_noop("%(n)d d"), 86400), (gettext_noop("%(n)d h"), 3600),
                       (gettext_noop("%(n)d min"), 60)):
        if seconds >= size:
            return _(unit) % {"n": seconds // size}
    return _("%(n)d s") % {"n": seconds}


def age_text(pause: Pause) -> str:
    """How long ago the pause was asked: "5 min"."""
    return span((timezone.now() - pause.created_at).total_seconds())


def expires_text(pause: Pause) -> str:
    """When a pending pause expires: "in 3 h", or "overdue"; "—" once it is closed."""
    if pause.status != PauseStatus.PENDING:
        return "—"
    left = (pause.expires_at - timezone.now()).total_seconds()
    return _("in %(span)s") % {"span": span(left)} if left > 0 else _("overdue")


def approvals_text(have: int, need: int, mine: bool) -> str:
    """Where a several-approver pause stands for this reviewer: "1 of 2 approvals", or,
    once they approved, "You approved; waiting for 1 more approval"."""
    if mine:
        more = max(need - have, 0)
        return ngettext("You approved; waiting for %(more)d more approval",
                        "You approved; waiting for %(more)d more approvals", more
                        ) % {"more": more}
    return ngettext("%(have)d of %(need)d approvals", "%(have)d of %(need)d approvals",
                    have) % {"have": have, "need": need}


def claim_text(pause: Pause, viewer: Any = None, now: Any = None) -> str:
    """Who is reviewing a pending pause, as its card and its list row say it ("" if
    nobody's claim holds); ``viewer``'s own claim reads as theirs."""
    holder = pause.claimant_at(now or timezone.now()) if pause.is_pending else None
    if holder is None:
        return ""
    if viewer is not None and holder.pk == viewer.pk:
        return _("You are reviewing it")
    return _("Being reviewed by %(who)s") % {"who": holder.get_username()}


# --- pieces of HTML -------------------------------------------------------------------

def json_block(value: Any) -> str:
    """A JSON value as a preformatted block ("—" for none)."""
    if value is None:
        return "—"
    return format_html('<pre class="symfonic-json">{}</pre>', pretty_json(value))


def time_field(field: str, description: Any) -> Callable[[Any, Any], str]:
    """A changelist column or read-only field that shows the datetime ``field`` as every
    page of the app shows a time (``datetimes.format_datetime``: ``2026-12-02 07:25:31
    UTC``), sorted by ``field``; Django's own rendering would say "Dec. 2, 2026, 7:25
    a.m." with no zone. Assign it on the admin: ``created = time_field("created_at", ...)``.
    """
    @admin.display(description=description, ordering=field)
    def show(model_admin: Any, obj: Any) -> str:
        value = getattr(obj, field)
        # A read-only field shows a None as "None": say "-" as the lists do.
        return model_admin.get_empty_value_display() if value is None else format_datetime(value)

    return show


def _field_shown(render: Callable[[Any], str], field: str, description: Any
                 ) -> Callable[[Any, Any], str]:
    @admin.display(description=description)
    def show(model_admin: Any, obj: Any) -> str:
        return render(getattr(obj, field))

    return show


def json_field(field: str, description: Any) -> Callable[[Any, Any], str]:
    """A read-only field that shows the JSON ``field`` as a block (``json_block``).
    Assign it on the admin: ``input_json = json_field("input", ...)``."""
    return _field_shown(json_block, field, description)


def link_field(field: str, description: Any) -> Callable[[Any, Any], str]:
    """A read-only field that links to the row ``field`` refers to (``admin_link``).
    Assign it on the admin: ``run_link = link_field("run", ...)``."""
    return _field_shown(admin_link, field, description)


def badge(status: str, label: str) -> str:
    """A status as a coloured badge (the class says which colour)."""
    return format_html('<span class="symfonic-status symfonic-status-{}">{}</span>', status, label)


def admin_link(obj: Any, text: str | None = None) -> str:
    """A link to ``obj``'s admin page ("—" for none)."""
    if obj is None:
        return "—"
    url = reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])
    return format_html('<a href="{}">{}</a>', url, text or str(obj))
