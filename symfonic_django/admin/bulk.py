"""Deciding many pauses at once, and how every bulk action of the admin reports.

Like Django's ``delete_selected``: the action first answers with a page listing every
selected pause, its actions and their arguments; only the confirmation (``post=yes``,
with its reason or comment) decides, each pause through the state machine on its own.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from .. import pauses
from ..exceptions import SymfonicError
from ..forms import BulkDecisionForm
from ..models import AnsweredVia, Decision, Pause, PauseKind, Run
from ..viewer import viewer_url
from .base import ReviewerAdmin, visible_scopes
from .display import args_rows, headline

#: The most pauses one bulk decision takes (its confirmation page lists each of them).
BULK_LIMIT = 100


def report_bulk(request: HttpRequest, done_text: str, refusal: str, done: int,
                refused: list[tuple[str, str]]) -> None:
    """Say how many rows a bulk action changed, and each refusal in words, as a warning
    of its own (a list inside one message took the message list's success icon).

    ``done_text`` is an ``ngettext`` sentence with ``%(count)d``; ``refusal`` one with
    ``%(label)s`` and ``%(detail)s``: whole sentences, so that a translation can order them.
    """
    if done:
        messages.success(request, done_text % {"count": done})
    for label, detail in refused:
        messages.warning(request, refusal % {"label": label, "detail": detail})


def _run_url(run: Run) -> str:
    """Where a reviewer follows a run: the live viewer, else its admin page."""
    return viewer_url(run) or reverse("admin:symfonic_django_run_change", args=[run.pk])


def _title(decision: str, acting: int, total: int) -> str:
    """The confirmation page's question; it counts the pauses it can decide."""
    if acting == total:
        title = (ngettext("Approve %(count)d pause?", "Approve %(count)d pauses?", total)
                 if decision == "approve" else
                 ngettext("Reject %(count)d pause?", "Reject %(count)d pauses?", total))
    else:
        title = (ngettext("Approve %(count)d of the %(total)d selected pauses?",
                          "Approve %(count)d of the %(total)d selected pauses?", acting)
                 if decision == "approve" else
                 ngettext("Reject %(count)d of the %(total)d selected pauses?",
                          "Reject %(count)d of the %(total)d selected pauses?", acting))
    return title % {"count": acting, "total": total}


class BulkDecisions(ReviewerAdmin):
    """The pause list's actions "Approve selected pauses…" and "Reject selected pauses…"."""

    bulk_confirmation_template = "admin/symfonic_django/pause/bulk_confirmation.html"

    @admin.action(permissions=["answer"], description=gettext_lazy("Approve selected pauses…"))
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[Any]
                         ) -> TemplateResponse | None:
        return self._bulk(request, queryset, "approve")

    @admin.action(permissions=["answer"], description=gettext_lazy("Reject selected pauses…"))
    def reject_selected(self, request: HttpRequest, queryset: QuerySet[Any]
                        ) -> TemplateResponse | None:
        return self._bulk(request, queryset, "reject")

    def _bulk(self, request: HttpRequest, queryset: QuerySet[Any], decision: str
              ) -> TemplateResponse | None:
        """The confirmation page, or, once confirmed, the decision on each pause."""
        selected = list(queryset.select_related("run").order_by("created_at", "pk")
                        [:BULK_LIMIT + 1])
        if len(selected) > BULK_LIMIT:
            messages.error(request, (
                _("A bulk decision takes at most %(limit)d pauses; nothing was approved. "
                  "Select fewer.") if decision == "approve" else
                _("A bulk decision takes at most %(limit)d pauses; nothing was rejected. "
                  "Select fewer.")) % {"limit": BULK_LIMIT})
            return None
        confirmed = request.POST.get("post") == "yes"
        form = BulkDecisionForm(decision, data=request.POST if confirmed else None)
        if confirmed and form.is_valid():
            self._decide_each(request, selected, decision, form.cleaned_data["reason"])
            return None
        now = timezone.now()
        items = [self._bulk_item(pause, decision, now, request) for pause in selected]
        # The title and the button count the pauses it can decide; a note says why not.
        acting = sum(1 for item in items if not item["note"] or item["counts"])
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "app_label": self.opts.app_label,
            "title": _title(decision, acting, len(selected)),
            "acting": acting,
            "subtitle": None,
            "decision": decision,
            "verb": _("approved") if decision == "approve" else _("rejected"),
            "action_name": f"{decision}_selected",
            "form": form,
            "items": items,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
            "changelist_url": request.get_full_path(),
            "media": self.media,
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, self.bulk_confirmation_template, context)

    def _bulk_item(self, pause: Pause, decision: str, now: Any,
                   request: HttpRequest | None = None) -> dict[str, Any]:
        """One pause on the confirmation page: its actions, and what will happen to it
        (``counts``: a note that still counts it among the decided)."""
        is_approval = pause.kind == PauseKind.APPROVAL and isinstance(pause.prompt, dict)
        requests = (pause.prompt.get("action_requests") or []) if is_approval else []
        note, counts = "", False
        if not pause.is_pending:
            note = _("It is %(status)s: it will be left as it is.") % {
                "status": pause.get_status_display().lower()}
        elif pause.expires_at <= now:
            note = _("It is past its expiry: it will be left to expire.")
        elif not is_approval:
            note = _("It is a question: answer it on its own page. It will be left as it is.")
        elif decision == "approve" and pause.approvals_needed > 1:
            mine = request is not None and Decision.objects.filter(
                pause=pause, action=Decision.Action.APPROVE, actor=request.user.pk).exists()
            note = (_("You already approved it: it waits for another approver. It will be "
                      "left as it is.") if mine else
                    _("It needs %(need)d approvers: yours counts as one of them.") % {
                        "need": pause.approvals_needed})
            counts = not mine
        return {
            "counts": counts,
            "pause": pause,
            "url": reverse("admin:symfonic_django_pause_change", args=[pause.pk]),
            "headline": headline(pause),
            "actions": [{"name": r.get("name"), "description": r.get("description", ""),
                         "args": args_rows(r.get("args", {}))} for r in requests],
            "note": note,
        }

    def _decide_each(self, request: HttpRequest, selected: list[Pause], decision: str,
                     reason: str) -> None:
        """Each pause through ``pauses.approve`` / ``pauses.reject``; the outcome in words:
        the runs that started (linked), the approvals that wait for more, each refusal."""
        transition = pauses.approve if decision == "approve" else pauses.reject
        done, refused, waiting = 0, [], []
        started: dict[Any, Run] = {}
        for pause in selected:
            try:
                resolution = transition(pause.pk, actor=request.user, via=AnsweredVia.ADMIN,
                                        comment=reason, visible=visible_scopes(request))
            except SymfonicError as exc:
                refused.append((f"{headline(pause)} ({str(pause.pk)[:8]})", exc.detail))
                continue
            done += 1
            if resolution.approvals is not None:
                approvals = resolution.approvals
                waiting.append(_("%(pause)s: %(have)d of %(need)d approvals") % {
                    "pause": headline(pause), "have": approvals.have, "need": approvals.need})
            elif resolution.continuation is not None:
                started[resolution.continuation.pk] = resolution.continuation
            else:
                waiting.append(_("%(pause)s: its run waits for its other pauses")
                               % {"pause": headline(pause)})
        if decision == "approve":
            report_bulk(request, ngettext("Approved %(count)d pause.", "Approved %(count)d pauses.",
                                          done),
                        _("%(label)s was not approved: %(detail)s"), done, refused)
        else:
            report_bulk(request, ngettext("Rejected %(count)d pause.", "Rejected %(count)d pauses.",
                                          done),
                        _("%(label)s was not rejected: %(detail)s"), done, refused)
        _report_outcomes(request, started, waiting)


def _report_outcomes(request: HttpRequest, started: dict[Any, Run], waiting: list[str]) -> None:
    """The runs that continue (linked), and the decisions recorded that wait for more."""
    if started:
        links = format_html_join(", ", '<a href="{}">{}</a>',
                                 ((_run_url(run), _("run %(id)s") % {"id": str(run.pk)[:8]})
                                  for run in started.values()))
        messages.info(request, format_html(
            ngettext("{} run continues: {}.", "{} runs continue: {}.", len(started)),
            len(started), links))
    if waiting:
        messages.info(request, _("Recorded, not continued yet: %(list)s.")
                      % {"list": "; ".join(waiting)})
