"""Review claims ("being reviewed by alice"), and the reminder, then the escalation, of a
pause that nears its expiry unanswered.

A claim is informational: it refuses other claims while it holds, never an answer. Each
claim and release is a ``Decision``; every refusal changes no row. A reminder goes to
the scope's reviewers, an escalation to the ``ESCALATE_TO`` group, each once per pause
however many sweeps run (``pauses.mark_reminded``), and never for a closed pause. The
browser side (a claim seen by a second reviewer) is in ``tests/browser/test_claims_browser.py``.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core import mail
from django.core.checks import Error
from django.core.management import call_command
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from symfonic_django import notifications, pauses
from symfonic_django.checks import check_notifications, check_settings
from symfonic_django.datetimes import format_datetime
from symfonic_django.exceptions import (
    AlreadyAnswered,
    ClaimHeld,
    ClaimNotHeld,
    NotFound,
    PauseCancelled,
    PauseExpired,
    PermissionDenied,
)
from symfonic_django.models import (
    Decision,
    DeliveryStatus,
    NotificationDelivery,
    Pause,
    PauseStatus,
)
from tests.testapp.models import Membership, Tenant

from .conftest import paused_run, snapshot

pytestmark = pytest.mark.django_db(transaction=True)

API = "/api/symfonic/"
REVIEWER_EMAILS = "tests.testapp.scopes.reviewer_emails"
SITE_URL = "https://review.example.com"
HOOK_SECRET = "whsec_" + "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWY="  # 32 bytes


def reviewer(name: str, tenant: str = "acme", *, answers: bool = True,
             email: str | None = None) -> Any:
    """A staff member of ``tenant`` who may view its pauses and, with ``answers``, answer."""
    user = get_user_model().objects.create_user(name, password="pw", is_staff=True,
                                                email=email or f"{name}@example.com")
    codenames = ["view_pause", "view_decision", *(["answer_pause"] if answers else [])]
    user.user_permissions.add(*Permission.objects.filter(
        content_type__app_label="symfonic_django", codename__in=codenames))
    Membership.objects.create(user=user, tenant=Tenant.objects.get(slug=tenant))
    return user


@pytest.fixture
def people(tenants: Any) -> dict[str, Any]:
    return {"alice": reviewer("alice"), "dora": reviewer("dora"),
            "bob": reviewer("bob", "globex"), "carol": reviewer("carol", answers=False)}


def rows(pause: Pause) -> tuple[Any, ...]:
    """Everything a refusal must leave as it was: the pause row and its audit."""
    return snapshot(pause), list(Decision.objects.filter(pause=pause).values())


def actions(pause: Pause) -> list[tuple[str, str]]:
    return list(Decision.objects.filter(pause=pause).order_by("pk")
                .values_list("action", "actor_label"))


def clock(moment: Any) -> str:
    """A time of day as every surface shows one, its zone named: ``07:40:00 UTC``."""
    return format_datetime(moment, "time")


# --- claims -----------------------------------------------------------------------------

def test_a_reviewer_claims_a_pending_pause_for_claim_seconds_and_it_is_audited(people, settings):
    settings.SYMFONIC = {**settings.SYMFONIC, "CLAIM_SECONDS": 600}
    _, pause = paused_run()
    now = timezone.now()

    claimed = pauses.claim(pause.pk, actor=people["alice"], via="admin", now=now)

    stored = Pause.objects.get(pk=pause.pk)
    assert (stored.claimed_by, stored.claimed_until) == (people["alice"],
                                                         now + timedelta(seconds=600))
    assert (claimed.claimed_by, claimed.claimed_until) == (stored.claimed_by,
                                                           stored.claimed_until)
    assert stored.status == PauseStatus.PENDING  # a claim is not an answer
    decision = Decision.objects.get(pause=pause)
    assert (decision.action, decision.actor, decision.via, decision.comment) == (
        "claim", people["alice"], "admin", f"until {clock(stored.claimed_until)}")


def test_another_reviewers_claim_is_refused_while_it_holds_and_changes_nothing(people):
    _, pause = paused_run()
    held = pauses.claim(pause.pk, actor=people["alice"], via="api")
    before = rows(pause)

    with pytest.raises(ClaimHeld) as refused:
        pauses.claim(pause.pk, actor=people["dora"], via="api")

    assert (refused.value.code, refused.value.status) == ("claimed", 409)
    assert refused.value.detail == f"Being reviewed by alice until {clock(held.claimed_until)}."
    assert rows(pause) == before


def test_the_holder_claims_again_to_extend_it(people):
    _, pause = paused_run()
    now = timezone.now()
    pauses.claim(pause.pk, actor=people["alice"], via="admin", now=now)
    later = now + timedelta(minutes=5)

    again = pauses.claim(pause.pk, actor=people["alice"], via="admin", now=later)

    assert again.claimed_until == later + timedelta(minutes=15)  # CLAIM_SECONDS' default
    assert Pause.objects.get(pk=pause.pk).claimed_until == again.claimed_until
    assert actions(pause) == [("claim", "alice"), ("claim", "alice")]


def test_a_lapsed_claim_is_nobodys_and_another_reviewer_may_take_it(people):
    _, pause = paused_run()
    now = timezone.now()
    pauses.claim(pause.pk, actor=people["alice"], via="admin", now=now)
    lapsed = now + timedelta(minutes=15)

    assert Pause.objects.get(pk=pause.pk).claimant_at(lapsed) is None
    taken = pauses.claim(pause.pk, actor=people["dora"], via="admin", now=lapsed)

    assert taken.claimed_by == people["dora"]
    assert actions(pause) == [("claim", "alice"), ("claim", "dora")]


def test_the_holder_releases_the_claim_and_it_is_audited(people):
    _, pause = paused_run()
    pauses.claim(pause.pk, actor=people["alice"], via="admin")

    released = pauses.release(pause.pk, actor=people["alice"], via="admin")

    stored = Pause.objects.get(pk=pause.pk)
    assert (stored.claimed_by, stored.claimed_until) == (None, None) == (
        released.claimed_by, released.claimed_until)
    assert actions(pause) == [("claim", "alice"), ("release", "alice")]
    pauses.claim(pause.pk, actor=people["dora"], via="admin")  # free for anyone again


@pytest.mark.parametrize("situation", ["someone_elses", "none", "lapsed"])
def test_releasing_a_claim_you_do_not_hold_is_refused_and_changes_nothing(people, situation):
    _, pause = paused_run()
    now = timezone.now()
    if situation == "someone_elses":
        pauses.claim(pause.pk, actor=people["dora"], via="admin", now=now)
    if situation == "lapsed":
        pauses.claim(pause.pk, actor=people["alice"], via="admin", now=now - timedelta(hours=1))
    before = rows(pause)

    with pytest.raises(ClaimNotHeld) as refused:
        pauses.release(pause.pk, actor=people["alice"], via="admin", now=now)

    assert (refused.value.code, refused.value.status) == ("not_claimed", 409)
    if situation == "someone_elses":
        assert "being reviewed by dora" in refused.value.detail
    assert rows(pause) == before


def close(pause: Pause, how: str, people: dict[str, Any]) -> None:
    if how == "answered":
        pauses.approve(pause.pk, actor=people["dora"], via="api")
    elif how == "cancelled":
        pauses.cancel(pause.pk)
    else:
        Pause.objects.filter(pk=pause.pk).update(expires_at=timezone.now() - timedelta(1))
        pauses.expire_due()


@pytest.mark.parametrize(("how", "refusal"), [("answered", AlreadyAnswered),
                                               ("cancelled", PauseCancelled),
                                               ("expired", PauseExpired)])
def test_a_closed_pause_can_be_neither_claimed_nor_released(people, how, refusal):
    _, pause = paused_run()
    pauses.claim(pause.pk, actor=people["alice"], via="admin")
    close(pause, how, people)
    before = rows(pause)

    for transition in (pauses.claim, pauses.release):
        with pytest.raises(refusal):
            transition(pause.pk, actor=people["alice"], via="admin")

    assert rows(pause) == before


def test_a_pause_past_its_expiry_time_cannot_be_claimed(people):
    _, pause = paused_run()
    before = rows(pause)
    with pytest.raises(PauseExpired):
        pauses.claim(pause.pk, actor=people["alice"], via="admin",
                     now=pause.expires_at + timedelta(seconds=1))
    assert rows(pause) == before


def test_a_claim_informs_and_never_stops_another_reviewer_answering(people):
    _, pause = paused_run()
    pauses.claim(pause.pk, actor=people["alice"], via="admin")

    pauses.approve(pause.pk, actor=people["dora"], via="admin")

    assert Pause.objects.get(pk=pause.pk).answered_by == people["dora"]


def test_a_claim_outside_the_reviewers_scopes_is_not_found_and_nobody_cannot_claim(people):
    _, pause = paused_run()
    before = rows(pause)
    with pytest.raises(NotFound):
        pauses.claim(pause.pk, actor=people["bob"], via="api", visible=["globex"])
    with pytest.raises(NotFound):
        pauses.claim("not-a-uuid", actor=people["alice"], via="api")
    with pytest.raises(PermissionDenied):
        pauses.claim(pause.pk, actor=None, via="token")
    assert rows(pause) == before


@pytest.mark.parametrize("value", [0, -5, "900", True, 1.5])
def test_claim_seconds_must_be_a_positive_whole_number(value):
    with override_settings(SYMFONIC={"CLAIM_SECONDS": value}):
        assert check_settings() == [Error(
            f"SYMFONIC['CLAIM_SECONDS'] must be a positive integer, not {value!r}.",
            hint="The default is 900.", id="symfonic_django.E003")]


# --- the admin page ------------------------------------------------------------------------

def page(user: Any, pause: Pause, **client: Any) -> tuple[Client, str]:
    browser = Client(**client)
    browser.force_login(user)
    return browser, reverse("admin:symfonic_django_pause_change", args=[pause.pk])


def claim_url(pause: Pause, which: str = "claim") -> str:
    return reverse(f"admin:symfonic_django_pause_{which}", args=[pause.pk])


def test_the_admin_page_shows_the_claim_to_others_and_the_buttons_to_those_who_may_answer(
        people):
    _, pause = paused_run()
    alice, url = page(people["alice"], pause)
    assert 'value="Claim: I am reviewing this"' in alice.get(url).content.decode()

    answer = alice.post(claim_url(pause), follow=True)
    held = Pause.objects.get(pk=pause.pk)
    text = answer.content.decode()
    assert held.claimed_by == people["alice"]
    assert f"You are reviewing this pause until {clock(held.claimed_until)}" in text
    assert 'value="Release"' in text and 'value="Keep reviewing"' in text

    dora, _ = page(people["dora"], pause)
    seen = dora.get(url).content.decode()
    assert f"Being reviewed by <strong>alice</strong> (until {clock(held.claimed_until)})." in seen
    assert "Claim: I am reviewing this" not in seen and 'value="Release"' not in seen
    carol, _ = page(people["carol"], pause)  # may view, not answer: sees it, no button
    viewed = carol.get(url).content.decode()
    assert "Being reviewed by <strong>alice</strong>" in viewed and 'name="_claim"' not in viewed


def test_a_refused_admin_claim_says_why_and_changes_nothing(people):
    _, pause = paused_run()
    held = pauses.claim(pause.pk, actor=people["alice"], via="admin")
    before = rows(pause)
    dora, _ = page(people["dora"], pause)

    answer = dora.post(claim_url(pause), follow=True)

    assert f"Being reviewed by alice until {clock(held.claimed_until)}." in (
        answer.content.decode())
    assert dora.post(claim_url(pause, "release")).status_code == 302
    assert rows(pause) == before


def test_the_admin_releases_the_holders_claim(people):
    _, pause = paused_run()
    alice, url = page(people["alice"], pause)
    alice.post(claim_url(pause))
    answer = alice.post(claim_url(pause, "release"), follow=True)
    assert "You released this pause." in answer.content.decode()
    assert Pause.objects.get(pk=pause.pk).claimed_by is None
    assert actions(pause) == [("claim", "alice"), ("release", "alice")]


def test_the_admin_claim_is_post_only_scoped_permissioned_and_csrf_protected(people):
    _, pause = paused_run()
    before = rows(pause)
    alice, _ = page(people["alice"], pause)
    assert alice.get(claim_url(pause)).status_code == 405
    bob, _ = page(people["bob"], pause)
    assert bob.post(claim_url(pause)).status_code == 404  # another tenant's: no such pause
    carol, _ = page(people["carol"], pause)
    assert carol.post(claim_url(pause)).status_code == 403
    strict, _ = page(people["alice"], pause, enforce_csrf_checks=True)
    assert strict.post(claim_url(pause)).status_code == 403
    assert rows(pause) == before


# --- the API ---------------------------------------------------------------------------------

def api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_api_claims_and_releases_and_refuses_with_one_code_each(people):
    _, pause = paused_run()
    claim, release = f"{API}pauses/{pause.pk}/claim/", f"{API}pauses/{pause.pk}/release/"

    got = api(people["alice"]).post(claim)
    assert got.status_code == 200, got.content
    held = Pause.objects.get(pk=pause.pk)
    assert got.json()["claimed_by"] == "alice" and got.json()["pause_id"] == str(pause.pk)
    before = rows(pause)

    refused = api(people["dora"]).post(claim)
    assert (refused.status_code, refused.json()) == (409, {
        "code": "claimed",
        "detail": f"Being reviewed by alice until {clock(held.claimed_until)}."})
    assert api(people["dora"]).post(release).json()["code"] == "not_claimed"
    assert api(people["bob"]).post(claim).json()["code"] == "not_found"
    assert api(people["carol"]).post(claim).json()["code"] == "permission_denied"
    assert APIClient().post(claim).status_code == 401
    assert rows(pause) == before

    freed = api(people["alice"]).post(release)
    assert (freed.status_code, freed.json()["claimed_by"]) == (200, None)
    assert actions(pause) == [("claim", "alice"), ("release", "alice")]


# --- reminders and escalations --------------------------------------------------------------

@pytest.fixture
def notify(settings: Any) -> Any:
    def set_to(**keys: Any) -> None:
        settings.SYMFONIC = {**settings.SYMFONIC, "NOTIFY": {
            "SITE_URL": SITE_URL, "REVIEWER_EMAILS": REVIEWER_EMAILS, **keys}}

    return set_to


@pytest.fixture
def leads(tenants: Any) -> Group:
    """The escalation group: erin (with an address), an inactive member, one without one."""
    group = Group.objects.create(name="leads")
    users = get_user_model().objects
    group.user_set.add(users.create_user("erin", email="erin@example.com"),
                       users.create_user("gone", email="gone@example.com", is_active=False),
                       users.create_user("mute", email=""))
    return group


def reminder_time(pause: Pause) -> Any:
    return pause.expires_at - timedelta(minutes=30)  # within REMIND_BEFORE (1 h)


def escalation_time(pause: Pause) -> Any:
    return pause.expires_at - timedelta(minutes=10)  # within ESCALATE_BEFORE (15 min)


def deliver(event_type: str) -> list[Any]:
    """Attempt every pending delivery of ``event_type``; the emails it sent."""
    mail.outbox.clear()
    for delivery in NotificationDelivery.objects.filter(event_type=event_type,
                                                        status=DeliveryStatus.PENDING):
        assert notifications.attempt(delivery.pk).result == "delivered"
    return list(mail.outbox)


def test_a_pause_nearing_expiry_reminds_its_scopes_reviewers_once_with_a_link_and_no_token(
        people, notify):
    notify()
    _, pause = paused_run()
    when = reminder_time(pause)

    first = notifications.send_reminders(now=when)
    second = notifications.send_reminders(now=when + timedelta(minutes=1))

    assert (first.reminded, second.reminded) == (1, 0)
    assert (first.escalated, second.escalated) == (0, 0)
    sent = deliver(notifications.PAUSE_REMINDER)
    # alice and dora answer acme; carol may only view it, bob reviews globex.
    assert sorted(m.to[0] for m in sent) == ["alice@example.com", "dora@example.com"]
    body = sent[0].body
    link = SITE_URL + reverse("admin:symfonic_django_pause_change", args=[pause.pk])
    assert link in body and "left: answer before" in body
    assert sent[0].subject.startswith("[acme] Reminder:")
    token = pauses.token_for(pause)
    assert all(token not in m.body and token not in m.alternatives[0][0] for m in sent)
    assert Pause.objects.get(pk=pause.pk).reminded_at == when
    decision = Decision.objects.get(pause=pause, action="remind")
    assert (decision.via, decision.actor_label, decision.actor) == ("system", "system", None)
    assert decision.comment == "pause.reminder to the scope's reviewers: 2 email(s), 0 webhook(s)"


def test_with_include_token_the_reminder_carries_it_and_the_escalation_never_does(
        people, notify, leads):
    notify(INCLUDE_TOKEN=True, ESCALATE_TO="leads")
    _, pause = paused_run()
    token = pauses.token_for(pause)
    notifications.send_reminders(now=reminder_time(pause))
    assert all(token in m.body for m in deliver(notifications.PAUSE_REMINDER))
    notifications.send_reminders(now=escalation_time(pause))
    escalated = deliver(notifications.PAUSE_ESCALATED)
    assert escalated and all(token not in m.body and token not in m.alternatives[0][0]
                             for m in escalated)


def test_then_the_escalation_goes_once_to_the_active_members_of_the_group(
        people, notify, leads):
    notify(ESCALATE_TO="leads")
    _, pause = paused_run()
    pauses.claim(pause.pk, actor=people["alice"], via="admin",
                 now=escalation_time(pause) - timedelta(minutes=1))
    notifications.send_reminders(now=reminder_time(pause))

    sweeps = [notifications.send_reminders(now=escalation_time(pause)) for _ in range(2)]

    assert [(s.reminded, s.escalated) for s in sweeps] == [(0, 1), (0, 0)]
    sent = deliver(notifications.PAUSE_ESCALATED)
    assert [m.to for m in sent] == [["erin@example.com"]]
    assert sent[0].subject.startswith("[acme] Escalated:")
    assert "Being reviewed by alice." in sent[0].body
    assert Pause.objects.get(pk=pause.pk).escalated_at == escalation_time(pause)
    assert [a for a, _ in actions(pause)] == ["claim", "remind", "escalate"]
    assert Decision.objects.get(pause=pause, action="escalate").comment == (
        "pause.escalated to the group 'leads': 1 email(s), 0 webhook(s)")


def test_an_answered_or_expired_pause_is_neither_reminded_nor_escalated(people, notify, leads):
    notify(ESCALATE_TO="leads")
    _, answered = paused_run()
    pauses.approve(answered.pk, actor=people["alice"], via="admin")
    assert notifications.send_reminders(now=escalation_time(answered)) == notifications.Sweep(
        reminded=0, escalated=0)

    _, overdue = paused_run()  # past its expiry time, not yet marked expired
    assert notifications.send_reminders(now=overdue.expires_at + timedelta(seconds=1)) == (
        notifications.Sweep(reminded=0, escalated=0))
    assert not NotificationDelivery.objects.filter(
        event_type__in=[notifications.PAUSE_REMINDER, notifications.PAUSE_ESCALATED]).exists()
    assert not Decision.objects.filter(action__in=["remind", "escalate"]).exists()


def test_a_pause_asked_for_less_time_than_remind_before_is_not_reminded(people, notify):
    notify()
    run_pause = paused_run()[1]
    Pause.objects.filter(pk=run_pause.pk).update(
        expires_at=run_pause.created_at + timedelta(minutes=45))
    assert notifications.send_reminders(now=run_pause.created_at + timedelta(minutes=20)) == (
        notifications.Sweep(reminded=0, escalated=0))


def test_with_none_there_is_no_reminder_and_no_escalation(people, notify, leads):
    notify(REMIND_BEFORE=None, ESCALATE_BEFORE=None, ESCALATE_TO="leads")
    _, pause = paused_run()
    assert notifications.send_reminders(now=escalation_time(pause)) == notifications.Sweep(0, 0)
    assert Pause.objects.get(pk=pause.pk).reminded_at is None


def test_webhooks_take_the_reminder_and_the_escalation_signed_and_without_a_token(
        people, notify):
    from standardwebhooks import Webhook

    from .notifications.conftest import Receiver

    receiver = Receiver().start()
    try:
        notify(REVIEWER_EMAILS=None, WEBHOOKS=[{
            "NAME": "ops", "URL": receiver.url, "SECRET": HOOK_SECRET,
            "EVENTS": ["pause.reminder", "pause.escalated"], "INCLUDE_TOKEN": False}])
        _, pause = paused_run()
        assert notifications.send_reminders(now=reminder_time(pause)).reminded == 1
        assert notifications.send_reminders(now=escalation_time(pause)).escalated == 1
        deliver(notifications.PAUSE_REMINDER)
        deliver(notifications.PAUSE_ESCALATED)
        payloads = [Webhook(HOOK_SECRET).verify(r.body, r.headers) for r in receiver.received]
    finally:
        receiver.stop()
    assert [p["type"] for p in payloads] == ["pause.reminder", "pause.escalated"]
    reminder, escalated = (p["data"] for p in payloads)
    assert reminder["pause_id"] == str(pause.pk) and reminder["seconds_left"] == 30 * 60
    assert reminder["claimed_by"] is None and "token" not in reminder
    assert escalated["escalated_to"] is None and escalated["seconds_left"] == 10 * 60


def test_a_sweep_is_the_same_few_queries_for_two_pauses_as_for_six(people, notify):
    notify()

    def sweep(count: int) -> int:
        made = [paused_run()[1] for _ in range(count)]
        when = max(reminder_time(p) for p in made)
        with CaptureQueriesContext(connection) as captured:
            assert notifications.send_reminders(now=when).reminded == count
        return len(captured.captured_queries)

    assert sweep(2) == sweep(6)


def test_the_sweep_takes_a_batch_at_a_time_oldest_expiry_first(people, notify):
    notify()
    made = [paused_run()[1] for _ in range(3)]
    when = max(reminder_time(p) for p in made)
    assert notifications.send_reminders(now=when, limit=2).reminded == 2
    assert notifications.send_reminders(now=when, limit=2).reminded == 1
    assert Decision.objects.filter(action="remind").count() == 3


def test_the_command_sweeps(people, notify, capsys):
    notify()
    paused_run()
    call_command("symfonic_remind")
    assert "reminded 0 pause(s), escalated 0" in capsys.readouterr().out


@pytest.mark.postgres
def test_two_sweeps_racing_in_threads_tell_each_reviewer_once(people, notify):
    notify()
    made = [paused_run()[1] for _ in range(5)]
    when = max(reminder_time(p) for p in made)
    start = threading.Barrier(2)
    results: list[Any] = []
    errors: list[BaseException] = []

    def sweep() -> None:
        from django.db import connection as own

        try:
            start.wait(timeout=10)
            results.append(notifications.send_reminders(now=when))
        except BaseException as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)
        finally:
            own.close()

    threads = [threading.Thread(target=sweep) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert not errors, errors
    assert sum(r.reminded for r in results) == 5
    assert Decision.objects.filter(action="remind").count() == 5
    targets = list(NotificationDelivery.objects.filter(event_type=notifications.PAUSE_REMINDER)
                   .values_list("pause_id", "target"))
    assert len(targets) == len(set(targets)) == 5 * 2  # alice and dora, once per pause


# --- settings ----------------------------------------------------------------------------------

def e101(message: str, hint: str) -> Error:
    return Error(f"SYMFONIC['NOTIFY']{message}", hint=hint, id="symfonic_django.E101")


@override_settings(SYMFONIC={"NOTIFY": {"REMIND_BEFORE": 0, "ESCALATE_BEFORE": "900",
                                        "ESCALATE_TO": ""}})
def test_bad_reminder_settings_are_each_an_e101():
    assert check_notifications() == [
        e101("['REMIND_BEFORE'] must be None or a number of seconds above 0, not 0.",
             "Seconds before a pause expires; the default is 3600, None turns it off."),
        e101("['ESCALATE_BEFORE'] must be None or a number of seconds above 0, not '900'.",
             "Seconds before a pause expires; the default is 900, None turns it off."),
        e101("['ESCALATE_TO'] must be None or the name of a Django auth group, not ''.",
             "Its active members with an email address are sent escalations; None sends none "
             "by email."),
    ]


@override_settings(SYMFONIC={"NOTIFY": {"REMIND_BEFORE": 600, "ESCALATE_BEFORE": 600}})
def test_an_escalation_before_the_reminder_is_an_e101():
    assert check_notifications() == [e101(
        "['ESCALATE_BEFORE'] (600) is not less than REMIND_BEFORE (600): the escalation would "
        "go out before, or with, the reminder.",
        "Escalate closer to the expiry than the reminder, e.g. REMIND_BEFORE 3600 and "
        "ESCALATE_BEFORE 900.")]


@override_settings(SYMFONIC={"NOTIFY": {"REMIND_BEFORE": None, "ESCALATE_BEFORE": 60.5,
                                        "ESCALATE_TO": "leads"}})
def test_good_reminder_settings_are_accepted():
    assert check_notifications() == []
