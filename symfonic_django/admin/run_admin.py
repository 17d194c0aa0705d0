"""The runs: a list of the reviewer's scopes, each run's lineage, input, outcome, events
and pauses; operators with the permission send failed runs back to the queue."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Count, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from .. import runs
from ..exceptions import SymfonicError
from ..models import AnsweredVia, Pause, PauseStatus, Run, RunStatus
from ..scopes import VIEW_PAUSE_PERMISSION
from ..viewer import viewer_url
from .base import ScopedReadOnlyAdmin, readable_scopes, with_uuid_search
from .bulk import report_bulk
from .display import admin_link, badge, json_field, link_field, summarize, time_field
from .filters import AgentFilter, ScopeFilter
from .transcript import events_table

#: Operators with it may send failed runs back to the queue.
RETRY_PERMISSION = "symfonic_django.retry_run"


@admin.register(Run)
class RunAdmin(ScopedReadOnlyAdmin):
    change_form_template = "admin/symfonic_django/run/change_form.html"
    list_display = ("short_id", "agent", "status_badge", "scope_key", "pending_pauses",
                    "attempts", "created")
    list_display_links = ("short_id",)
    list_filter = ("status", AgentFilter, ScopeFilter)
    search_fields = ("session_id",)  # searched by search() below
    fieldsets = (
        (None, {"fields": ("id", "agent", "status_badge", "scope_key", "session_id",
                           "thread_id")}),
        (gettext_lazy("Lineage"), {"fields": ("root_link", "parent_link", "resumed_from_link")}),
        (gettext_lazy("Input and outcome"), {"fields": ("input_json", "output_json", "error_json")}),
        (gettext_lazy("Worker"), {"fields": ("attempts", "epoch", "worker", "lease", "created",
                                             "started", "finished")}),
    )
    readonly_fields = ("status_badge", "root_link", "parent_link", "resumed_from_link",
                       "input_json", "output_json", "error_json", "lease", "created", "started",
                       "finished")
    actions = ["retry_selected"]
    created = time_field("created_at", gettext_lazy("created at"))
    started = time_field("started_at", gettext_lazy("started at"))
    finished = time_field("finished_at", gettext_lazy("finished at"))
    lease = time_field("lease_until", gettext_lazy("lease until"))
    parent_link = link_field("parent", gettext_lazy("parent run"))
    resumed_from_link = link_field("resumed_from", gettext_lazy("resumed from pause"))
    input_json = json_field("input", gettext_lazy("input"))
    output_json = json_field("output", gettext_lazy("output"))
    error_json = json_field("error", gettext_lazy("error"))

    def has_retry_permission(self, request: HttpRequest) -> bool:
        """The ``symfonic_django.retry_run`` permission (scope is narrowed by the queryset)."""
        return request.user.has_perm(RETRY_PERMISSION)

    @admin.action(permissions=["retry"], description=gettext_lazy("Retry selected failed runs"))
    def retry_selected(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        """Each failed run goes back to the queue (audited); any other is listed as refused."""
        done, refused = 0, []
        for run in queryset.order_by("created_at"):
            try:
                runs.retry(run.pk, actor=request.user, via=AnsweredVia.ADMIN)
            except SymfonicError as exc:
                refused.append((f"{run.agent} {str(run.pk)[:8]}", exc.detail))
            else:
                done += 1
        report_bulk(request, ngettext("Retried %(count)d run.", "Retried %(count)d runs.", done),
                    _("%(label)s was not retried: %(detail)s"), done, refused)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        # A subquery per listed run, not a GROUP BY over every run before the page is cut.
        pending = (Pause.objects.filter(run=OuterRef("pk"), status=PauseStatus.PENDING)
                   .order_by().values("run").annotate(n=Count("pk")).values("n"))
        # What came of a paused run: its last closed pause that has a continuation.
        resumed = (Pause.objects.filter(run=OuterRef("pk"), continuation__isnull=False)
                   .order_by("-answered_at", "-pk"))
        listed: QuerySet[Any] = super().get_queryset(request).annotate(
            pending_count=Coalesce(Subquery(pending), 0),
            resumed_status=Subquery(resumed.values("status")[:1]),
            resumed_by=Subquery(resumed.values("continuation_id")[:1]),
            resumed_by_status=Subquery(resumed.values("continuation__status")[:1]))
        return listed

    def search(self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
               ) -> tuple[QuerySet[Any], bool]:
        """A pasted session, thread or run id, or a scope key: each exactly, each indexed.

        Runs are looked up by their ids, not by words (a run's words are its
        pauses', which the pause list searches); a substring match over every
        run read the whole table. The agent has its filter.
        """
        term = search_term.strip()
        found = (queryset.filter(Q(session_id=term) | Q(thread_id=term) | Q(scope_key=term))
                 if term else queryset)
        # No joins, so no duplicate rows.
        return with_uuid_search(found, queryset, term, ("pk", "root_id", "parent_id")), False

    @admin.display(description=gettext_lazy("run"), ordering="created_at")
    def short_id(self, obj: Run) -> str:
        return str(obj.pk)[:8]

    @admin.display(description=gettext_lazy("status"), ordering="status")
    def status_badge(self, obj: Run) -> str:
        """Its status; a paused run whose pause was closed says what came of it:
        "answered → continued in run 9aa9c880, completed"."""
        shown = badge(obj.status, obj.get_status_display())
        continuation = getattr(obj, "resumed_by", None)
        if obj.status != RunStatus.PAUSED or continuation is None:
            return shown
        words = _("%(pause)s → continued in run %(run)s, %(status)s") % {
            "pause": PauseStatus(obj.resumed_status).label.lower(),  # type: ignore[attr-defined]
            "run": str(continuation)[:8],
            "status": RunStatus(obj.resumed_by_status).label.lower()}  # type: ignore[attr-defined]
        url = reverse("admin:symfonic_django_run_change", args=[continuation])
        return format_html('{}<br><a class="quiet symfonic-resumed" href="{}">{}</a>', shown, url,
                           words)

    @admin.display(description=gettext_lazy("pending pauses"), ordering="pending_count")
    def pending_pauses(self, obj: Run) -> int:
        return int(obj.pending_count)  # type: ignore[attr-defined]  # get_queryset's

    @admin.display(description=gettext_lazy("root run"))
    def root_link(self, obj: Run) -> str:
        return _("this run") if obj.root_id in (None, obj.pk) else admin_link(obj.root)

    def render_change_form(self, request: HttpRequest, context: dict[str, Any], add: bool = False,
                           change: bool = False, form_url: str = "", obj: Any = None
                           ) -> HttpResponse:
        if obj is not None:
            context["events"] = events_table(obj)
            context["run_pauses"] = [
                (p, summarize(p)) for p in
                Pause.objects.filter(run=obj).in_scopes(
                    readable_scopes(request, VIEW_PAUSE_PERMISSION))
                .select_related("answered_by").order_by("created_at")]
            context["viewer_url"] = viewer_url(obj)
        return super().render_change_form(request, context, add, change, form_url, obj)
