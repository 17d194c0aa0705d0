"""What the admin's words tell a reviewer, each checked against what is true.

A claim shows wherever the pause is listed; a reviewer who already approved a
two-approver pause reads that she did and how many more are needed, and the
bulk confirmation counts only the pauses it can approve; a paused run whose
pause was answered says what came of it; the plural forms are real plurals (in
English and French); "alice, in the admin" names a channel, not a role; an
answered row shows what ran; a question is a question; a carrier shows by its
label; a refused amount is one readable sentence on its own field. The
viewer's badge and the pages' widths are seen in a browser
(``tests/browser/test_cues_browser.py``).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from symfonic_django import pauses
from symfonic_django.admin import transcript
from symfonic_django.models import AnsweredVia, Pause, PauseKind, TurnEvent
from symfonic_django.turns import execute_run
from tests.testapp.models import Membership, Tenant
from tests.testapp.seed import seed_users

from .admin_pages import bare_pause, login, messages_of, refund_pause
from .conftest import snapshot

pytestmark = pytest.mark.django_db

INBOX = "/admin/symfonic_django/pause/inbox/"
PAUSES = "/admin/symfonic_django/pause/"
RUNS = "/admin/symfonic_django/run/"
FRENCH = {"HTTP_ACCEPT_LANGUAGE": "fr"}


def two_approvers(pause: Pause) -> int:
    return 2


@pytest.fixture
def users(tenants: dict[str, Tenant]) -> dict[str, Any]:
    people = seed_users()
    carol = get_user_model().objects.create_user("carol", password="pw", is_staff=True)
    carol.user_permissions.add(*Permission.objects.filter(
        content_type__app_label="symfonic_django",
        codename__in=["view_pause", "view_run", "answer_pause"]))
    Membership.objects.create(user=carol, tenant=Tenant.objects.get(slug="acme"))
    return {**people, "carol": carol}


@pytest.fixture
def quorum(settings: Any) -> None:
    settings.SYMFONIC = {**settings.SYMFONIC,
                         "APPROVAL_POLICY": "tests.test_cues.two_approvers"}


def text(response: Any) -> str:
    """The page's words as a reader sees them: tags dropped, spaces collapsed."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def user(name: str) -> Any:
    return get_user_model().objects.get(username=name)


# --- claims ----------------------------------------------------------------------------

def test_a_claim_shows_on_the_inbox_card_and_in_the_pause_list(users):
    pause = refund_pause("acme", amount=40, order="ACME-CLAIMED")
    refund_pause("acme", amount=12, order="ACME-FREE")
    pauses.claim(pause.pk, actor=user("carol"), via=AnsweredVia.ADMIN)
    inbox = text(login("alice").get(INBOX))
    assert inbox.count("Being reviewed by carol") == 1
    listing = text(login("alice").get(PAUSES))
    assert listing.count("Being reviewed by carol") == 1
    # Her own claim reads as hers.
    mine = text(login("carol").get(INBOX))
    assert mine.count("You are reviewing it") == 1 and "by carol" not in mine


# --- quorum, per reviewer --------------------------------------------------------------

def test_after_her_first_of_two_approvals_the_inbox_and_page_say_she_approved(users, quorum):
    pause = refund_pause("acme", amount=40, order="ACME-Q")
    pauses.approve(pause.pk, actor=user("alice"), via=AnsweredVia.ADMIN)
    inbox = text(login("alice").get(INBOX))
    assert "You approved; waiting for 1 more approval" in inbox
    assert "1 of 2 approvals" not in inbox
    page = text(login("alice").get(f"{PAUSES}{pause.pk}/change/"))
    assert "You approved; waiting for 1 more approval" in page
    # Carol, who has not approved, still reads where it stands.
    assert "1 of 2 approvals" in text(login("carol").get(INBOX))


def test_after_her_approval_her_page_offers_only_what_she_may_still_do(users, quorum):
    """A second approval from her is refused, so it is not offered: she may still reject.
    Carol, who has not approved, is offered the approval."""
    pause = refund_pause("acme", amount=40, order="ACME-O")
    pauses.approve(pause.pk, actor=user("alice"), via=AnsweredVia.ADMIN)
    hers = login("alice").get(f"{PAUSES}{pause.pk}/change/").content.decode()
    assert 'value="approve"' not in hers and 'value="reject"' in hers
    assert 'value="approve"' in login("carol").get(f"{PAUSES}{pause.pk}/change/").content.decode()
    before = snapshot(pause)
    refused = login("alice").post(f"{PAUSES}{pause.pk}/change/", {"decision_0": "approve"})
    assert refused.status_code == 200 and snapshot(pause) == before  # a form error, nothing moved


def test_the_answer_message_after_a_first_approval_says_reviewer_in_the_singular(users, quorum):
    pause = refund_pause("acme", amount=40, order="ACME-M")
    response = login("alice").post(f"{PAUSES}{pause.pk}/change/", {"decision_0": "approve"})
    said = " ".join(messages_of(response))
    assert "once 1 more reviewer approves" in said, said
    assert "(s)" not in said


def test_the_bulk_confirmation_counts_only_what_it_can_approve_and_says_why_not(users, quorum):
    approved = refund_pause("acme", amount=40, order="ACME-B1")
    pauses.approve(approved.pk, actor=user("alice"), via=AnsweredVia.ADMIN)
    fresh = refund_pause("acme", amount=12, order="ACME-B2")
    question = bare_pause("acme", kind=PauseKind.QUESTION)
    response = login("alice").post(PAUSES, {
        "action": "approve_selected",
        "_selected_action": [str(p.pk) for p in (approved, fresh, question)]})
    assert response.status_code == 200
    page = text(response)
    assert "Approve 3 pauses?" not in page
    assert "Approve 1 of the 3 selected pauses?" in page
    assert 'value="Yes, approve 1"' in response.content.decode()
    notes = dict(zip([i["pause"].pk for i in response.context["items"]],
                     [i["note"] for i in response.context["items"]], strict=True))
    assert "You already approved it" in notes[approved.pk]
    assert "yours counts" not in notes[approved.pk]
    assert "yours counts as one of them" in notes[fresh.pk]
    assert "It is a question" in notes[question.pk]


# --- the run list ----------------------------------------------------------------------

def test_the_run_list_says_what_came_of_an_answered_pause(users):
    pause = refund_pause("acme", amount=40, order="ACME-R")
    continuation = pauses.approve(pause.pk, actor=user("alice"), via=AnsweredVia.ADMIN,
                                  ).continuation
    assert continuation is not None
    execute_run(continuation.pk)
    listing = text(login("alice").get(RUNS))
    assert (f"answered → continued in run {str(continuation.pk)[:8]}, completed"
            in listing), listing


# --- words -----------------------------------------------------------------------------

def test_french_approvals_count_in_real_plurals(users, quorum):
    pause = refund_pause("acme", amount=40, order="ACME-FR")
    pauses.approve(pause.pk, actor=user("carol"), via=AnsweredVia.ADMIN)
    inbox = text(login("alice").get(INBOX, **FRENCH))
    assert "(s)" not in inbox
    assert "1 approbation sur 2" in inbox


def test_who_answered_reads_as_a_channel_not_a_role(users):
    pause = refund_pause("acme", amount=40, order="ACME-W")
    pauses.reject(pause.pk, actor=user("alice"), via=AnsweredVia.ADMIN)
    listing = text(login("alice").get(PAUSES))
    assert "alice (admin)" not in listing
    assert "alice, in the admin" in listing


def test_an_edited_answer_shows_what_ran_not_what_was_proposed(users):
    pause = refund_pause("acme", amount=99.99, order="ACME-E")
    pauses.approve(pause.pk, actor=user("alice"), via=AnsweredVia.ADMIN,
                   edited_args={"order_id": "ACME-E", "amount": 50})
    for page in (login("alice").get(PAUSES), login("alice").get(INBOX + "?show=answered")):
        assert "amount: 99.99 → 50" in text(page)


def test_a_question_in_the_transcript_says_the_agent_asked_a_question():
    asked = TurnEvent(seq=1, type="pause.requested",
                      data={"pause_id": "p", "kind": "question", "prompt": {"question": "Which?"},
                            "expires_at": ""})
    approval = TurnEvent(seq=1, type="pause.requested",
                         data={"pause_id": "p", "kind": "approval", "prompt": {},
                               "expires_at": ""})
    assert transcript([asked]) == [{"kind": "note", "text": "The agent asked a question."}]
    assert transcript([approval]) == [{"kind": "note",
                                       "text": "The agent asked for a decision."}]


CARRIER_SCHEMA = {"type": "object", "properties": {"carrier": {
    "oneOf": [{"const": "dhl", "title": "DHL Express"}, {"const": "ups", "title": "UPS"}]}},
    "required": ["carrier"]}


def test_a_carrier_is_offered_and_shown_by_its_label_from_the_schema(users):
    pause = bare_pause("acme", kind=PauseKind.QUESTION, prompt={"question": "Which carrier?"},
                       answer_schema=CARRIER_SCHEMA)
    asking = login("alice").get(f"{PAUSES}{pause.pk}/change/").content.decode()
    assert re.search(r'<option value="&quot;dhl&quot;"[^>]*>DHL Express</option>', asking)
    response = login("alice").post(f"{PAUSES}{pause.pk}/change/", {"q-carrier": '"dhl"'})
    assert response.status_code == 302
    assert Pause.objects.get(pk=pause.pk).answer == {"carrier": "dhl"}
    answered = login("alice").get(f"{PAUSES}{pause.pk}/change/").content.decode()
    assert re.search(r"<td>carrier</td>\s*<td>DHL Express</td>", answered), answered


def test_the_example_carriers_have_labels():
    from tests.testapp.agents import CARRIER_ANSWER_SCHEMA
    choices = CARRIER_ANSWER_SCHEMA["properties"]["carrier"]["oneOf"]
    assert {c["const"]: c["title"] for c in choices}["dhl"] == "DHL"


def test_an_amount_off_its_step_is_one_readable_error_on_its_field(users):
    pause = bare_pause("acme", prompt={
        "action_requests": [{"name": "refund", "args": {"order_id": "V-1", "amount": 5}}],
        "review_configs": [{"action_name": "refund", "allowed_decisions": ["approve", "edit"],
                            "args_schema": {
                                "type": "object", "required": ["order_id", "amount"],
                                "properties": {"order_id": {"type": "string"},
                                               "amount": {"type": "number",
                                                          "multipleOf": 0.01}}}}]})
    response = login("alice").post(f"{PAUSES}{pause.pk}/change/", {
        "decision_0": "edit", "args_0.order_id": "V-1", "args_0.amount": "50.123"})
    assert response.status_code == 200
    page = response.content.decode()
    assert "$.amount" not in text(response)
    assert "is not a multiple of" not in text(response)
    assert "Amount: Enter a multiple of 0.01." in text(response)  # the page's message
    # Only the amount is marked, with its reason next to it.
    assert page.count('class="symfonic-arg-input errors"') == 1
    assert 'class="form-row symfonic-args-editor errors"' not in page
    marked = page.split('class="symfonic-arg-input errors"')[1].split("</div>")[0]
    assert "Enter a multiple of 0.01." in marked and 'name="args_0.amount"' in marked


# --- bulk decisions from the inbox ---------------------------------------------------

def test_the_inbox_offers_bulk_decisions_that_lead_to_the_confirmation(users):
    first, second = (refund_pause("acme", amount=a, order=f"ACME-I{a}") for a in (40, 12))
    alice = login("alice")
    inbox = alice.get(INBOX).content.decode()
    assert inbox.count('name="_selected_action"') == 2
    assert 'value="approve_selected"' in inbox and 'value="reject_selected"' in inbox
    response = alice.post(PAUSES, {"index": "0", "action": "approve_selected",
                                   "_selected_action": [str(first.pk), str(second.pk)]})
    assert response.status_code == 200
    assert "Approve 2 pauses?" in text(response)  # the confirmation, nothing decided yet
    assert Pause.objects.filter(status="pending").count() == 2
    # Bob may not answer acme's pauses: he is offered nothing of theirs; a reviewer
    # without the answer permission gets no boxes.
    assert 'name="_selected_action"' not in login("bob").get(INBOX).content.decode()


def test_the_review_pages_transcript_marks_a_rejected_tool_call_not_done():
    said = [TurnEvent(seq=1, type="tool.started",
                      data={"tool_call_id": "b", "name": "refund", "args": {"amount": 900}}),
            TurnEvent(seq=2, type="tool.completed",
                      data={"tool_call_id": "b", "name": "refund", "args": {"amount": 900},
                            "result": "not this one", "status": "error"})]
    (card,) = transcript(said)
    assert card["failed"] is True
