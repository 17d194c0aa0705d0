"""The pauses: the list (its columns and search) and, from the modules beside this one,
the inbox, claims, the review page with its answer form, and bulk decisions."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import path
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, gettext_noop

from .. import hitl
from ..models import AnsweredVia, Pause
from .answering import PauseAnswering
from .base import with_uuid_search
from .bulk import BulkDecisions
from .claims import PauseClaims
from .display import age_text, badge, claim_text, edited_text, expires_text, headline, summarize
from .filters import ScopeFilter
from .inbox import PauseInbox

#: "alice, in the admin": where an answer came from, after who gave it.
ANSWERED_WHERE: dict[str, str] = {
    AnsweredVia.ADMIN: gettext_noop("%(who)s, in the admin"),
    AnsweredVia.API: gettext_noop("%(who)s, through the API"),
    AnsweredVia.TOKEN: gettext_noop("%(who)s, with a link's token"),
    AnsweredVia.PYTHON: gettext_noop("%(who)s, from code"),
    AnsweredVia.SYSTEM: gettext_noop("%(who)s, by the system"),
}


@admin.register(Pause)
class PauseAdmin(PauseAnswering, PauseInbox, PauseClaims, BulkDecisions):
    # The kind is written under the status (one column less: the list fits 1366 px).
    list_display = ("status_badge", "summary", "agent", "scope", "age", "expires_in",
                    "answered")
    list_display_links = ("summary",)
    list_filter = ("status", "kind", ScopeFilter)
    search_fields = ("search__text",)  # searched by search() below
    ordering = ("-created_at",)
    actions = ["approve_selected", "reject_selected"]

    # The columns read the pause, its run, its answerer and its claimant: one query for 5
    # rows or 500.
    list_select_related = ("run", "answered_by", "claimed_by")

    class Media:
        js = ("symfonic_django/review.js",)

    def get_urls(self) -> list[Any]:
        inbox = path("inbox/", self.admin_site.admin_view(self.inbox_view),
                     name=f"{self.opts.app_label}_{self.opts.model_name}_inbox")
        return [inbox, *self.claim_urls(), *super().get_urls()]

    @admin.display(description=gettext_lazy("status"), ordering="status")
    def status_badge(self, obj: Pause) -> str:
        return format_html('{}<br><span class="quiet symfonic-kind">{}</span>',
                           badge(obj.status, obj.get_status_display()),
                           obj.get_kind_display())

    @admin.display(description=gettext_lazy("action or question"))
    def summary(self, obj: Pause) -> str:
        """The headline (the agent's description), and the call below it when it differs."""
        text, call = headline(obj), summarize(obj)
        shown = text if call == text else format_html(
            '{}<br><span class="quiet symfonic-call">{}</span>', text, call)
        claim = claim_text(obj)
        if claim:
            shown = format_html('{}<br><span class="symfonic-claim-note">{}</span>', shown, claim)
        edited = edited_text(obj)
        return format_html('{}<br><span class="symfonic-edited">{}</span>', shown,
                           edited) if edited else shown

    @admin.display(description=gettext_lazy("agent"), ordering="run__agent")
    def agent(self, obj: Pause) -> str:
        return obj.run.agent

    @admin.display(description=gettext_lazy("scope"), ordering="scope_key")
    def scope(self, obj: Pause) -> str:
        return obj.scope_key

    @admin.display(description=gettext_lazy("age"), ordering="created_at")
    def age(self, obj: Pause) -> str:
        return age_text(obj)

    @admin.display(description=gettext_lazy("expires"), ordering="expires_at")
    def expires_in(self, obj: Pause) -> str:
        return expires_text(obj)

    @admin.display(description=gettext_lazy("answered by"), ordering="answered_at")
    def answered(self, obj: Pause) -> str:
        """Who answered and where: "alice, in the admin" (a channel, not a role)."""
        where = ANSWERED_WHERE.get(obj.answered_via)
        if obj.answered_by is not None:
            who = obj.answered_by.get_username()
            return _(where) % {"who": who} if where else who
        return obj.get_answered_via_display().lower() or "—"

    def search(self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
               ) -> tuple[QuerySet[Any], bool]:
        """The words of the pause (``PauseSearch.text``: the actions' names, descriptions
        and arguments, or the question; the session and thread ids), or a pasted id.

        The text is stored ``hitl.searchable`` (case-folded, punctuation dropped)
        and the term is made searchable the same way, so a case-sensitive
        ``LIKE '%term%'`` is a case- and punctuation-insensitive search that
        PostgreSQL's trigram index on the column answers (Django's ``icontains``
        would compare ``UPPER(...)``, which that index cannot serve). One search row
        per pause: the join adds no duplicate.
        """
        term = search_term.strip()
        words = hitl.searchable(term)
        found = queryset.filter(search__text__contains=words) if words else queryset
        return with_uuid_search(found, queryset, term,
                                ("pk", "run_id", "root_run_id", "continuation_id")), False
