"""The lists' filters: by scope (the reviewer's), and by a fixed list of values that the
app knows, so that no filter reads a whole table to offer its choices."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import connections, router
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy

from .. import pg
from ..conf import settings
from ..events import EVENT_TYPES
from ..scopes import ALL_SCOPES
from .base import visible_scopes


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
