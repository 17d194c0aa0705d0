"""The reviewer's inbox: pending work first, oldest first, scoped like the pause list.

``/admin/symfonic_django/pause/inbox/`` lists the pauses of the reviewer's
scopes as cards (the headline, the tenant, the time to expiry), one tab per
status with a count that never reads more than ``EXACT_COUNT_UP_TO + 1`` rows,
and the same queries for 5 rows as for 50. Any query string is a page or a
4xx, never a 500.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from symfonic_django import pauses
from symfonic_django.admin import InboxTab, PauseAdmin
from symfonic_django.models import Pause, PauseKind, PauseStatus
from tests.testapp.models import Membership, Tenant
from tests.testapp.seed import seed_users

from .admin_pages import bare_pause, login, refund_pause


@pytest.fixture
def users(tenants: dict[str, Tenant]) -> dict[str, Any]:
    return seed_users()


pytestmark = pytest.mark.django_db

INBOX = "admin:symfonic_django_pause_inbox"


def inbox(who: str, query: str = "") -> Any:
    return login(who).get(reverse(INBOX) + query)


def listed(response: Any) -> list[Pause]:
    return [row["pause"] for row in response.context["rows"]]


def aged(pause: Pause, minutes: int) -> Pause:
    """``pause`` as if asked ``minutes`` ago."""
    Pause.objects.filter(pk=pause.pk).update(created_at=timezone.now()
                                              - timedelta(minutes=minutes))
    return pause


def test_pending_pauses_come_first_oldest_first_with_headline_tenant_and_expiry(users):
    newer = aged(refund_pause("acme", amount=40, order="ACME-NEW"), 5)
    older = aged(refund_pause("acme", amount=99.99, order="ACME-OLD"), 50)
    question = aged(bare_pause("acme", kind=PauseKind.QUESTION,
                               prompt={"question": "Which warehouse ships it?"}), 20)
    answered = refund_pause("acme", order="ACME-DONE")
    pauses.reject(answered.pk, actor=None)
    response = inbox("alice")
    assert response.status_code == 200
    assert listed(response) == [older, question, newer]  # the answered one is not waiting
    body = response.content.decode()
    # The agent's description is the headline (not refund(order_id=..., amount=...)),
    # the question's words are a question's.
    assert "Refund 99.99 on order ACME-OLD" in body and "Which warehouse ships it?" in body
    assert "refund(order_id=" not in body
    assert body.count('class="symfonic-tenant"') == 3 and ">acme</span>" in body
    assert body.count("expires in 23 h") == 3
    # The full list is one click away.
    assert f'href="{reverse("admin:symfonic_django_pause_changelist")}"' in body


def test_other_statuses_are_tabs_newest_first_saying_who_and_when(users):
    first, second = (refund_pause("acme", order=f"ACME-{i}") for i in range(2))
    alice = get_user_model().objects.get(username="alice")
    pauses.approve(first.pk, actor=alice, via="admin")
    pauses.approve(second.pk, actor=alice, via="admin")
    response = inbox("alice", "?show=answered")
    assert listed(response) == [second, first]
    body = response.content.decode()
    assert "answered 0 s ago by alice" in body and "Answered</span>" in body
    counts = {tab["slug"]: tab["count"].rows for tab in response.context["tabs"]}
    assert counts == {"pending": 0, "answered": 2, "expired": 0, "cancelled": 0, "claimed": 0}
    assert "Nothing is waiting for you." in inbox("alice").content.decode()


def test_a_reviewer_sees_only_her_scopes_and_counts_only_them(users):
    mine = refund_pause("acme", order="ACME-1")
    theirs = refund_pause("globex", order="GLOBEX-1")
    response = inbox("alice")
    assert listed(response) == [mine]
    body = response.content.decode()
    assert "GLOBEX-1" not in body and str(theirs.pk) not in body
    assert response.context["tabs"][0]["count"].rows == 1
    assert listed(inbox("bob")) == [theirs]
    assert set(listed(inbox("admin"))) == {mine, theirs}


def test_without_the_view_permission_the_inbox_is_refused(users):
    user = get_user_model().objects.create_user("dave", password="x", is_staff=True)
    Membership.objects.create(user=user, tenant=Tenant.objects.get(slug="acme"))
    assert login("dave").get(reverse(INBOX)).status_code == 403
    anonymous = login("alice")
    anonymous.logout()
    response = anonymous.get(reverse(INBOX))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_a_viewer_without_the_answer_permission_still_sees_the_inbox(users):
    user = get_user_model().objects.create_user("carol", password="x", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_pause"))
    Membership.objects.create(user=user, tenant=Tenant.objects.get(slug="acme"))
    pause = refund_pause("acme")
    response = login("carol").get(reverse(INBOX))
    assert response.status_code == 200 and listed(response) == [pause]


@pytest.mark.parametrize("query", [
    "?show=nothing", "?show=%00", "?show=pending%00", "?show=" + "x" * 5000,
])
def test_an_unknown_list_is_a_400(users, query):
    refund_pause("acme")
    assert inbox("alice", query).status_code == 400


@pytest.mark.parametrize("query", [
    "?p=abc", "?p=%00", "?p=-1", "?p=99999999999999999999999999", "?p=1e9", "?p=",
    "?show=pending&p=2", "?p=1&p=2", "?other=%00", "?o=%ff%fe",
])
def test_any_page_number_is_a_page(users, query):
    pause = refund_pause("acme")
    response = inbox("alice", query)
    assert response.status_code == 200
    assert listed(response) == [pause]


def test_a_quorum_pause_says_how_many_approvals_it_has(users, settings):
    settings.SYMFONIC = {**settings.SYMFONIC,
                         "APPROVAL_POLICY": "tests.test_approvals.two_approvers"}
    pause = refund_pause("acme")
    assert pause.approvals_needed == 2
    admin_user = get_user_model().objects.get(username="admin")
    pauses.approve(pause.pk, actor=admin_user, via="admin")
    body = inbox("alice").content.decode()
    assert "1 of 2 approvals" in body


def test_the_inbox_is_linked_from_the_admin_index_the_app_index_and_the_pause_list(users):
    url = reverse(INBOX)
    alice = login("alice")
    for page in (reverse("admin:index"),
                 reverse("admin:app_list", kwargs={"app_label": "symfonic_django"}),
                 reverse("admin:symfonic_django_pause_changelist")):
        response = alice.get(page)
        assert response.status_code == 200
        assert f'href="{url}"' in response.content.decode(), page


def rows_in_acme(n: int) -> None:
    for _ in range(n):
        bare_pause("acme")


@pytest.mark.parametrize("who", ["alice", "admin"])
def test_the_inbox_makes_the_same_queries_for_5_rows_as_for_50(users, who, exact_count_up_to,
                                                             django_assert_num_queries):
    # On PostgreSQL 50 rows are then past the exact count's limit, and 5 are not.
    exact_count_up_to(10)
    client = login(who)
    rows_in_acme(5)
    client.get(reverse(INBOX))  # the session and permission caches, as on any later page
    with CaptureQueriesContext(connection) as five:
        response = client.get(reverse(INBOX))
    assert len(response.context["rows"]) == 5
    rows_in_acme(45)
    with django_assert_num_queries(len(five)):
        response = client.get(reverse(INBOX))
    # Past the limit a page holds at most the estimated count (stale on a table just
    # written): more than 5 rows, whatever it is.
    assert len(response.context["rows"]) > 10


def test_counts_never_read_more_rows_than_the_limit(users, exact_count_up_to):
    exact_count_up_to(10)
    rows_in_acme(12)
    with CaptureQueriesContext(connection) as captured:
        response = inbox("alice")
    counts = [q["sql"] for q in captured.captured_queries
              if q["sql"].startswith("SELECT COUNT(*)")]
    assert len(counts) == 5  # one per tab
    if connection.vendor == "postgresql":
        assert all("LIMIT 11" in sql for sql in counts)
        assert "≈" in response.content.decode()
    pending = response.context["tabs"][0]["count"]
    assert pending.rows >= 11


@pytest.mark.postgres
def test_past_the_limit_the_count_is_the_planners_estimate(users, exact_count_up_to):
    exact_count_up_to(10)
    rows_in_acme(40)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE symfonic_django_pause")
    response = inbox("alice")
    pending = response.context["tabs"][0]["count"]
    assert pending.is_estimate and str(pending) == f"≈ {pending.rows:,}" and pending.rows >= 11
    assert "are estimates" in response.content.decode()
    # The pages stop where the pause list's do (EXACT_COUNT_UP_TO rows deep).
    assert response.context["page"].paginator.num_pages == 1


def test_a_personal_tab_is_counted_and_listed_like_the_others(users, monkeypatch):
    """The hook for "claimed by me" and the like: a tab ``personal_inbox_tabs`` returns."""
    def mine(queryset: Any, request: Any) -> Any:
        return queryset.filter(status=PauseStatus.PENDING, kind=PauseKind.QUESTION)

    monkeypatch.setattr(PauseAdmin, "personal_inbox_tabs",
                        lambda self, request: [InboxTab("questions", "My questions", mine)])
    question = bare_pause("acme", kind=PauseKind.QUESTION)
    refund_pause("acme")
    response = inbox("alice", "?show=questions")
    assert listed(response) == [question]
    assert response.context["tabs"][-1]["count"].rows == 1
    assert 'id="symfonic-tab-questions"' in response.content.decode()


def test_claimed_by_me_lists_the_pending_pauses_the_reviewer_holds_now(users):
    alice = get_user_model().objects.get(username="alice")
    mine, lapsed, others = (refund_pause("acme") for _ in range(3))
    pauses.claim(mine.pk, actor=alice, via="admin")
    pauses.claim(lapsed.pk, actor=alice, via="admin",
                 now=timezone.now() - timedelta(days=1))  # its claim ran out long ago
    response = inbox("alice", "?show=claimed")
    assert response.status_code == 200
    assert listed(response) == [mine]
    assert response.context["tabs"][-1]["slug"] == "claimed"
    assert response.context["tabs"][-1]["count"].rows == 1
    assert listed(inbox("admin", "?show=claimed")) == []  # alice's, not the superuser's
    pauses.approve(mine.pk, actor=alice, via="admin")
    assert listed(inbox("alice", "?show=claimed")) == []  # answered: no longer work
    assert others.status == PauseStatus.PENDING
