"""The deliveries' admin list against hostile input, as ``tests/test_admin_input.py`` holds
the other lists: a 400 or an empty list, never a 500, and nothing changes."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from symfonic_django.models import NotificationDelivery

from ..conftest import paused_run
from .conftest import endpoint

pytestmark = pytest.mark.django_db

CHANGELIST = reverse("admin:symfonic_django_notificationdelivery_changelist")


@pytest.fixture
def deliveries(notify: Any, reviewers: Any, django_capture_on_commit_callbacks: Any
               ) -> list[NotificationDelivery]:
    notify(WEBHOOKS=[endpoint("http://127.0.0.1:9/hooks")])
    with django_capture_on_commit_callbacks(execute=True):  # the signals, as on commit
        paused_run("echo", scope="acme")
        paused_run("echo", scope="globex")
    return list(NotificationDelivery.objects.order_by("scope_key"))


def login(reviewers: Any, name: str) -> Client:
    client = Client()
    client.force_login(reviewers[name])
    return client


def rows() -> list[dict[str, Any]]:
    return list(NotificationDelivery.objects.order_by("pk").values())


@pytest.mark.parametrize("who", ["admin", "alice"])
@pytest.mark.parametrize("query", [
    "scope=%00", "status__exact=%00", "channel__exact=%00", "event_type__exact=%00", "%00=1",
    "attempts__gt=" + "9" * 30, "payload__has_key=x", "id__exact=not-a-uuid",
    "target__icontains=ops",
])
def test_a_nul_or_a_filter_the_list_does_not_offer_is_a_400(
        deliveries: Any, reviewers: Any, who: str, query: str) -> None:
    assert login(reviewers, who).get(f"{CHANGELIST}?{query}").status_code == 400


@pytest.mark.parametrize("query, expected", [
    ("status__exact=pending", 1), ("status__exact=zzz", 0), ("channel__exact=webhook", 1),
    ("event_type__exact=pause.requested", 1), ("event_type__exact=zzz", 0), ("scope=globex", 0),
    ("q=ops", 1), ("q=%00", 1),
])
def test_the_offered_filters_and_search_filter_within_the_reviewers_scopes(
        deliveries: Any, reviewers: Any, query: str, expected: int) -> None:
    response = login(reviewers, "alice").get(f"{CHANGELIST}?{query}")
    assert response.status_code == 200
    assert response.context["cl"].result_count == expected


@pytest.mark.parametrize("object_id", ["not-a-uuid", "%00", "9" * 30])
def test_an_id_that_is_not_one_in_a_change_url_is_a_404(
        deliveries: Any, reviewers: Any, object_id: str) -> None:
    url = f"/admin/symfonic_django/notificationdelivery/{object_id}/change/"
    assert login(reviewers, "admin").get(url).status_code == 404


@pytest.mark.parametrize("selected", ["not-a-uuid", "\x00", "9" * 30])
def test_a_redeliver_of_an_id_that_is_not_one_is_a_400_and_changes_nothing(
        deliveries: Any, reviewers: Any, selected: str) -> None:
    before = rows()
    response = login(reviewers, "admin").post(CHANGELIST, {
        "action": "redeliver_selected", "_selected_action": [str(deliveries[0].pk), selected]})
    assert response.status_code == 400
    assert rows() == before
