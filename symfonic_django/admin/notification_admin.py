"""The notifications: each email and webhook, its attempts, and a redeliver action
(audited)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from .. import notifications
from ..datetimes import format_datetime
from ..exceptions import SymfonicError
from ..models import AnsweredVia, NotificationDelivery
from .base import ScopedReadOnlyAdmin, with_uuid_search
from .bulk import report_bulk
from .display import SUMMARY_CHARS, badge, json_field, link_field, time_field
from .filters import FixedChoicesFilter, ScopeFilter

#: Operators with it may deliver a notification again.
REDELIVER_PERMISSION = "symfonic_django.redeliver_notification"
#: The badge each delivery status borrows from the runs' and pauses' statuses.
DELIVERY_BADGES = {"pending": "pending", "delivered": "completed", "failed": "failed"}


class NotificationEventFilter(FixedChoicesFilter):
    title = gettext_lazy("event")
    field = "event_type"
    parameter_name = "event_type__exact"

    def values(self) -> list[str]:
        return list(notifications.EVENT_TYPES)


@admin.register(NotificationDelivery)
class NotificationDeliveryAdmin(ScopedReadOnlyAdmin):
    """Each email and webhook, its attempts, and a redeliver action (audited)."""

    list_display = ("created", "event_type", "channel", "target", "status_badge",
                    "attempts", "next_attempt", "error_summary")
    list_filter = ("status", "channel", NotificationEventFilter, ScopeFilter)
    search_fields = ("target",)  # searched by search() below
    ordering = ("-created_at",)
    fields = ("id", "event_type", "channel", "target", "status_badge", "scope_key", "attempts",
              "max_attempts", "next_attempt", "delivered", "last_error", "run_link",
              "pause_link", "payload_json", "attempts_table", "redeliveries_table",
              "created")
    readonly_fields = ("status_badge", "run_link", "pause_link", "payload_json",
                       "attempts_table", "redeliveries_table", "next_attempt", "delivered",
                       "created")
    actions = ["redeliver_selected"]
    created = time_field("created_at", gettext_lazy("created at"))
    next_attempt = time_field("next_attempt_at", gettext_lazy("next attempt at"))
    delivered = time_field("delivered_at", gettext_lazy("delivered at"))
    run_link = link_field("run", gettext_lazy("run"))
    pause_link = link_field("pause", gettext_lazy("pause"))
    payload_json = json_field("payload", gettext_lazy("payload"))

    def has_redeliver_permission(self, request: HttpRequest) -> bool:
        """The ``symfonic_django.redeliver_notification`` permission (scope: the queryset)."""
        return request.user.has_perm(REDELIVER_PERMISSION)

    @admin.action(permissions=["redeliver"],
                  description=gettext_lazy("Redeliver selected notifications"))
    def redeliver_selected(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        """Each delivered or failed notification is attempted once more; pending ones are
        listed as refused."""
        done, refused = 0, []
        for delivery in queryset.order_by("created_at"):
            try:
                notifications.redeliver(delivery.pk, actor=request.user, via=AnsweredVia.ADMIN)
            except SymfonicError as exc:
                refused.append((str(delivery), exc.detail))
            else:
                done += 1
        report_bulk(request, ngettext("Redelivered %(count)d notification.",
                                      "Redelivered %(count)d notifications.", done),
                    _("%(label)s was not redelivered: %(detail)s"), done, refused)

    def search(self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
               ) -> tuple[QuerySet[Any], bool]:
        """A target exactly (an address, an endpoint's name), or a pasted delivery, run or
        pause id: each indexed or exact, never a scan of every delivery's text."""
        term = search_term.strip()
        found = queryset.filter(target=term) if term else queryset
        return with_uuid_search(found, queryset, term, ("pk", "run_id", "pause_id")), False

    @admin.display(description=gettext_lazy("status"), ordering="status")
    def status_badge(self, obj: NotificationDelivery) -> str:
        return badge(DELIVERY_BADGES.get(obj.status, obj.status), obj.get_status_display())

    @admin.display(description=gettext_lazy("last error"))
    def error_summary(self, obj: NotificationDelivery) -> str:
        return Truncator(obj.last_error).chars(SUMMARY_CHARS) if obj.last_error else "—"

    @admin.display(description=gettext_lazy("attempts made"))
    def attempts_table(self, obj: NotificationDelivery) -> str:
        rows = [(a.number, format_datetime(a.started_at),
                 format_datetime(a.finished_at) or _("no outcome (its worker stopped)"),
                 _("ok") if a.ok else _("failed"), a.response_status or "—", a.error or "—")
                for a in obj.attempt_rows.order_by("number")]
        if not rows:
            return "—"
        return format_html(
            "<table><thead><tr><th>#</th><th>{}</th><th>{}</th><th>{}</th>"
            "<th>HTTP</th><th>{}</th></tr></thead><tbody>{}</tbody></table>",
            _("started"), _("finished"), _("outcome"), _("error"),
            format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                                 "<td>{}</td></tr>", rows))

    @admin.display(description=gettext_lazy("redelivered by"))
    def redeliveries_table(self, obj: NotificationDelivery) -> str:
        rows = [(r.actor_label, format_datetime(r.created_at), r.get_previous_status_display(),
                 r.attempts_before) for r in obj.redeliveries.order_by("created_at")]
        if not rows:
            return "—"
        return format_html_join(
            "", "<p>{}</p>", ((_("%(who)s on %(when)s (it was %(status)s after %(n)d attempts)")
                              % {"who": who, "when": when, "status": status, "n": n},)
                             for who, when, status, n in rows))
