"""The app's template filters: ``{% load symfonic %}``.

``symfonic_datetime`` shows a time as every page of the app does
(``datetimes.format_datetime``): ``2026-12-02 07:25:31 UTC``, in the current
time zone, with that zone named.
"""

from __future__ import annotations

from django import template

from ..datetimes import format_datetime

register = template.Library()


@register.filter
def symfonic_datetime(value: object, part: str = "") -> str:
    """``{{ pause.created_at|symfonic_datetime }}``, ``{{ event.created_at|symfonic_datetime:"time" }}``."""
    return format_datetime(value, part)
