"""Admin registrations. Machine-written rows are read-only here; answers go
through the pause state machine (the reviewer UI grows in a later change)."""

from __future__ import annotations

from django.contrib import admin

from .models import Decision, Pause, Run, TurnEvent


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = ("id", "agent", "status", "scope_key", "attempts", "created_at")
    list_filter = ("status", "agent")
    search_fields = ("id", "scope_key", "session_id", "thread_id")


@admin.register(Pause)
class PauseAdmin(ReadOnlyAdmin):
    list_display = ("id", "kind", "status", "scope_key", "created_at", "expires_at",
                    "answered_by")
    list_filter = ("status", "kind")
    search_fields = ("id", "scope_key")
    list_select_related = ("answered_by",)


@admin.register(TurnEvent)
class TurnEventAdmin(ReadOnlyAdmin):
    list_display = ("run", "seq", "type", "created_at")
    list_filter = ("type",)


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    list_display = ("pause", "action", "actor_label", "via", "created_at")
    list_filter = ("action", "via")
