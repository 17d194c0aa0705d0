"""The reviewer UI in the Django admin.

A reviewer sees only the scopes ``REVIEWER_SCOPES`` grants: every queryset
here is narrowed to them, and any other object is a real 404 (not the admin's
usual redirect with a message), so an id from another tenant reveals nothing.

Runs, events, pauses and decisions are machine-written, so they are read-only
rows. A pause is answered on its own page through ``pauses.answer_pause``,
or in bulk through ``pauses.approve`` / ``pauses.reject``; the admin never
writes a status itself, and shows a refusal as the exception's words.

No input is a 500 (docs/design.md section 6): the answer forms refuse what the database
cannot store (``forms``), the lists filter only by the filters they offer, and
a NUL in a filter or a search, or an action's id that is not an id, is a 400.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import BadRequest, PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db import connections, router
from django.db.models import Count, Exists, Field, Model, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.functional import cached_property
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, gettext_noop, ngettext

from . import hitl, notifications, pauses, pg, runs
from .conf import settings
from .datetimes import format_datetime
from .events import EVENT_TYPES
from .exceptions import NotFound, SymfonicError
from .forms import BulkDecisionForm, answer_form_for, choice_labels, decision_label, pretty_json
from .hitl import review_config
from .models import (
    AnsweredVia,
    Decision,
    NotificationDelivery,
    Pause,
    PauseKind,
    PauseStatus,
    Run,
    RunStatus,
    TurnEvent,
)
from .scopes import (
    ALL_SCOPES,
    VIEW_PAUSE_PERMISSION,
    VIEW_RUN_PERMISSION,
    may_answer,
    readable_scope_keys,
    reviewer_scope_keys,
)
from .viewer import viewer_url

if TYPE_CHECKING:
    ModelAdminBase = admin.ModelAdmin[Any]
    PaginatorBase = Paginator[Any]
else:  # neither class takes type arguments at runtime
    ModelAdminBase = admin.ModelAdmin
    PaginatorBase = Paginator

#: The pause and run pages show at most this many events of a run.
EVENTS_SHOWN = 200
SUMMARY_CHARS = 90
#: Up to this many rows a changelist counts exactly; beyond, it shows PostgreSQL's estimate.
#: Its pages also stop this deep (10 pages of 100): past it, a reviewer filters or searches.
#: Counting 1,001 rows, or skipping 900 to a page, stays a few milliseconds at any size.
EXACT_COUNT_UP_TO = 1_000

#: Operators with it may send failed runs back to the queue.
RETRY_PERMISSION = "symfonic_django.retry_run"


def visible_scopes(request: HttpRequest) -> Any:
    """The scope keys ``request.user`` may review (or ``ALL_SCOPES``), once per request."""
    cached = getattr(request, "_symfonic_scope_keys", None)
    if cached is None:
        cached = reviewer_scope_keys(request.user)
        request._symfonic_scope_keys = cached  # type: ignore[attr-defined]
    return cached


def readable_scopes(request: HttpRequest, permission: str) -> Any:
    """The scope keys whose rows ``permission`` lets ``request.user`` read
    (``scopes.readable_scope_keys``), once per request and permission."""
    cached: dict[str, Any] | None = getattr(request, "_symfonic_readable_scopes", None)
    if cached is None:
        cached = {}
        request._symfonic_readable_scopes = cached  # type: ignore[attr-defined]
    if permission not in cached:
        cached[permission] = readable_scope_keys(request.user, permission)
    return cached[permission]


# --- what a pause says, in a line and in a table --------------------------------

def _scalar(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def summarize(pause: Pause) -> str:
    """One line: the proposed action(s) with their arguments, or the question."""
    if pause.kind == PauseKind.APPROVAL and isinstance(pause.prompt, dict):
        text = "; ".join(call_text(r) for r in pause.prompt.get("action_requests") or [])
    else:
        text = hitl.question_text(pause.prompt)
    # Truncator normalizes and walks the text; most summaries are short enough as they are.
    return text if len(text) <= SUMMARY_CHARS else Truncator(text).chars(SUMMARY_CHARS)


#: A headline longer than this is cut (the page shows it whole).
HEADLINE_CHARS = 160


def call_text(request: Any) -> str:
    """One action request as a call: ``refund(order_id=A-1, amount=99.99)``."""
    request = request if isinstance(request, dict) else {}
    args = request.get("args")
    listed = (", ".join(f"{k}={_scalar(v)}" for k, v in args.items())
              if isinstance(args, dict) else _scalar(args))
    return f"{request.get('name')}({listed})"


def headline(pause: Pause) -> str:
    """What a reviewer reads first: the agent's description of the (first) proposed
    action, or its call when it has none, or the question's words."""
    if pause.kind == PauseKind.APPROVAL and isinstance(pause.prompt, dict):
        requests = [r for r in pause.prompt.get("action_requests") or [] if isinstance(r, dict)]
        first = requests[0] if requests else {}
        description = first.get("description")
        text = description if isinstance(description, str) and description else call_text(first)
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
        return [("", _scalar(args), True)]
    return [(str(k), _scalar(v), not isinstance(v, str)) for k, v in args.items()]


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


def span(seconds: float) -> str:
    """A short duration for a crowded column: "40 s", "5 min", "3 h", "2 d"."""
    seconds = max(0, int(seconds))
    for unit, size in ((gettext_noop("%(n)d d"), 86400), (gettext_noop("%(n)d h"), 3600),
                       (gettext_noop("%(n)d min"), 60)):
        if seconds >= size:
            return _(unit) % {"n": seconds // size}
    return _("%(n)d s") % {"n": seconds}


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


def event_summary(event: TurnEvent) -> str:
    data = event.data if isinstance(event.data, dict) else {}
    if "text" in data:
        return str(data["text"])
    if event.type.startswith("tool."):
        text = f"{data.get('name')}({pretty_json(data.get('args'))})"
        if "result" in data:
            text += f" → {json.dumps(data['result'], ensure_ascii=False, default=str)}"
        return Truncator(text).chars(300)
    return Truncator(json.dumps(data, ensure_ascii=False, default=str)).chars(300)


def transcript(events: list[TurnEvent]) -> list[dict[str, Any]]:
    """A run's events as a person reads them: each message as its text (its deltas
    joined), each tool call as one card with its arguments and result, and a note
    where the agent asked for a decision or a question, or the turn failed."""
    items: list[dict[str, Any]] = []
    written: list[str] = []  # the deltas of the message being written
    cards: dict[str, dict[str, Any]] = {}

    def end_message(last: str = "") -> None:
        text = "".join(written)
        # A completed message repeats its deltas, or (as the example's agent does)
        # adds its last words to them.
        text = last if last.startswith(text) else text + last
        written.clear()
        if text.strip():
            items.append({"kind": "message", "text": text})

    for event in events:
        data = event.data if isinstance(event.data, dict) else {}
        if event.type == "message.delta":
            written.append(str(data.get("text", "")))
        elif event.type == "message.completed":
            end_message(str(data.get("text", "")))
        elif event.type in ("tool.started", "tool.completed"):
            end_message()
            key = str(data.get("tool_call_id") or f"seq-{event.seq}")
            card = cards.get(key)
            if card is None:
                card = cards[key] = {"kind": "tool", "name": str(data.get("name", "")),
                                     "args": args_rows(data.get("args", {})), "result": None}
                items.append(card)
            if event.type == "tool.completed":
                card["result"] = Truncator(pretty_json(data.get("result"))).chars(2000)
                # An error in place of a result: a rejected call, or a tool that raised.
                card["failed"] = data.get("status") == "error"
        elif event.type == "pause.requested":
            end_message()
            items.append({"kind": "note", "text": (
                _("The agent asked a question.") if data.get("kind") == PauseKind.QUESTION
                else _("The agent asked for a decision."))})
        elif event.type == "turn.failed":
            end_message()
            reason = data.get("message") or data.get("code") or _("no reason given")
            items.append({"kind": "note",
                          "text": _("The turn failed: %(reason)s.") % {"reason": reason}})
    end_message()
    return items


def _events_table(run: Run | None) -> dict[str, Any] | None:
    """The first ``EVENTS_SHOWN`` events of ``run`` (one bounded read), as rows and as a
    transcript; ``total`` counts them all only when there are more."""
    if run is None:
        return None
    events = list(TurnEvent.objects.filter(run=run).order_by("seq")[:EVENTS_SHOWN])
    total = len(events)
    if total == EVENTS_SHOWN:
        total = TurnEvent.objects.filter(run=run).count()
    return {"run": run, "rows": [(e, event_summary(e)) for e in events], "total": total,
            "truncated": total > len(events), "transcript": transcript(events)}


def outcomes(pause: Pause, action: dict[str, Any], allowed: list[str]
             ) -> list[tuple[str, str, str]]:
    """``(decision, label, line)`` per allowed decision on ``action``: the line says
    what choosing it will do."""
    name, call = action.get("name"), call_text(action)
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


# --- shared behaviour ---------------------------------------------------------

def scopes_in_use(model: type[Model]) -> list[str]:
    """Every scope key in ``model``'s (indexed) ``scope_key`` column, sorted, in one query."""
    if connections[router.db_for_read(model)].vendor == "postgresql":
        return pg.distinct_values(model, "scope_key")
    return list(model._default_manager.order_by("scope_key")
                .values_list("scope_key", flat=True).distinct())


class ScopeFilter(admin.SimpleListFilter):
    title = gettext_lazy("scope")
    parameter_name = "scope"

    def __init__(self, request: HttpRequest, params: Any, model: Any, model_admin: Any) -> None:
        self.scope_field = model_admin.scope_field
        self.scope_model = model
        super().__init__(request, params, model, model_admin)

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        keys = visible_scopes(request)
        if keys == ALL_SCOPES:
            # Every scope in use, hopping through the index of the column the filter
            # applies to (pg.distinct_values) rather than reading the table.
            keys = scopes_in_use(self.scope_model)
        return [(k, k) for k in sorted(keys)]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value():
            return queryset.filter(**{self.scope_field: self.value()})
        return queryset


class FixedChoicesFilter(admin.SimpleListFilter):
    """A filter by one of a fixed list of values.

    The admin's default filter for a plain column lists its values with a
    ``SELECT DISTINCT`` over the whole table, which reads every row of a large
    one (every event, every run); the app knows the values instead. A value
    not in the list matches nothing, as with Django's own filters, and is never
    handed to the database. The query parameter is Django's (``type__exact``).
    """

    #: The column filtered on.
    field = ""

    def values(self) -> list[str]:
        raise NotImplementedError

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(value, value) for value in self.values()]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value is None:
            return queryset
        if value not in self.values():
            return queryset.none()
        return queryset.filter(**{self.field: value})


class EventTypeFilter(FixedChoicesFilter):
    title = gettext_lazy("type")
    field = "type"
    parameter_name = "type__exact"

    def values(self) -> list[str]:
        return list(EVENT_TYPES)


class AgentFilter(FixedChoicesFilter):
    """The agents registered in ``SYMFONIC["AGENTS"]``."""

    title = gettext_lazy("agent")
    field = "agent"
    parameter_name = "agent__exact"

    def values(self) -> list[str]:
        return sorted(settings.AGENTS)


@dataclass(frozen=True)
class BoundedCount:
    """A number of rows: exact, or PostgreSQL's estimate when ``is_estimate``."""

    rows: int
    is_estimate: bool

    def __str__(self) -> str:
        return f"≈ {self.rows:,}" if self.is_estimate else f"{self.rows:,}"


def bounded_count(queryset: QuerySet[Any]) -> BoundedCount:
    """How many rows ``queryset`` holds, reading no more than ``EXACT_COUNT_UP_TO + 1``.

    Exact up to ``EXACT_COUNT_UP_TO`` rows. Beyond, on PostgreSQL, the planner's
    estimate: an exact ``COUNT(*)`` reads every matching row, and over a large
    table that costs more than the page it numbers. Other databases count exactly.
    """
    # Only the rows' ids: a list's annotations (the inbox's approvals) and joined
    # columns would be computed for every row counted, and a count needs none of them.
    queryset = queryset.order_by().values("pk")
    if connections[queryset.db].vendor != "postgresql":
        return BoundedCount(queryset.count(), is_estimate=False)
    counted = queryset[:EXACT_COUNT_UP_TO + 1].count()
    # Asked whatever the count, so that a page makes the same queries at any size;
    # a plan reads no rows.
    estimate = pg.planner_rows(queryset)
    if counted <= EXACT_COUNT_UP_TO:
        return BoundedCount(counted, is_estimate=False)
    return BoundedCount(max(counted, estimate), is_estimate=True)


class EstimatingPaginator(PaginatorBase):
    """A paginator that never reads more than ``EXACT_COUNT_UP_TO + 1`` rows to count them.

    ``count`` is ``bounded_count``'s: exact up to ``EXACT_COUNT_UP_TO`` rows;
    beyond, on PostgreSQL, the planner's estimate, and ``count_is_estimate`` is true.
    """

    count_is_estimate = False

    @cached_property
    def num_pages(self) -> int:
        """The pages that reach no further than ``EXACT_COUNT_UP_TO`` rows into the list.

        A page's offset is read row by row, so a deep page of a large table costs
        as much as every row before it; past this, a reviewer filters or searches.
        A deeper ``?p=`` is out of range, as any page past the end is.
        """
        return min(super().num_pages, max(1, EXACT_COUNT_UP_TO // self.per_page))

    def page(self, number: Any) -> Any:
        """Page ``number``; past the first, its rows are found by id first.

        A page's offset is read row by row, and each row skipped costs what the
        list computes for a row shown: its joins (``select_related``) and
        annotations. So a deeper page reads the ids of its rows alone (the
        ordering's index and nothing joined), then the list's rows with those ids,
        in the list's order. One more query, and the depth costs only index entries.
        """
        page = super().page(number)
        rows, listed = page.object_list, self.object_list
        if page.number > 1 and isinstance(rows, QuerySet) and isinstance(listed, QuerySet):
            page.object_list = listed.filter(pk__in=list(rows.values_list("pk", flat=True)))
        return page

    @cached_property
    def count(self) -> int:
        if not isinstance(self.object_list, QuerySet):
            return super().count
        counted = bounded_count(self.object_list)
        self.count_is_estimate = counted.is_estimate
        return counted.rows


def _filtered_by(spec: Any) -> str:
    """The field path or query parameter a ``list_filter`` entry filters by."""
    if isinstance(spec, tuple | list):  # (field, FieldListFilter class)
        spec = spec[0]
    if isinstance(spec, str):
        return spec
    if isinstance(spec, Field):
        return str(spec.name)
    return str(spec.parameter_name)  # a SimpleListFilter


class ScopedReadOnlyAdmin(ModelAdminBase):
    """Rows of the scopes the user may read, read-only; anything else is a 404.

    Django's model permissions gate the pages; the rows are those of the scopes in
    which ``read_permission`` lets the user read (``scopes.readable_scope_keys``, the
    rule the API, the websocket and the viewer follow): a member who may only start
    runs sees none.
    """

    #: The lookup that gives a row's scope key.
    scope_field = "scope_key"
    #: The permission that lets a user read these rows of its scopes; ``None``: the
    #: model's own view permission.
    read_permission: str | None = None
    # These tables grow with every turn: count no more rows than needed, and only once
    # (the full count only adds "(n total)" beside a filtered count).
    paginator = EstimatingPaginator
    show_full_result_count = False
    # "Show counts" would count every row once per filter choice.
    show_facets = admin.ShowFacets.NEVER

    class Media:
        css = {"all": ("symfonic_django/admin.css",)}

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        opts = self.model._meta
        keys = readable_scopes(request, self.read_permission
                               or f"{opts.app_label}.view_{opts.model_name}")
        if keys == ALL_SCOPES:
            return queryset
        return queryset.filter(**{f"{self.scope_field}__in": keys})

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest) -> bool:
        """Filters only by the list's own filters, never with a NUL character.

        Django allows a lookup on any local field and hands its value to the
        database: PostgreSQL refused a NUL in text and an integer past its
        column's range (``?attempts__gt=`` and 30 digits), each a 500. A lookup
        refused here is Django's 400 (``DisallowedModelAdminLookup``).
        """
        if "\x00" in lookup or "\x00" in value:
            return False
        offered = [_filtered_by(spec) for spec in self.get_list_filter(request)]
        return (any(lookup == name or lookup.startswith(f"{name}__") for name in offered)
                and super().lookup_allowed(lookup, value, request))

    def get_search_results(self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
                           ) -> tuple[QuerySet[Any], bool]:
        # A changelist's search form already refuses a NUL; the admin's autocomplete
        # view (``/admin/autocomplete/?term=``) hands its term here unchecked, and
        # PostgreSQL refused it: a 500.
        if "\x00" in search_term:
            raise BadRequest(_("A search term cannot contain a NUL character."))
        return self.search(request, queryset, search_term)

    def search(self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
               ) -> tuple[QuerySet[Any], bool]:
        """The search itself: Django's, over ``search_fields``, unless a list has its own."""
        return super().get_search_results(request, queryset, search_term)

    def changelist_view(self, request: HttpRequest,
                        extra_context: dict[str, Any] | None = None) -> HttpResponse:
        # An action's selection is filtered as ``pk__in``, where an id that is not one
        # (``not-a-uuid``, a NUL) raised ValidationError: a 500. A page only sends real ids.
        for selected in request.POST.getlist(helpers.ACTION_CHECKBOX_NAME):
            try:
                self.model._meta.pk.to_python(selected)
            except ValidationError:
                raise BadRequest(_("A selected row id is not an id of this list.")) from None
        return super().changelist_view(request, extra_context)

    def get_object(self, request: HttpRequest, object_id: str,
                   from_field: str | None = None) -> Any:
        obj = super().get_object(request, object_id, from_field)
        if obj is None:
            # The admin would redirect with "doesn't exist"; a 404 says nothing
            # about whether the id exists in a scope the user cannot see.
            raise Http404(_("No %(name)s with that id.") % {"name": self.opts.verbose_name})
        return obj

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def _json_block(value: Any) -> str:
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


def _status_badge(status: str, label: str) -> str:
    return format_html('<span class="symfonic-status symfonic-status-{}">{}</span>', status, label)


def _admin_link(obj: Any, text: str | None = None) -> str:
    if obj is None:
        return "—"
    url = reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])
    return format_html('<a href="{}">{}</a>', url, text or str(obj))


# --- runs -------------------------------------------------------------------------

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
        return _with_uuid_search(found, queryset, term, ("pk", "root_id", "parent_id")), False

    @admin.display(description=gettext_lazy("run"), ordering="created_at")
    def short_id(self, obj: Run) -> str:
        return str(obj.pk)[:8]

    @admin.display(description=gettext_lazy("status"), ordering="status")
    def status_badge(self, obj: Run) -> str:
        """Its status; a paused run whose pause was closed says what came of it:
        "answered → continued in run 9aa9c880, completed"."""
        badge = _status_badge(obj.status, obj.get_status_display())
        continuation = getattr(obj, "resumed_by", None)
        if obj.status != RunStatus.PAUSED or continuation is None:
            return badge
        words = _("%(pause)s → continued in run %(run)s, %(status)s") % {
            "pause": PauseStatus(obj.resumed_status).label.lower(),  # type: ignore[attr-defined]
            "run": str(continuation)[:8],
            "status": RunStatus(obj.resumed_by_status).label.lower()}  # type: ignore[attr-defined]
        url = reverse("admin:symfonic_django_run_change", args=[continuation])
        return format_html('{}<br><a class="quiet symfonic-resumed" href="{}">{}</a>', badge, url,
                           words)

    @admin.display(description=gettext_lazy("pending pauses"), ordering="pending_count")
    def pending_pauses(self, obj: Run) -> int:
        return int(obj.pending_count)  # type: ignore[attr-defined]  # get_queryset's

    @admin.display(description=gettext_lazy("root run"))
    def root_link(self, obj: Run) -> str:
        return _("this run") if obj.root_id in (None, obj.pk) else _admin_link(obj.root)

    @admin.display(description=gettext_lazy("parent run"))
    def parent_link(self, obj: Run) -> str:
        return _admin_link(obj.parent)

    @admin.display(description=gettext_lazy("resumed from pause"))
    def resumed_from_link(self, obj: Run) -> str:
        return _admin_link(obj.resumed_from)

    @admin.display(description=gettext_lazy("input"))
    def input_json(self, obj: Run) -> str:
        return _json_block(obj.input)

    @admin.display(description=gettext_lazy("output"))
    def output_json(self, obj: Run) -> str:
        return _json_block(obj.output)

    @admin.display(description=gettext_lazy("error"))
    def error_json(self, obj: Run) -> str:
        return _json_block(obj.error)

    def render_change_form(self, request: HttpRequest, context: dict[str, Any], add: bool = False,
                           change: bool = False, form_url: str = "", obj: Any = None
                           ) -> HttpResponse:
        if obj is not None:
            context["events"] = _events_table(obj)
            context["run_pauses"] = [
                (p, summarize(p)) for p in
                Pause.objects.filter(run=obj).in_scopes(
                    readable_scopes(request, VIEW_PAUSE_PERMISSION))
                .select_related("answered_by").order_by("created_at")]
            context["viewer_url"] = viewer_url(obj)
        return super().render_change_form(request, context, add, change, form_url, obj)


def _with_uuid_search(found: QuerySet[Any], queryset: QuerySet[Any], term: str,
                      fields: tuple[str, ...]) -> QuerySet[Any]:
    """``found``, and the rows of ``queryset`` whose ``fields`` hold ``term`` as an id
    (a pasted id matches exactly; text search on UUID columns differs per backend)."""
    try:
        value = uuid.UUID(term)
    except ValueError:
        return found
    match = Q()
    for field in fields:
        match |= Q(**{field: value})
    return found | queryset.filter(match)


# --- pauses ------------------------------------------------------------------------

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


#: "alice, in the admin": where an answer came from, after who gave it.
ANSWERED_WHERE: dict[str, str] = {
    AnsweredVia.ADMIN: gettext_noop("%(who)s, in the admin"),
    AnsweredVia.API: gettext_noop("%(who)s, through the API"),
    AnsweredVia.TOKEN: gettext_noop("%(who)s, with a link's token"),
    AnsweredVia.PYTHON: gettext_noop("%(who)s, from code"),
    AnsweredVia.SYSTEM: gettext_noop("%(who)s, by the system"),
}


def _moment(when: Any) -> dict[str, str]:
    """A time as the inbox shows it: ISO for machines, local with its zone for people."""
    return {"iso": when.isoformat(), "text": format_datetime(when)}


@admin.register(Pause)
class PauseAdmin(ScopedReadOnlyAdmin):
    review_template = "admin/symfonic_django/pause/review.html"
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

    @admin.display(description=gettext_lazy("status"), ordering="status")
    def status_badge(self, obj: Pause) -> str:
        return format_html('{}<br><span class="quiet symfonic-kind">{}</span>',
                           _status_badge(obj.status, obj.get_status_display()),
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
        return span((timezone.now() - obj.created_at).total_seconds())

    @admin.display(description=gettext_lazy("expires"), ordering="expires_at")
    def expires_in(self, obj: Pause) -> str:
        if obj.status != PauseStatus.PENDING:
            return "—"
        left = (obj.expires_at - timezone.now()).total_seconds()
        return _("in %(span)s") % {"span": span(left)} if left > 0 else _("overdue")

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
        return _with_uuid_search(found, queryset, term,
                                 ("pk", "run_id", "root_run_id", "continuation_id")), False

    # --- the inbox -----------------------------------------------------------------

    inbox_template = "admin/symfonic_django/pause/inbox.html"

    def get_urls(self) -> list[Any]:
        inbox = path("inbox/", self.admin_site.admin_view(self.inbox_view),
                     name=f"{self.opts.app_label}_{self.opts.model_name}_inbox")
        return [inbox, *self.claim_urls(), *super().get_urls()]

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
        order = ("created_at", "pk") if shown.oldest_first else ("-created_at", "-pk")
        approved = (Decision.objects.filter(pause=OuterRef("pk"), action=Decision.Action.APPROVE)
                    .order_by().values("pause").annotate(n=Count("pk")).values("n"))
        listed = (shown.select(visible, request).order_by(*order)
                  .select_related("run", "answered_by", "claimed_by")
                  .annotate(approvals_have=Coalesce(Subquery(approved), 0),
                            approved_by_me=Exists(Decision.objects.filter(
                                pause=OuterRef("pk"), action=Decision.Action.APPROVE,
                                actor=request.user.pk))))
        paginator = EstimatingPaginator(listed, INBOX_PER_PAGE)
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
        if pause.is_pending:
            left = (pause.expires_at - now).total_seconds()
            when = (_("expires in %(span)s") % {"span": span(left)} if left > 0
                    else _("overdue: expiring now"))
            moment = _moment(pause.expires_at)
        else:
            done = pause.answered_at or pause.updated_at
            words = {"status": pause.get_status_display().lower(),
                     "span": span((now - done).total_seconds())}
            if pause.answered_by is not None:
                when = _("%(status)s %(span)s ago by %(who)s") % {
                    **words, "who": pause.answered_by.get_username()}
            else:
                when = _("%(status)s %(span)s ago") % words
            moment = _moment(done)
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

    # --- review claims ---------------------------------------------------------------
    #
    # "Being reviewed by alice (until 07:40:00 UTC)": the pause page shows a live claim
    # (pause/claim.html) and, to reviewers who may answer, a Claim / Release button that
    # posts here. A claim informs; it refuses nobody's answer (``pauses.claim``).

    def claim_urls(self) -> list[Any]:
        name = f"{self.opts.app_label}_{self.opts.model_name}"
        view = self.admin_site.admin_view(self.claim_view)
        return [path("<path:object_id>/claim/", view, name=f"{name}_claim"),
                path("<path:object_id>/release/", view, {"release": True},
                     name=f"{name}_release")]

    def claim_view(self, request: HttpRequest, object_id: str, release: bool = False
                   ) -> HttpResponse:
        """Claim the pause for the reviewer, or release their claim; then back to its page.

        POST only, CSRF-protected (``admin_view``); a pause of a scope the reviewer
        cannot see is a 404, a reviewer without the answer permission a 403, and a
        refusal (``ClaimHeld``, ``ClaimNotHeld``, a closed pause) its words on the page.
        """
        if request.method != "POST":
            return HttpResponse(status=405, headers={"Allow": "POST"})
        pause = self.get_object(request, object_id)
        if not (self.has_view_permission(request, pause) and self.has_answer_permission(request)):
            raise PermissionDenied
        transition = pauses.release if release else pauses.claim
        try:
            held = transition(pause.pk, actor=request.user, via=AnsweredVia.ADMIN,
                              visible=visible_scopes(request))
        except NotFound as exc:
            raise Http404(exc.detail) from None
        except SymfonicError as exc:
            messages.error(request, exc.detail)
        else:
            until = format_datetime(held.claimed_until, "time")
            messages.success(request, _("You released this pause.") if release else
                             _("You are reviewing this pause until %(until)s: other reviewers "
                               "see it (they can still answer it).") % {"until": until})
        return HttpResponseRedirect(reverse("admin:symfonic_django_pause_change",
                                            args=[pause.pk]))

    # --- answering ------------------------------------------------------------------

    def has_answer_permission(self, request: HttpRequest) -> bool:
        """The ``symfonic_django.answer_pause`` permission (scope is checked per pause)."""
        return may_answer(request.user)

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict[str, Any] | None = None) -> HttpResponse:
        """The pause page: the prompt, the answer form, the decision and its history."""
        pause = self.get_object(request, object_id)
        if not self.has_view_permission(request, pause):
            raise PermissionDenied
        can_answer = self.has_answer_permission(request)
        form = None
        if request.method == "POST":
            if not can_answer:
                raise PermissionDenied
            form = answer_form_for(pause, data=request.POST, reviewer=request.user)
            if form.is_valid():
                return self._answer(request, pause, form)
            messages.error(request, format_html(
                _("The answer was not sent: {}"), " ".join(_form_errors(form))))
        elif pause.is_pending and can_answer and pause.expires_at > timezone.now():
            form = answer_form_for(pause, reviewer=request.user)
        return self._render_review(request, pause, form, can_answer, extra_context)

    def _answer(self, request: HttpRequest, pause: Pause, form: Any) -> HttpResponse:
        page = reverse("admin:symfonic_django_pause_change", args=[pause.pk])
        try:
            resolution = pauses.answer_pause(
                pause.pk, form.answer, actor=request.user, via=AnsweredVia.ADMIN,
                visible=visible_scopes(request), comment=form.comment)
        except NotFound as exc:
            raise Http404(exc.detail) from None
        except SymfonicError as exc:
            messages.error(request, exc.detail)
            pause.refresh_from_db()
            if not pause.is_pending:
                return HttpResponseRedirect(page)  # show who answered it, and when
            return self._render_review(request, pause, form, True, None)
        messages.success(request, _answered_message(resolution))
        return HttpResponseRedirect(viewer_url(resolution.continuation) or page)

    def _render_review(self, request: HttpRequest, pause: Pause, form: Any, can_answer: bool,
                       extra_context: dict[str, Any] | None) -> TemplateResponse:
        pause = (Pause.objects.select_related("run", "answered_by", "continuation")
                 .get(pk=pause.pk))
        if not pause.is_pending:
            form = None  # a closed pause shows its decision, never a form
        is_approval = pause.kind == PauseKind.APPROVAL
        actions = []
        if is_approval:
            for i, action in enumerate(pause.prompt.get("action_requests") or []):
                config = review_config(pause.prompt, action["name"])
                allowed = pauses.offered_decisions(pause, action["name"], request.user)
                fields = form.action_fields(i) if form is not None else {}
                actions.append({
                    "index": i, "name": action["name"],
                    "description": action.get("description", ""),
                    "args": args_rows(action.get("args", {})),
                    "allowed": [decision_label(d) for d in allowed],
                    "outcomes": outcomes(pause, action, allowed),
                    "args_schema": (pretty_json(config["args_schema"])
                                    if config.get("args_schema") else ""),
                    "fields": fields,
                    "input_groups": input_groups(fields.get("inputs", [])),
                })
        history = list(Decision.objects.filter(pause=pause).select_related("actor")
                       .order_by("created_at"))
        approved_by = [d.actor_label for d in history if d.action == Decision.Action.APPROVE]
        runs_of = readable_scopes(request, VIEW_RUN_PERMISSION)
        reads_runs = runs_of == ALL_SCOPES or pause.scope_key in runs_of
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "app_label": self.opts.app_label,
            "original": pause,
            "pause": pause,
            "title": (_("Approval: %(names)s") % {"names": ", ".join(a["name"] for a in actions)}
                      if is_approval else _("Question")),
            "subtitle": _("%(kind)s pause %(id)s") % {"kind": pause.get_kind_display(),
                                                      "id": pause.pk},
            "is_approval": is_approval,
            # "1 of 2 approvals", for a pause that needs several approvers.
            "approvals": ({"have": len(approved_by), "need": pause.approvals_needed,
                           "by": approved_by,
                           "mine": (approvals_text(len(approved_by), pause.approvals_needed,
                                                   True)
                                    if pause.is_pending and any(
                                        d.actor_id == request.user.pk for d in history
                                        if d.action == Decision.Action.APPROVE) else "")}
                          if pause.approvals_needed > 1 else None),
            "actions": actions,
            "question": None if is_approval else hitl.question_text(pause.prompt),
            "question_description": (pause.prompt.get("description", "")
                                     if not is_approval and isinstance(pause.prompt, dict)
                                     else ""),
            "answer_schema": pretty_json(pause.answer_schema) if pause.answer_schema else "",
            "form": form,
            "comment_field": form.comment_field() if form is not None else None,
            "can_answer": can_answer,
            "decided": decision_rows(pause) if is_approval else [],
            "answer_json": None if pause.answer is None else pretty_json(pause.answer),
            "answer_rows": (answer_rows(pause)
                            if not is_approval and isinstance(pause.answer, dict) else None),
            "history": [(d, "" if d.answer is None else _scalar(d.answer),
                         hitl.edit_changes(pause.prompt, d.answer)
                         if d.action == Decision.Action.EDIT else [])
                        for d in history],
            # A run's events are read with the run's view permission, on this page too.
            "events": _events_table(pause.continuation) if reads_runs else None,
            "asked_events": _events_table(pause.run) if reads_runs else None,
            "negative": is_approval and any(
                row["type"] in ("reject", "respond") for row in decision_rows(pause)),
            "expires_in": self.expires_in(pause),
            "age": self.age(pause),
            "viewer_url": viewer_url(pause.continuation),
            "media": self.media + form.media if form is not None else self.media,
            "has_view_permission": True,
            **(extra_context or {}),
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, self.review_template, context)

    # --- bulk actions -------------------------------------------------------------------
    #
    # Like Django's ``delete_selected``: the action first answers with a page listing
    # every selected pause, its actions and their arguments; only the confirmation
    # (``post=yes``, with its reason or comment) decides, each pause through the state
    # machine on its own.

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
        total = len(selected)
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
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "app_label": self.opts.app_label,
            "title": title % {"count": acting, "total": total},
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


#: The most pauses one bulk decision takes (its confirmation page lists each of them).
BULK_LIMIT = 100


def _run_url(run: Run) -> str:
    """Where a reviewer follows a run: the live viewer, else its admin page."""
    return viewer_url(run) or reverse("admin:symfonic_django_run_change", args=[run.pk])


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


def _form_errors(form: Any) -> list[str]:
    """Every error of ``form`` as a sentence that names what it is about."""
    words = []
    for name, errors in form.errors.items():
        field = form.fields.get(name)
        subject = getattr(field, "subject", None) or (field.label if field else "")
        for error in errors:
            words.append(error if not subject or subject in error else f"{subject}: {error}")
    return words


def _answered_message(resolution: pauses.Resolution) -> str:
    pause = resolution.pause
    if resolution.approvals is not None:
        approvals = resolution.approvals
        more = approvals.need - approvals.have
        return ngettext("Your approval was counted: %(have)d of %(need)d approvals (%(by)s); "
                        "the run continues once %(more)d more reviewer approves.",
                        "Your approval was counted: %(have)d of %(need)d approvals (%(by)s); "
                        "the run continues once %(more)d more reviewers approve.", more) % {
            "have": approvals.have, "need": approvals.need, "by": ", ".join(approvals.by),
            "more": more}
    if resolution.continuation is not None:
        return _("Your answer was recorded; the agent continues in run %(id)s.") % {
            "id": str(resolution.continuation.pk)[:8]}
    pending = Pause.objects.filter(run_id=pause.run_id, status=PauseStatus.PENDING).count()
    if pending:
        return ngettext("Your answer was recorded; the run continues once its other "
                        "%(count)d pending pause are answered.",
                        "Your answer was recorded; the run continues once its other "
                        "%(count)d pending pauses are answered.", pending) % {"count": pending}
    return _("Your answer was recorded.")


# --- events and decisions --------------------------------------------------------------

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

    @admin.display(description=gettext_lazy("run"))
    def run_link(self, obj: TurnEvent) -> str:
        return _admin_link(obj.run)

    @admin.display(description=gettext_lazy("data"))
    def data_json(self, obj: TurnEvent) -> str:
        return _json_block(obj.data)


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
        return _admin_link(obj.pause, summarize(obj.pause))

    @admin.display(description=gettext_lazy("answer"))
    def answer_json(self, obj: Decision) -> str:
        return _json_block(obj.answer)

    @admin.display(description=gettext_lazy("edited"))
    def edits(self, obj: Decision) -> str:
        """An edit as changes against what was proposed: ``amount: 99.99 → 50``."""
        if obj.action != Decision.Action.EDIT:
            return "—"
        return format_html_join("", '<p class="symfonic-audit-diff"><strong>{}</strong>{}</p>', (
            (name, format_html_join("", "<br>{}: <del>{}</del> → <ins>{}</ins>", changes)
             if changes else ": no argument changed")
            for name, changes in hitl.edit_changes(obj.pause.prompt, obj.answer)))


# --- notifications ---------------------------------------------------------------------

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
        return _with_uuid_search(found, queryset, term, ("pk", "run_id", "pause_id")), False

    @admin.display(description=gettext_lazy("status"), ordering="status")
    def status_badge(self, obj: NotificationDelivery) -> str:
        return _status_badge(DELIVERY_BADGES.get(obj.status, obj.status),
                             obj.get_status_display())

    @admin.display(description=gettext_lazy("last error"))
    def error_summary(self, obj: NotificationDelivery) -> str:
        return Truncator(obj.last_error).chars(SUMMARY_CHARS) if obj.last_error else "—"

    @admin.display(description=gettext_lazy("run"))
    def run_link(self, obj: NotificationDelivery) -> str:
        return _admin_link(obj.run)

    @admin.display(description=gettext_lazy("pause"))
    def pause_link(self, obj: NotificationDelivery) -> str:
        return _admin_link(obj.pause)

    @admin.display(description=gettext_lazy("payload"))
    def payload_json(self, obj: NotificationDelivery) -> str:
        return _json_block(obj.payload)

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
