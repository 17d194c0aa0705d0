"""The base of every admin of the app: rows of the scopes the user may read, read-only,
any other a 404; filters and searches that never hand the database what it refuses.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from django.contrib import admin
from django.contrib.admin import helpers
from django.core.exceptions import BadRequest, ValidationError
from django.db.models import Field, Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.utils.translation import gettext as _

from ..scopes import ALL_SCOPES, may_answer, readable_scope_keys, reviewer_scope_keys
from .pagination import EstimatingPaginator

if TYPE_CHECKING:
    ModelAdminBase = admin.ModelAdmin[Any]
else:  # it takes no type arguments at runtime
    ModelAdminBase = admin.ModelAdmin


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


def with_uuid_search(found: QuerySet[Any], queryset: QuerySet[Any], term: str,
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
        css = {"all": ("symfonic_django/admin.css", "symfonic_django/breadcrumbs.css")}

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


class ReviewerAdmin(ScopedReadOnlyAdmin):
    """The base of the pause admin's parts (the inbox, claims, bulk decisions, the
    review page): rows are read as any, and some reviewers may answer them."""

    def has_answer_permission(self, request: HttpRequest) -> bool:
        """The ``symfonic_django.answer_pause`` permission (scope is checked per pause)."""
        return may_answer(request.user)
