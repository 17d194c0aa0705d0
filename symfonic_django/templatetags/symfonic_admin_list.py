"""``{% symfonic_result_list cl %}``: the admin's ``{% result_list %}``, its rows built faster.

Django's ``items_for_result`` works out every cell of every row from scratch:
which field or method a column is, its CSS class, its empty value, a
``reverse()`` and a widget template for the row's link and checkbox. On a
page of 100 pauses that was most of the request. Here each column is worked
out once per page and each row is then one string: the same markup, cell for
cell (``tests/test_admin.py`` compares the two on every page it renders), in
the admin's own ``change_list_results.html``.

The rows reach that template joined into one: Django's template loops over
the rows (a ``form`` lookup, a nested loop and an escape per row) to wrap
each in ``<tr>`` … ``</tr>``; here they are one string joined with exactly
the markup the loop puts between two rows (``ROW_BREAK``), which the
template then wraps once. The page is the same, byte for byte (also tested).

A page it does not handle (list-editable forms, popups, columns that follow
relations) is left to Django's ``result_list`` unchanged.
"""

from __future__ import annotations

import datetime
import functools
import html
import inspect
from collections.abc import Callable
from typing import Any

from django import template
from django.contrib.admin.templatetags.admin_list import (
    ResultList,
    _coerce_field_name,
    result_headers,
    result_hidden_fields,
)
from django.contrib.admin.templatetags.admin_list import result_list as django_result_list
from django.contrib.admin.templatetags.admin_urls import add_preserved_filters
from django.contrib.admin.templatetags.base import InclusionAdminNode
from django.contrib.admin.utils import display_for_field, display_for_value, quote
from django.core.exceptions import FieldDoesNotExist
from django.db import models
from django.urls import NoReverseMatch, reverse
from django.utils.functional import Promise
from django.utils.safestring import SafeString
from django.utils.translation import gettext

from symfonic_django.admin import ACTION_CHECKBOX_LABEL, ScopedReadOnlyAdmin, action_checkbox_html

register = template.Library()

#: A column: (row -> the cell's HTML).
Cell = Callable[[Any], str]


def _change_url(cl: Any) -> Callable[[Any], str] | None:
    """Row -> its change URL with the preserved filters, from one ``reverse()`` per page."""
    marker = "0" * 8 + "-0000-0000-0000-" + "0" * 12
    try:
        url = reverse(f"admin:{cl.opts.app_label}_{cl.opts.model_name}_change", args=(marker,),
                      current_app=cl.model_admin.admin_site.name)
    except NoReverseMatch:
        return None
    url = add_preserved_filters({"preserved_filters": cl.preserved_filters, "opts": cl.opts}, url)
    prefix, _, suffix = url.rpartition(marker)
    return lambda row: f"{prefix}{quote(row.pk)}{suffix}"


def _columns(cl: Any) -> list[Cell] | None:
    """One cell builder per column, or ``None`` if this page needs Django's general path."""
    if getattr(cl, "formset", None) or cl.is_popup or cl.to_field or cl.list_display_links is None:
        return None
    admin, opts = cl.model_admin, cl.lookup_opts
    default_empty = admin.get_empty_value_display()
    change_url = _change_url(cl)
    cells: list[Cell] = []
    first = True
    for index, name in enumerate(cl.list_display):
        classes = [f"field-{_coerce_field_name(name, index)}"]
        linked = name in cl.list_display_links or (first and not cl.list_display_links)
        if callable(name):
            return None
        try:
            field = opts.get_field(name)
        except FieldDoesNotExist:
            field = None
        if field is not None:
            if field.is_relation or field.auto_created:
                return None  # these take other turns in Django's items_for_result
            if isinstance(field, (models.DateField, models.TimeField)):
                classes.append("nowrap")
            value_of = _field_value(field, default_empty, linked)
        elif hasattr(admin, name) and name != "__str__":
            attr = getattr(admin, name)
            if not callable(attr) or getattr(attr, "boolean", False):
                return None
            if name == "action_checkbox":
                classes = ["action-checkbox"]
            if name == "action_checkbox" and (getattr(type(admin), name, None)
                                              is ScopedReadOnlyAdmin.action_checkbox):
                label = gettext(ACTION_CHECKBOX_LABEL)  # once per page, not once per row
                value_of = functools.partial(action_checkbox_html, label=label)
            else:
                value_of = _method_value(attr, getattr(attr, "empty_value_display", default_empty))
        else:
            return None  # a model attribute or property: Django's lookup_field handles it
        tag = "th" if linked and first else "td"
        open_tag, close_tag = f'<{tag} class="{" ".join(classes)}">', f"</{tag}>"
        if linked:
            if change_url is None:
                return None
            cells.append(_linked(open_tag, close_tag, value_of, change_url))
            first = False
        else:
            cells.append(_plain(open_tag, close_tag, value_of))
    return cells


def _field_value(field: Any, empty: str, linked: bool) -> Callable[[Any], Any]:
    if field.flatchoices:  # display_for_field() would build this dict for every cell
        labels = dict(field.flatchoices)
        return lambda row: labels.get(getattr(row, field.attname), empty)

    def value_of(row: Any) -> Any:
        value = getattr(row, field.attname)
        if isinstance(value, str) and value.strip() == "":
            value = ""
        return display_for_field(value, field, empty, avoid_link=linked)

    return value_of


def _method_value(method: Callable[[Any], Any], empty: str) -> Callable[[Any], Any]:
    def value_of(row: Any) -> Any:
        value = method(row)
        if isinstance(value, str) and value.strip() == "":
            value = ""
        if isinstance(value, (datetime.date, datetime.time)):
            raise _NeedsDjango  # Django adds a "nowrap" class for these
        return display_for_value(value, empty)

    return value_of


class _NeedsDjango(Exception):
    """A cell this module does not render exactly as Django would."""


def _escape(value: Any) -> str:
    """``conditional_escape``, without its lazy-string wrapper: a call per cell."""
    if isinstance(value, Promise):
        value = str(value)
    return value.__html__() if hasattr(value, "__html__") else html.escape(str(value))


def _plain(open_tag: str, close_tag: str, value_of: Callable[[Any], Any]) -> Cell:
    return lambda row: f"{open_tag}{_escape(value_of(row))}{close_tag}"


def _linked(open_tag: str, close_tag: str, value_of: Callable[[Any], Any],
            change_url: Callable[[Any], str]) -> Cell:
    return lambda row: (f'{open_tag}<a href="{_escape(change_url(row))}">{_escape(value_of(row))}'
                        f"</a>{close_tag}")


def fast_rows(cl: Any) -> list[ResultList] | None:
    """Every row of the page as one string of cells, or ``None`` to let Django build them."""
    cells = _columns(cl)
    if cells is None:
        return None
    try:
        return [ResultList(None, [SafeString("".join([cell(row) for cell in cells]))])
                for row in cl.result_list]
    except _NeedsDjango:
        return None


#: What ``admin/change_list_results.html`` puts between the cells of two rows.
ROW_BREAK = "</tr>\n\n\n<tr>"


def symfonic_result_list(cl: Any) -> dict[str, Any]:
    """The context of Django's ``result_list``, with the rows from :func:`fast_rows`.

    The rows are passed as one, joined with ``ROW_BREAK`` (see the module's
    docstring).
    """
    rows = fast_rows(cl)
    if rows is None:
        return django_result_list(cl)
    headers = list(result_headers(cl))
    joined = SafeString(ROW_BREAK.join(row[0] for row in rows))
    return {
        "cl": cl,
        "result_hidden_fields": list(result_hidden_fields(cl)),
        "result_headers": headers,
        "num_sorted_fields": sum(1 for h in headers if h["sortable"] and h["sorted"]),
        "results": [ResultList(None, [joined])] if rows else [],
    }


#: Django 6 gave the node its tag's name as a first argument.
_NAMED_NODE = "name" in inspect.signature(InclusionAdminNode.__init__).parameters


@register.tag(name="symfonic_result_list")
def symfonic_result_list_tag(parser: Any, token: Any) -> InclusionAdminNode:
    named = {"name": "symfonic_result_list"} if _NAMED_NODE else {}
    return InclusionAdminNode(parser=parser, token=token, func=symfonic_result_list,
                              template_name="change_list_results.html", takes_context=False,
                              **named)
