"""The review page: inputs from the action's schema, a comment with every decision,
edits as changes against the proposal, what each decision will do, the agent's
transcript, and the state of the pause.

The form only builds the ``HITLResponse``; ``pauses.answer_pause`` checks it
again, so nothing typed into the page is trusted (each refusal changes nothing).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.urls import reverse

from symfonic_django import pauses
from symfonic_django.models import Decision, Pause, PauseKind, PauseStatus, RunStatus
from symfonic_django.turns import execute_run
from tests.testapp.models import Tenant
from tests.testapp.seed import seed_users

from .admin_pages import bare_pause, login, page, refund_pause, ship_pause
from .conftest import snapshot

pytestmark = pytest.mark.django_db

@pytest.fixture
def users(tenants: dict[str, Tenant]) -> dict[str, Any]:
    return seed_users()


def said(response: Any) -> str:
    return " ".join(str(m) for m in get_messages(response.wsgi_request))


# --- inputs from the schema -------------------------------------------------------------

def test_a_refund_is_edited_through_one_input_per_argument(users):
    pause = refund_pause("acme", amount=99.99, order="ACME-1")
    response = login("alice").get(page(pause))
    form = response.context["form"]
    widgets = {name: type(form.fields[name].widget).__name__
               for name in ("args_0.order_id", "args_0.amount")}
    assert widgets == {"args_0.order_id": "TextInput", "args_0.amount": "NumberInput"}
    assert form["args_0.amount"].value() == 99.99  # the inputs start from the proposal
    body = response.content.decode()
    assert 'name="args_0.amount"' in body and 'data-proposed="99.99"' in body
    assert '<textarea name="args_0"' not in body  # no JSON editor beside the inputs


def test_enums_booleans_integers_and_nested_objects_become_inputs_and_fieldsets(users):
    pause = ship_pause()
    alice = login("alice")
    response = alice.get(page(pause))
    form = response.context["form"]
    assert {name: type(field.widget).__name__ for name, field in form.fields.items()
            if name.startswith("args_0.")} == {
        "args_0.carrier": "Select", "args_0.express": "CheckboxInput",
        "args_0.parcels": "NumberInput", "args_0.address.city": "TextInput",
        "args_0.address.zip": "TextInput"}
    assert "<legend>address</legend>" in response.content.decode()
    response = alice.post(page(pause), {
        "decision_0": "edit", "args_0.carrier": '"dhl"', "args_0.express": "on",
        "args_0.parcels": "3", "args_0.address.city": "Paris", "args_0.address.zip": "69001"})
    assert response.status_code == 302, said(response)
    pause.refresh_from_db()
    assert pause.answer == {"decisions": [{"type": "edit", "edited_action": {
        "name": "ship", "args": {"carrier": "dhl", "express": True, "parcels": 3,
                                 "address": {"city": "Paris", "zip": "69001"}}}}]}


@pytest.mark.parametrize("schema", [
    None,  # no schema at all
    {"type": "object", "properties": {"items": {"type": "array"}}},
    {"type": "object", "properties": {"to": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}},
    {"type": "object", "properties": {"x-y": {"type": "string"}}},  # no input can carry the name
    {"type": "object", "properties": {"qty": {"type": "integer"}}},  # an argument it does not name
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {}}},
])
def test_schemas_the_inputs_cannot_express_get_the_json_editor(users, schema):
    args = {"items": [1]} if schema and "items" in schema["properties"] else {"qty": 1}
    if schema and "to" in schema["properties"]:
        args = {"to": "x"}
    if schema and "x-y" in schema["properties"]:
        args = {"x-y": "z"}
    if schema and "a" in schema["properties"]:
        args = {"a": 1}
    if schema and "qty" in schema["properties"]:
        schema = {**schema, "properties": {"other": {"type": "string"}}}
    pause = ship_pause(schema, args)
    form = login("alice").get(page(pause)).context["form"]
    assert [name for name in form.fields if name.startswith("args_0")] == ["args_0"]


def test_inputs_of_an_action_not_being_edited_are_ignored(users):
    pause = refund_pause("acme", amount=40, order="ACME-2")
    response = login("alice").post(page(pause), {"decision_0": "approve",
                                                 "args_0.amount": "not a number",
                                                 "args_0.order_id": ""})
    assert response.status_code == 302, said(response)
    assert Pause.objects.get(pk=pause.pk).answer == {"decisions": [{"type": "approve"}]}


@pytest.mark.parametrize(("amount", "words"), [
    # A value its own argument's schema refuses is said on that input, in words.
    ("-5", "Amount: Enter more than 0."),
    ("12.345", "Amount: Enter a multiple of 0.01."),
    ("abc", "Enter a number"),
    ("1e999", "Enter a number"),
    ("nan", "Enter a number"),
    ("", "do not fit its schema"),  # a required argument left out
])
def test_an_edit_outside_the_schema_is_refused_in_words_and_changes_nothing(users, amount,
                                                                          words):
    pause = refund_pause("acme", amount=40, order="ACME-3")
    before = snapshot(pause)
    response = login("alice").post(page(pause), {"decision_0": "edit", "args_0.amount": amount,
                                                 "args_0.order_id": "ACME-3"})
    assert response.status_code == 200
    assert "The answer was not sent" in said(response) and words in said(response)
    assert response.context["form"]["args_0.amount"].value() == amount  # kept as typed
    assert snapshot(pause) == before and not Decision.objects.filter(pause=pause).exists()


@pytest.mark.parametrize("order_id", ["A\x00B", "x" * 101])
def test_text_the_database_or_the_schema_refuses_is_a_form_error_not_a_500(users, order_id):
    pause = refund_pause("acme", amount=40, order="ACME-4")
    before = snapshot(pause)
    response = login("alice").post(page(pause), {"decision_0": "edit", "args_0.amount": "5",
                                                 "args_0.order_id": order_id})
    assert response.status_code == 200 and "The answer was not sent" in said(response)
    assert snapshot(pause) == before


def test_a_post_of_the_arguments_as_json_still_edits(users):
    pause = refund_pause("acme", amount=40, order="ACME-5")
    login("alice").post(page(pause), {"decision_0": "edit",
                                      "args_0": '{"order_id": "ACME-5", "amount": 7.5}',
                                      "args_0.amount": "1"})
    assert Pause.objects.get(pk=pause.pk).answer["decisions"][0]["edited_action"]["args"] == {
        "order_id": "ACME-5", "amount": 7.5}


# --- the diff, the comment, what each decision does ---------------------------------------

def test_an_edit_is_shown_as_changes_against_the_proposal_on_the_page_and_in_the_audit(users):
    pause = refund_pause("acme", amount=99.99, order="ACME-6")
    alice = login("alice")
    response = alice.post(page(pause), {"decision_0": "edit", "args_0.amount": "50",
                                        "args_0.order_id": "ACME-6",
                                        "comment": "customer kept half"})
    assert response.status_code == 302, said(response)
    pause.refresh_from_db()
    assert pause.answer["decisions"][0]["edited_action"]["args"] == {"order_id": "ACME-6",
                                                                     "amount": 50}
    decision = Decision.objects.get(pause=pause)
    assert (decision.action, decision.comment) == ("edit", "customer kept half")
    body = alice.get(page(pause)).content.decode()
    decided = body[body.index('id="decision"'):]
    assert "<td>amount</td><td><del>99.99</del></td><td><ins>50</ins></td>" in decided
    assert "order_id" not in decided.split("Edited to")[1].split("</table>")[0]  # unchanged
    assert "amount: <del>99.99</del> → <ins>50</ins>" in body  # the audit row
    assert "customer kept half" in body
    audit = alice.get(reverse("admin:symfonic_django_decision_change", args=[decision.pk]))
    assert "amount: <del>99.99</del> → <ins>50</ins>" in audit.content.decode()


@pytest.mark.parametrize(("data", "comment"), [
    ({"decision_0": "approve", "comment": "looks right"}, "looks right"),
    ({"decision_0": "reject", "message_0": "duplicate", "comment": "same as ACME-1"},
     "same as ACME-1\nduplicate"),
    ({"decision_0": "respond", "message_0": "ask for a receipt"}, "ask for a receipt"),
])
def test_a_comment_goes_with_every_decision(users, data, comment):
    pause = refund_pause("acme", order="ACME-7")
    assert login("alice").post(page(pause), data).status_code == 302
    assert Decision.objects.get(pause=pause).comment == comment


def test_a_question_is_answered_with_a_comment(users):
    pause = bare_pause(kind=PauseKind.QUESTION, answer_schema={"type": "string"})
    login("alice").post(page(pause), {"q-answer": "blue", "q-review_comment": "asked sales"})
    pause.refresh_from_db()
    assert pause.answer == "blue"
    assert Decision.objects.get(pause=pause).comment == "asked sales"


def test_a_comment_that_cannot_be_stored_is_refused_and_changes_nothing(users):
    pause = refund_pause("acme", order="ACME-8")
    before = snapshot(pause)
    response = login("alice").post(page(pause), {"decision_0": "approve", "comment": "a\x00b"})
    assert response.status_code == 200 and snapshot(pause) == before


def test_each_allowed_decision_says_in_one_line_what_it_will_do(users):
    pause = refund_pause("acme", amount=99.99, order="ACME-9")
    body = login("alice").get(page(pause)).content.decode()
    approve = body.split('data-decision="approve"><strong>Approve:</strong> ')[1].split("</li>")[0]
    assert approve.startswith("the agent runs refund(") and "amount=99.99" in approve
    assert "order_id=ACME-9" in approve
    for line in ('data-decision="edit"><strong>Edit &amp; approve:</strong> the agent runs '
                 "refund with the arguments you set",
                 'data-decision="reject"><strong>Reject:</strong> refund does not run',
                 'data-decision="respond"><strong>Respond:</strong> refund does not run'):
        assert line in body


def test_with_several_approvers_approving_says_it_counts_as_one(users, settings):
    settings.SYMFONIC = {**settings.SYMFONIC,
                         "APPROVAL_POLICY": "tests.test_approvals.two_approvers"}
    pause = refund_pause("acme")
    body = login("alice").get(page(pause)).content.decode()
    assert "counts as one of 2 approvals; the agent runs refund(" in body


# --- the transcript -----------------------------------------------------------------------

def test_the_agents_messages_read_as_text_and_its_tool_calls_as_cards(users):
    pause = refund_pause("acme", amount=40, order="ACME-10")
    alice = login("alice")
    body = alice.get(page(pause)).content.decode()
    asked = body[body.index('id="asked-transcript"'):]
    assert ('<p class="symfonic-said">Order ACME-10 qualifies for a refund of 40. '
            "I need a person to approve it.</p>") in asked
    assert "The agent asked for a decision." in asked
    alice.post(page(pause), {"decision_0": "approve"})
    pause.refresh_from_db()
    assert execute_run(pause.continuation_id) == RunStatus.COMPLETED
    body = alice.get(page(pause)).content.decode()
    story = body[body.index('id="continuation-transcript"'):]
    card = story[story.index('class="symfonic-tool-card"'):]
    assert "<strong>refund</strong>" in card and "<td>order_id</td><td>ACME-10</td>" in card
    assert "symfonic-tool-result" in card and "&quot;amount&quot;: &quot;40.00&quot;" in card
    # The deltas of the closing message are one paragraph, not one row each.
    assert story.count('class="symfonic-said"') == 1 and "on order ACME-10" in story


# --- the state of the pause -----------------------------------------------------------------

def object_tools(body: str) -> str:
    return body[body.index('class="object-tools"'):].split("</ul>")[0]


def test_a_pending_pause_offers_the_run_that_asked_and_the_form(users):
    pause = refund_pause("acme")
    response = login("alice").get(page(pause))
    tools = object_tools(response.content.decode())
    assert "Run that asked" in tools and "Continuation" not in tools
    assert "paused: waiting for this answer" in response.content.decode()
    assert response.context["form"] is not None


def test_an_answered_pause_never_says_paused_and_offers_its_continuation(users):
    pause = refund_pause("acme")
    pauses.approve(pause.pk, actor=get_user_model().objects.get(username="admin"))
    response = login("alice").get(page(pause))
    body = response.content.decode()
    tools = object_tools(body)
    assert "Continuation run" in tools and "Run that asked" not in tools
    assert "Paused run" not in body and "(paused" not in body
    assert response.context["form"] is None and "Send decision" not in body


@pytest.mark.parametrize("end", ["expire", "cancel"])
def test_an_expired_or_cancelled_pause_shows_the_failed_run_and_no_form(users, end):
    pause = refund_pause("acme")
    if end == "expire":
        Pause.objects.filter(pk=pause.pk).update(expires_at=pause.created_at)
        pauses.expire(pause.pk)
    else:
        pauses.cancel(pause.pk)
    pause.refresh_from_db()
    assert pause.status in (PauseStatus.EXPIRED, PauseStatus.CANCELLED)
    response = login("alice").get(page(pause))
    body = response.content.decode()
    assert "Run that asked" in object_tools(body) and "(failed)" in body
    assert response.context["form"] is None and "Send decision" not in body
    assert f"symfonic-decision-{pause.status}" in body
