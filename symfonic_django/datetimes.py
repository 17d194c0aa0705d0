"""How a time is shown to people, on every surface of the app, in one format.

``2026-12-02 07:25:31 UTC``: to the second, in the current time zone (the one
the project activates for the user, else ``TIME_ZONE``), with that zone named.
The admin's lists, its read-only fields and review page, the inbox, a claim's
"until", and the live viewer (its script formats what it receives the same
way, in the zone its page states) all show times through ``format_datetime``,
so two surfaces never disagree about when something happened. Machines get ISO
8601 (the API, the events' ``ts``); this is for people.
"""

from __future__ import annotations

from datetime import date, datetime

from django.utils import timezone


def format_datetime(value: object, part: str = "") -> str:
    """``value`` as ``YYYY-MM-DD HH:MM:SS <zone>`` in the current time zone.

    ``part="time"`` gives only ``HH:MM:SS <zone>``. A date without a time is
    ``YYYY-MM-DD``; ``None`` or anything else is ``""``, as Django's ``date``
    filter does. A naive datetime (a project with ``USE_TZ = False``) is taken
    to be in the current zone already.
    """
    if isinstance(value, datetime):
        local = timezone.localtime(value) if timezone.is_aware(value) else value
        clock = f"{local.hour:02d}:{local.minute:02d}:{local.second:02d}"
        zone = timezone.get_current_timezone_name()
        if part == "time":
            return f"{clock} {zone}"
        return f"{_day(local)} {clock} {zone}"
    if isinstance(value, date):
        return _day(value)
    return ""


def _day(value: date) -> str:
    # Not strftime: its %Y does not pad years before 1000 on every platform.
    return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
