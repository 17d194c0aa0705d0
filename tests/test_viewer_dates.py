"""One way to show a time, on every surface: ``2026-12-02 07:25:31 UTC``.

``symfonic_datetime`` (``{% load symfonic %}``) shows a time in the zone the
project activates for the user, else ``TIME_ZONE``, and names that zone; the
admin's review page and the live viewer use it, and the viewer page hands the
same zone to its script (the browser test compares the two formatters).
"""

from __future__ import annotations

import re
import zoneinfo
from datetime import UTC, date, datetime, timedelta
from datetime import timezone as fixed_zone

import pytest
from django.contrib.auth import get_user_model
from django.template import Context, Template
from django.test import Client, override_settings
from django.utils import timezone

from example_project.shop.management.commands.seed_demo import seed_users
from symfonic_django.models import Pause
from symfonic_django.templatetags.symfonic import format_datetime
from symfonic_django.viewer import viewer_url

from .conftest import paused_run

WINTER = datetime(2026, 12, 2, 7, 25, 31, 900_000, tzinfo=UTC)
SUMMER = datetime(2026, 7, 1, 22, 5, 9, tzinfo=UTC)
SHOWN = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [A-Za-z_/+:0-9-]+")


def render(source: str, **context: object) -> str:
    return Template("{% load symfonic %}" + source).render(Context(context))


def test_a_time_is_shown_to_the_second_in_utc_by_default_with_the_zone_named():
    assert format_datetime(WINTER) == "2026-12-02 07:25:31 UTC"
    assert render("{{ t|symfonic_datetime }}", t=WINTER) == "2026-12-02 07:25:31 UTC"


def test_time_only_keeps_the_zone():
    assert render('{{ t|symfonic_datetime:"time" }}', t=WINTER) == "07:25:31 UTC"


@override_settings(TIME_ZONE="Europe/Paris")
def test_the_projects_time_zone_is_used_and_named_in_winter_and_in_summer():
    assert format_datetime(WINTER) == "2026-12-02 08:25:31 Europe/Paris"
    assert format_datetime(SUMMER) == "2026-07-02 00:05:09 Europe/Paris"  # past midnight: +2


@override_settings(TIME_ZONE="Europe/Paris")
def test_the_users_activated_zone_wins_over_time_zone():
    with timezone.override(zoneinfo.ZoneInfo("America/New_York")):
        assert format_datetime(WINTER) == "2026-12-02 02:25:31 America/New_York"
        assert render("{{ t|symfonic_datetime }}", t=WINTER) == (
            "2026-12-02 02:25:31 America/New_York")
    with timezone.override("Asia/Kolkata"):  # a half-hour offset
        assert format_datetime(WINTER) == "2026-12-02 12:55:31 Asia/Kolkata"


def test_a_fixed_offset_is_named_as_django_names_it():
    with timezone.override(fixed_zone(timedelta(hours=-3, minutes=-30))):
        assert format_datetime(WINTER) == "2026-12-02 03:55:31 UTC-03:30"


def test_a_time_in_another_zone_is_converted_not_relabelled():
    tokyo = WINTER.astimezone(zoneinfo.ZoneInfo("Asia/Tokyo"))
    assert format_datetime(tokyo) == "2026-12-02 07:25:31 UTC"


@override_settings(USE_TZ=False, TIME_ZONE="Europe/Paris")
def test_without_use_tz_a_naive_time_is_already_local():
    assert format_datetime(datetime(2026, 12, 2, 7, 25, 31)) == "2026-12-02 07:25:31 Europe/Paris"


@pytest.mark.parametrize("value, shown", [
    (None, ""), ("", ""), ("2026-12-02T07:25:31Z", ""), (42, ""), (object(), ""),
    (date(2026, 12, 2), "2026-12-02"),
    (datetime(999, 1, 2, 3, 4, 5, tzinfo=UTC), "0999-01-02 03:04:05 UTC"),
])
def test_anything_else_is_a_date_or_nothing(value, shown):
    assert format_datetime(value) == shown


# --- the pages that use it --------------------------------------------------------------

@pytest.fixture
def alice(tenants) -> Client:
    seed_users()
    client = Client()
    client.force_login(get_user_model().objects.get(username="alice"))
    return client


@pytest.mark.django_db
@override_settings(TIME_ZONE="Europe/Paris")
def test_the_review_page_shows_times_this_way_in_the_projects_zone(alice):
    run, pause = paused_run("refund", {"order_id": "TZ-1", "amount": 5})
    Pause.objects.filter(pk=pause.pk).update(created_at=WINTER)
    review = alice.get(f"/admin/symfonic_django/pause/{pause.pk}/change/").content.decode()
    assert "(2026-12-02 08:25:31 Europe/Paris)" in review
    assert f"({format_datetime(pause.expires_at)})" in review
    assert " a.m." not in review and " p.m." not in review  # Django's default format is gone
    assert SHOWN.fullmatch(format_datetime(pause.expires_at))


@pytest.mark.django_db
@override_settings(TIME_ZONE="Europe/Paris")
def test_the_viewer_shows_times_the_same_way_and_hands_its_script_the_same_zone(alice):
    run, _ = paused_run("refund", {"order_id": "TZ-2", "amount": 5})
    viewer = alice.get(viewer_url(run)).content.decode()
    assert f'<span id="symfonic-started">{format_datetime(run.created_at)}</span>' in viewer
    assert "(times are in Europe/Paris)" in viewer
    assert '"timeZone": "Europe/Paris"' in viewer  # what its script formats with
    with timezone.override("Asia/Kolkata"):  # a zone the project activates for the user
        viewer = alice.get(viewer_url(run)).content.decode()
    assert '"timeZone": "Asia/Kolkata"' in viewer and "(times are in Asia/Kolkata)" in viewer
