"""Proposals are held to their own schema (issue 10, finding 3).

An agent may not ask a person to approve arguments its own ``args_schema``
rules out: ``request_pause`` refuses them before any row is written and the
turn fails ``invalid_proposal``. The example's refund says what a refund is
(above 0, at most 10,000, at most 2 decimal places), refuses a bad input
before it pauses, refuses an edit outside it, and stores exactly what was
approved.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import jsonschema
import pytest
from rest_framework.test import APIClient

from symfonic_django import hitl, pauses
from symfonic_django.exceptions import InvalidAnswer, InvalidProposal, InvalidRunInput
from symfonic_django.models import Decision, Pause, Run, RunStatus, TurnEvent
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run
from tests.testapp.agents import REFUND_ARGS_SCHEMA
from tests.testapp.models import Refund
from tests.testapp.seed import seed_users

from .conftest import paused_run, snapshot

pytestmark = pytest.mark.django_db(transaction=True)


def event_types(run: Run) -> list[str]:
    return list(TurnEvent.objects.filter(run=run).order_by("seq").values_list("type", flat=True))


def failed_turn(agent: str, input: Any) -> Run:
    """Run a first turn that must fail; return it, after checking it left nothing behind."""
    run = start_run(agent, input, scope="acme", dispatch=False)
    assert execute_run(run.pk) == "failed"
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert Pause.objects.count() == 0  # no pause, so nobody can approve it
    assert Run.objects.count() == 1  # and no continuation
    assert Decision.objects.count() == 0 and Refund.objects.count() == 0
    assert "pause.requested" not in event_types(run)
    failed = TurnEvent.objects.get(run=run, type="turn.failed").data
    assert failed == run.error
    return run


# --- any agent ---------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "schema", "violation"), [
    ({"qty": 0}, None, "$.qty: 0 is less than the minimum of 1"),
    ({"qty": "1"}, None, "$.qty: '1' is not of type 'integer'"),
    ({}, None, "'qty' is a required property"),
    ({"qty": 1}, {"type": "integr"}, "The args_schema of 'ship' is not a valid JSON Schema"),
    ({"qty": 1}, {"multipleOf": 0}, "The args_schema of 'ship' is not a valid JSON Schema"),
])
def test_args_outside_their_own_schema_fail_the_turn_with_no_pause(tenants, args, schema,
                                                                    violation):
    input = {"args": args, **({"schema": schema} if schema is not None else {})}
    run = failed_turn("proposal", input)
    assert run.error["code"] == "invalid_proposal"
    assert "'ship'" in run.error["message"] and violation in run.error["message"]
    # What the agent said before proposing stays; the refused proposal left no trace.
    assert event_types(run) == ["turn.started", "message.delta", "turn.failed"]


def test_args_inside_their_schema_still_pause(tenants):
    run, pause = paused_run("proposal", {"args": {"qty": 2}})
    assert run.status == RunStatus.PAUSED
    assert pause.prompt["action_requests"][0]["args"] == {"qty": 2}


def test_create_pause_refuses_before_writing(tenants):
    """The refusal is raised by the pause module itself, whoever calls it."""
    from symfonic_django.binding import PauseBinding

    run = start_run("noop", {}, scope="acme", dispatch=False)
    prompt = {"action_requests": [{"name": "ship", "args": {"qty": float("nan")}}]}
    binding = PauseBinding(pin=None, scope=None, run_id=str(run.pk), root_run_id=str(run.pk),
                           session_id="", thread_id="", checkpoint_id=None)
    with pytest.raises(InvalidProposal, match="arguments of 'ship' are not JSON"):
        pauses.create_pause(run=run, binding=binding, kind="approval", prompt=prompt)
    assert Pause.objects.count() == 0


# --- the refund agent's input ------------------------------------------------------------

@pytest.mark.parametrize(("input", "violation"), [
    ({"order_id": "A-1", "amount": -500}, "$.amount: -500 is less than or equal to the minimum of 0"),
    ({"order_id": "A-1", "amount": 0}, "$.amount: 0 is less than or equal to the minimum of 0"),
    ({"order_id": "A-1", "amount": 0.004}, "$.amount: 0.004 is not a multiple of 0.01"),
    ({"order_id": "A-1", "amount": 1e300}, "is greater than the maximum of 10000"),
    ({"order_id": "A-1", "amount": 10000.001}, "is greater than the maximum of 10000"),
    ({"order_id": "A-1", "amount": 10000.01}, "$.amount: 10000.01 is greater than the maximum"),
    ({"order_id": "A-1", "amount": "12"}, "$.amount: '12' is not of type 'number'"),
    ({"order_id": "A-1", "amount": True}, "$.amount: True is not of type 'number'"),
    ({"order_id": "A-1"}, "'amount' is a required property"),
    ({"order_id": "", "amount": 5}, "$.order_id: '' should be non-empty"),
    ({"order_id": 7, "amount": 5}, "$.order_id: 7 is not of type 'string'"),
    ({"order_id": "A" * 101, "amount": 5}, "is too long"),
    ("12", "'12' is not of type 'object'"),
])
def test_refund_with_a_bad_input_is_refused_before_a_run_exists(tenants, input, violation):
    """The refund agent declares its input_schema: start_run refuses, writing nothing."""
    with pytest.raises(InvalidRunInput) as refused:
        start_run("refund", input, scope="acme", dispatch=False)
    assert refused.value.code == "invalid_request"
    assert violation in refused.value.detail
    assert not Run.objects.exists() and not TurnEvent.objects.exists()


@pytest.mark.parametrize(("input", "violation"), [
    ({"order_id": "A-1", "amount": -500}, "$.amount: -500 is less than or equal to the minimum of 0"),
    ({"order_id": "A-1", "amount": 0.004}, "$.amount: 0.004 is not a multiple of 0.01"),
    ({"order_id": 7, "amount": 5}, "$.order_id: 7 is not of type 'string'"),
])
def test_a_refund_run_that_got_past_start_run_still_fails_before_it_pauses(
        tenants, input, violation):
    """Defence in depth: a run row written some other way (an older release, a data
    migration) meets the agent's own check, which fails the turn before it speaks."""
    run = Run(agent="refund", input=input, scope_key="acme")
    run.root_id = run.id
    run.save(force_insert=True)
    assert execute_run(run.pk) == "failed"
    run.refresh_from_db()
    assert run.error["code"] == "invalid_proposal"
    assert run.error["message"].startswith(
        "The proposed arguments of 'refund' do not fit its args_schema: ")
    assert violation in run.error["message"]
    assert event_types(run) == ["turn.started", "turn.failed"]
    assert not Pause.objects.exists() and not Refund.objects.exists()


def test_refund_schema_matches_the_refund_row():
    """What the schema accepts, the columns hold: no rounding, no truncation."""
    amount = Refund._meta.get_field("amount")
    order_id = Refund._meta.get_field("order_id")
    properties = REFUND_ARGS_SCHEMA["properties"]
    assert properties["order_id"]["maxLength"] == order_id.max_length
    assert Decimal(str(properties["amount"]["multipleOf"])).as_tuple().exponent == (
        -amount.decimal_places)
    assert len(str(int(properties["amount"]["maximum"]))) <= (amount.max_digits
                                                                - amount.decimal_places)


def test_cents_that_jsonschema_alone_refuses_are_accepted():
    """jsonschema's own multipleOf divides floats (19.99 / 0.01 == 1998.9999999999998) and
    refuses about one cent value in six; the app checks the decimal and refuses none."""
    stock = jsonschema.Draft202012Validator(REFUND_ARGS_SCHEMA["properties"]["amount"])
    cents = [float(f"{c // 100}.{c % 100:02d}") for c in range(1, 5_001)]  # 0.01 to 50.00
    refused_by_stock = [amount for amount in cents if not stock.is_valid(amount)]
    assert len(refused_by_stock) > len(cents) // 10
    for amount in refused_by_stock + [19.99, 1234.56, 9999.99]:
        hitl.validate_proposal({
            "action_requests": [{"name": "refund", "args": {"order_id": "C", "amount": amount}}],
            "review_configs": [{"action_name": "refund", "allowed_decisions": ["approve"],
                                "args_schema": REFUND_ARGS_SCHEMA}]})


# --- edits -------------------------------------------------------------------------------

@pytest.mark.parametrize(("amount", "violation"), [
    (0.004, "0.004 is not a multiple of 0.01"),
    (-1, "-1 is less than or equal to the minimum of 0"),
    (1e300, "1e+300 is greater than the maximum of 10000"),
    (10000.01, "10000.01 is greater than the maximum of 10000"),
    ("12", "'12' is not of type 'number'"),
    (float("nan"), "not JSON"),
    (float("inf"), "not JSON"),
])
def test_edit_outside_the_schema_is_refused_and_the_pause_is_unchanged(tenants, amount,
                                                                        violation):
    run, pause = paused_run("refund", {"order_id": "E-1", "amount": 40})
    before = snapshot(pause)
    with pytest.raises(InvalidAnswer) as refused:
        pauses.approve(pause.pk, edited_args={"order_id": "E-1", "amount": amount})
    assert refused.value.code == "invalid_answer"
    assert violation in refused.value.detail and "'refund'" in refused.value.detail
    assert snapshot(pause) == before
    assert Decision.objects.count() == 0 and Refund.objects.count() == 0
    assert Run.objects.count() == 1


# --- what is stored ----------------------------------------------------------------------

def approve_and_run(pause: Pause, edited_amount: Any = None) -> Run:
    edited = None if edited_amount is None else {"order_id": "S-1", "amount": edited_amount}
    continuation = pauses.approve(pause.pk, edited_args=edited).continuation
    assert continuation is not None
    assert execute_run(continuation.pk) == "completed"
    continuation.refresh_from_db()
    return continuation


@pytest.mark.parametrize(("proposed", "edited", "stored"), [
    (19.99, None, "19.99"),
    (40, 19.99, "19.99"),
    (0.07, None, "0.07"),
    (40, 1234.56, "1234.56"),
    (12.5, None, "12.50"),
    (0.01, None, "0.01"),  # the bounds are accepted
    (10000, None, "10000.00"),
    (40, 10000, "10000.00"),
    (40, 0.01, "0.01"),
])
def test_the_refund_stores_exactly_what_was_approved(tenants, proposed, edited, stored):
    _, pause = paused_run("refund", {"order_id": "S-1", "amount": proposed})
    continuation = approve_and_run(pause, edited)
    refund = Refund.objects.get()
    assert refund.amount == Decimal(stored) and str(refund.amount) == stored
    assert continuation.output == {"refunded": True, "refund_id": refund.pk,
                                   "order_id": "S-1", "amount": stored}
    tool = TurnEvent.objects.get(run=continuation, type="tool.completed").data
    assert tool["result"]["amount"] == stored


# --- from outside ------------------------------------------------------------------------

@pytest.mark.parametrize("amount", [0.004, -1, 1e300])
def test_an_edit_through_the_api_outside_the_schema_is_a_400_and_changes_nothing(tenants,
                                                                                amount):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {seed_users()['alice']['token']}")
    _, pause = paused_run("refund", {"order_id": "H-1", "amount": 40})
    before = snapshot(pause)
    response = client.post(f"/api/symfonic/pauses/{pause.pk}/approve/",
                           {"edited_args": {"order_id": "H-1", "amount": amount}}, format="json")
    body = response.json()
    assert (response.status_code, body["code"]) == (400, "invalid_answer"), body
    assert body["detail"].startswith("Edited arguments for 'refund' do not fit its schema: ")
    assert body["detail"].endswith(".")
    assert snapshot(pause) == before
    assert Decision.objects.count() == 0 and Refund.objects.count() == 0
