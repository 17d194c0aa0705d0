"""The reviewer's inbox: the pauses of their scopes in tabs (waiting first, oldest first),
each counted and paged as the lists are, whatever the number of rows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import BadRequest, PermissionDenied
from django.db.models import Count, Exists, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from ..datetimes import format_datetime
from ..models import Decision, Pause, PauseStatus
from .base import ReviewerAdmin
from .display import approvals_text, claim_text, edited_text, headline, span
from .pagination import BoundedCount, EstimatingPaginator, bounded_count

#: Selects a tab's pauses among the reviewer's (already narrowed to their scopes).
TabSelect = Callable[[QuerySet[Any], HttpRequest], QuerySet[Any]]


@dataclass(frozen=True)
class InboxTab:
    """One list of the reviewer's inbox: ``?show=<slug>``.

    Each tab is counted (``bounded_count``) on every inbox page and paged when
    shown, so ``select`` should be served by an index of the pause table.
    """

    slug: str
    label: str
    select: TabSelect
    #: Pending work is read oldest first (the longest waiting); the rest newest first.
    oldest_first: bool = False


def _in_status(status: str) -> TabSelect:
    def select(queryset: QuerySet[Any], request: HttpRequest) -> QuerySet[Any]:
        return queryset.filter(status=status)

    return select


#: The inbox's tabs by status, the reviewer's work first.
STATUS_TABS = (
    InboxTab("pending", gettext_noop("Waiting"), _in_status(PauseStatus.PENDING), oldest_first=True),
    InboxTab("answered", gettext_noop("Answered"), _in_status(PauseStatus.ANSWERED)),
    InboxTab("expired", gettext_noop("Expired"), _in_status(PauseStatus.EXPIRED)),
    InboxTab("cancelled", gettext_noop("Cancelled"), _in_status(PauseStatus.CANCELLED)),
)


def _claimed_by_me(queryset: QuerySet[Any], request: HttpRequest) -> QuerySet[Any]:
    # A claim that lapsed is nobody's: the tab shows what the reviewer holds now.
    return queryset.filter(status=PauseStatus.PENDING, claimed_by=request.user.pk,
                           claimed_until__gt=timezone.now())


CLAIMED_BY_ME = InboxTab("claimed", gettext_noop("Claimed by me"), _claimed_by_me,
                         oldest_first=True)
#: Rows on one inbox page.
INBOX_PER_PAGE = 50


def _moment(when: Any) -> dict[str, str]:
    """A time as the inbox shows it: ISO for machines, local with its zone for people."""
    return {"iso": when.isoformat(), "text": format_datetime(when)}


def _listed(tab: InboxTab, visible: QuerySet[Any], request: HttpRequest) -> QuerySet[Any]:
    """A tab's pauses in its order, with what each row shows: its run, who answered or
    claimed it, how many approved it and whether the reviewer did."""
    order = ("created_at", "pk") if tab.oldest_first else ("-created_at", "-pk")
    approved = (Decision.objects.filter(pause=OuterRef("pk"), action=Decision.Action.APPROVE)
                .order_by().values("pause").annotate(n=Count("pk")).values("n"))
    listed: QuerySet[Any] = (tab.select(visible, request).order_by(*order)
            .select_related("run", "answered_by", "claimed_by")
            .annotate(approvals_have=Coalesce(Subquery(approved), 0),
                      approved_by_me=Exists(Decision.objects.filter(
                          pause=OuterRef("pk"), action=Decision.Action.APPROVE,
                          actor=request.user.pk))))
    return listed


class PauseInbox(ReviewerAdmin):
    """The inbox page of the pause admin (``<pause list>/inbox/``)."""

    inbox_template = "admin/symfonic_django/pause/inbox.html"

    def inbox_tabs(self, request: HttpRequest) -> list[InboxTab]:
        """The inbox's lists: pending first, then the other statuses, then the
        reviewer's own (``personal_inbox_tabs``)."""
        return [*STATUS_TABS, *self.personal_inbox_tabs(request)]

    def personal_inbox_tabs(self, request: HttpRequest) -> list[InboxTab]:
        """Tabs of the reviewer's own work: the pending pauses they claimed.

        A project may add more by overriding this. "Awaiting my approval" and
        "decided by me" would each read pauses by a column no index leads with
        (every pending pause checked for the user's approval; ``answered_by``),
        which at a million pauses is a scan, not a free tab. A tab added here is
        counted and paged like the others: give it an index first, as "claimed
        by me" has (``symfonic_pause_claimed_idx``, claimed pending pauses only).
        """
        return [CLAIMED_BY_ME]

    def inbox_view(self, request: HttpRequest) -> TemplateResponse:
        """The reviewer's landing page: the pauses of their scopes, pending ones first and
        oldest first, each with its headline, tenant and time to expiry; a count per tab.

        The same scopes as the pause list (``get_queryset``); the same bounded counting
        (``bounded_count``) and paging; the same queries whatever the number of rows.
        """
        if not self.has_view_permission(request):
            raise PermissionDenied
        tabs = self.inbox_tabs(request)
        shown = next((tab for tab in tabs if tab.slug == request.GET.get("show", tabs[0].slug)),
                     None)
        if shown is None:
            raise BadRequest(_("The inbox has no such list."))
        visible = self.get_queryset(request)
        paginator = EstimatingPaginator(_listed(shown, visible, request), INBOX_PER_PAGE)
        page = paginator.get_page(request.GET.get("p"))
        counts = {tab.slug: (BoundedCount(paginator.count, paginator.count_is_estimate)
                             if tab is shown else bounded_count(tab.select(visible, request)))
                  for tab in tabs}
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "app_label": self.opts.app_label,
            "title": _("Inbox"),
            "subtitle": None,
            "tabs": [{"slug": tab.slug, "label": _(tab.label), "count": counts[tab.slug],
                      "current": tab is shown} for tab in tabs],
            "shown": shown,
            "page": page,
            "rows": [self._inbox_row(pause, request) for pause in page.object_list],
            "can_answer": self.has_answer_permission(request),
            # The pause list's bulk actions, offered on the lists of pending pauses.
            "bulk": (self.has_answer_permission(request) and shown.oldest_first
                     and bool(page.object_list)),
            "media": self.media,
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, self.inbox_template, context)

    def _inbox_row(self, pause: Pause, request: HttpRequest | None = None) -> dict[str, Any]:
        now = timezone.now()
        when, moment = _when(pause, now)
        have = int(pause.approvals_have)  # type: ignore[attr-defined]  # inbox_view's
        return {
            "pause": pause,
            "url": reverse("admin:symfonic_django_pause_change", args=[pause.pk]),
            "headline": headline(pause),
            "edited": edited_text(pause),
            "when": when,
            "moment": moment,
            "asked": span((now - pause.created_at).total_seconds()),
            "approvals": (approvals_text(have, pause.approvals_needed,
                                         bool(getattr(pause, "approved_by_me", False)))
                          if pause.approvals_needed > 1 and pause.is_pending else ""),
            "claim": claim_text(pause, request.user if request is not None else None, now),
        }


def _when(pause: Pause, now: Any) -> tuple[str, dict[str, str]]:
    """A row's time in words and as a moment: when a pending pause expires, or when and
    by whom a closed one was closed."""
    if pause.is_pending:
        left = (pause.expires_at - now).total_seconds()
        when = (_("expires in %(span)s") % {"span": span(left)} if left > 0
                else _("overdue: expiring now"))
        return when, _moment(pause.expires_at)
    done = pause.answered_at or pause.updated_at
    words = {"status": pause.get_status_display().lower(),
             "span": span((now - done).total_seconds())}
    if pause.answered_by is not None:
        when = _("%(status)s %(span)s ago by %(who)s") % {
            **words, "who": pause.answered_by.get_username()}
    else:
        when = _("%(status)s %(span)s ago") % words
    return when, _moment(done)
