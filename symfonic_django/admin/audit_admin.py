"""The audit, read-only: each run's events, and each decision on a pause (who, how, with
what edit)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html_join
from django.utils.text import Truncator
from django.utils.translation import gettext_lazy

from .. import hitl
from ..models import Decision, TurnEvent
from ..scopes import VIEW_PAUSE_PERMISSION, VIEW_RUN_PERMISSION
from .base import ScopedReadOnlyAdmin
from .display import SUMMARY_CHARS, admin_link, json_field, link_field, summarize, time_field
from .filters import EventTypeFilter, ScopeFilter
from .transcript import event_summary


@admin.register(TurnEvent)
class TurnEventAdmin(ScopedReadOnlyAdmin):
    scope_field = "scope_key"  # the run's, copied onto the event
    read_permission = VIEW_RUN_PERMISSION  # a run's events are read as the run is
    list_display = ("run_short", "seq", "type", "summary", "created")
    list_filter = (EventTypeFilter, ScopeFilter)
    # Newest first by the primary key's index (the model's own order, by run, sorts
    # every event by its run's date).
    ordering = ("-pk",)
    fields = ("run_link", "seq", "type", "data_json", "created")
    readonly_fields = ("run_link", "data_json", "created")
    created = time_field("created_at", gettext_lazy("created at"))
    run_link = link_field("run", gettext_lazy("run"))
    data_json = json_field("data", gettext_lazy("data"))

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        # The listed rows' runs in one query: joined, a deep page read every skipped
        # event's run.
        return super().get_queryset(request).prefetch_related("run")

    @admin.display(description=gettext_lazy("run"), ordering="run")
    def run_short(self, obj: TurnEvent) -> str:
        return f"{obj.run.agent} {str(obj.run_id)[:8]}"

    @admin.display(description=gettext_lazy("data"))
    def summary(self, obj: TurnEvent) -> str:
        return Truncator(event_summary(obj)).chars(SUMMARY_CHARS)



@admin.register(Decision)
class DecisionAdmin(ScopedReadOnlyAdmin):
    scope_field = "scope_key"  # the pause's, copied onto the decision
    read_permission = VIEW_PAUSE_PERMISSION  # a pause's decisions are read as the pause is
    list_display = ("created", "action", "who", "via", "pause_summary")
    ordering = ("-pk",)  # newest first, by the primary key's index
    list_filter = ("action", "via", ScopeFilter)
    fields = ("pause_link", "action", "who", "via", "comment", "edits", "answer_json",
              "created")
    readonly_fields = ("pause_link", "who", "edits", "answer_json", "created")
    created = time_field("created_at", gettext_lazy("created at"))
    answer_json = json_field("answer", gettext_lazy("answer"))

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        # Fetched for the listed rows only, in one query each: joined, a deep page read
        # every skipped decision's pause, prompt and all.
        return super().get_queryset(request).prefetch_related("pause", "actor")

    @admin.display(description=gettext_lazy("who"), ordering="actor_label")
    def who(self, obj: Decision) -> str:
        return obj.actor.get_username() if obj.actor is not None else obj.actor_label

    @admin.display(description=gettext_lazy("pause"))
    def pause_summary(self, obj: Decision) -> str:
        return summarize(obj.pause)

    @admin.display(description=gettext_lazy("pause"))
    def pause_link(self, obj: Decision) -> str:
        return admin_link(obj.pause, summarize(obj.pause))

    @admin.display(description=gettext_lazy("edited"))
    def edits(self, obj: Decision) -> str:
        """An edit as changes against what was proposed: ``amount: 99.99 → 50``."""
        if obj.action != Decision.Action.EDIT:
            return "—"
        return format_html_join("", '<p class="symfonic-audit-diff"><strong>{}</strong>{}</p>', (
            (name, format_html_join("", "<br>{}: <del>{}</del> → <ins>{}</ins>", changes)
             if changes else ": no argument changed")
            for name, changes in hitl.edit_changes(obj.pause.prompt, obj.answer)))
