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

from symfonic_django.datetimes import format_datetime
from symfonic_django.models import (
    Decision,
    DeliveryAttempt,
    NotificationDelivery,
    Pause,
    Redelivery,
    Run,
    TurnEvent,
)
from symfonic_django.viewer import viewer_url
from tests.testapp.seed import seed_users

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

def signed_in(username: str) -> Client:
    """A client signed in as one of the demo's users (``seed_demo``'s)."""
    seed_users()
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return client


@pytest.fixture
def alice(tenants) -> Client:
    return signed_in("alice")


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


# --- the admin's own lists and read-only fields -----------------------------------------
#
# Django renders a DateTimeField column or read-only field itself as "Dec. 2, 2026, 7:25
# a.m.", with no zone; the app's lists and change pages show them as every other page does.

DJANGO_FORMAT = re.compile(r"\b(a\.m\.|p\.m\.|midnight|noon)")


@pytest.fixture
def admin_client(tenants) -> Client:
    return signed_in("admin")


def dated_rows() -> dict[str, object]:
    """One row of each machine-written model, every datetime of it at WINTER."""
    run, pause = paused_run("refund", {"order_id": "TZ-3", "amount": 5})
    Run.objects.filter(pk=run.pk).update(created_at=WINTER, started_at=WINTER,
                                         finished_at=WINTER, lease_until=WINTER)
    TurnEvent.objects.filter(run=run).update(created_at=WINTER)
    decision = Decision.objects.create(pause=pause, scope_key=pause.scope_key, via="admin",
                                       action=Decision.Action.CLAIM, actor_label="alice",
                                       created_at=WINTER)
    delivery = NotificationDelivery.objects.create(
        channel="email", target="alice@example.com", event_type="pause.requested",
        payload={}, scope_key=pause.scope_key, run=run, pause=pause, max_attempts=3,
        status="delivered", attempts=1, next_attempt_at=WINTER, delivered_at=WINTER,
        created_at=WINTER)
    DeliveryAttempt.objects.create(delivery=delivery, number=1, started_at=WINTER,
                                   finished_at=WINTER, ok=True, response_status=250)
    Redelivery.objects.create(delivery=delivery, actor_label="admin", via="admin",
                              previous_status="delivered", attempts_before=1,
                              created_at=WINTER)
    return {"run": run, "turnevent": TurnEvent.objects.filter(run=run).first(),
            "decision": decision, "notificationdelivery": delivery}


@pytest.mark.django_db
@override_settings(TIME_ZONE="Europe/Paris")
@pytest.mark.parametrize("model, shown_times", [
    ("run", 1), ("turnevent", 1), ("decision", 1), ("notificationdelivery", 2)])
def test_the_admin_lists_show_their_times_this_way(admin_client, model, shown_times):
    dated_rows()
    listed = admin_client.get(f"/admin/symfonic_django/{model}/").content.decode()
    assert listed.count("2026-12-02 08:25:31 Europe/Paris") >= shown_times
    assert not DJANGO_FORMAT.search(listed), DJANGO_FORMAT.search(listed)


@pytest.mark.django_db
@override_settings(TIME_ZONE="Europe/Paris")
@pytest.mark.parametrize("model, shown_times", [
    ("run", 4), ("turnevent", 1), ("decision", 1), ("notificationdelivery", 6)])
def test_the_admin_change_pages_show_their_times_this_way(admin_client, model, shown_times):
    row = dated_rows()[model]
    page = admin_client.get(f"/admin/symfonic_django/{model}/{row.pk}/change/")
    assert page.status_code == 200
    text = page.content.decode()
    # run: created, started, finished, lease; delivery: created, next attempt, delivered,
    # the attempt's start and finish, the redelivery.
    assert text.count("2026-12-02 08:25:31 Europe/Paris") == shown_times
    assert not DJANGO_FORMAT.search(text), DJANGO_FORMAT.search(text)


@pytest.mark.django_db
def test_a_time_column_sorts_by_its_field_and_shows_nothing_for_no_time(admin_client):
    rows = dated_rows()
    Run.objects.filter(pk=rows["run"].pk).update(finished_at=None, lease_until=None)
    page = admin_client.get(f"/admin/symfonic_django/run/{rows['run'].pk}/change/")
    fields = {field.field["label"]: field.contents() for fieldset in page.context["adminform"]
              for line in fieldset for field in line}
    assert (fields["created at"], fields["started at"]) == ("2026-12-02 07:25:31 UTC",) * 2
    assert fields["finished at"] == fields["lease until"] == "-"  # Django's, not "None"
    newest_first = admin_client.get("/admin/symfonic_django/run/?o=-7")
    assert newest_first.status_code == 200
    assert newest_first.context["cl"].queryset.query.order_by[0] == "-created_at"


@pytest.mark.django_db
@override_settings(TIME_ZONE="Europe/Paris")
def test_the_inbox_and_a_claim_state_their_times_this_way(alice):
    run, pause = paused_run("refund", {"order_id": "TZ-4", "amount": 5})
    inbox = alice.get("/admin/symfonic_django/pause/inbox/").content.decode()
    assert f'title="{format_datetime(pause.expires_at)}"' in inbox
    claimed = alice.post(f"/admin/symfonic_django/pause/{pause.pk}/claim/", follow=True)
    held = Pause.objects.get(pk=pause.pk)
    shown = format_datetime(held.claimed_until, "time")
    assert shown.endswith(" Europe/Paris")
    assert f"You are reviewing this pause until {shown}" in claimed.content.decode()
    assert f"until {shown}" in Decision.objects.get(pause=pause, action="claim").comment
