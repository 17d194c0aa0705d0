"""The refund agent: proposes a refund, waits for approval, then records it.

Registered as ``refund``; input ``{"order_id": str, "amount": number}``, the
amount above 0, at most 10,000, with at most 2 decimal places. The input is
the proposed refund's arguments, so an input outside ``REFUND_ARGS_SCHEMA``
fails the turn with ``invalid_proposal`` before any pause exists.

``slow_refund`` is the same agent at a pace a person can watch: approved, it
streams its confirmation word by word over several seconds, so a reviewer who
approves its pause sees the continuation arrive in the live viewer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from decimal import Decimal
from typing import Any

from symfonic_django import afenced, request_pause
from symfonic_django.agents import NewTurn, ResumedTurn
from symfonic_django.events import (
    Event,
    MessageCompleted,
    MessageDelta,
    ToolCompleted,
    ToolStarted,
    TurnCompleted,
)
from symfonic_django.hitl import validate_proposal

#: What a refund is. ``multipleOf: 0.01`` is "at most two decimal places": the app
#: checks it on the decimal the number is written as (jsonschema on its own divides
#: binary floats and refuses 19.99). Within these bounds every amount fits
#: ``Refund.amount`` (12 digits, 2 places) exactly, and ``order_id`` fits its column.
REFUND_ARGS_SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "minLength": 1, "maxLength": 100},
        "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": 10000,
                   "multipleOf": 0.01},
    },
    "required": ["order_id", "amount"],
    "additionalProperties": False,
}

#: The input of the agents that take several refunds at once (``refund_graph``,
#: ``refund_pydantic``, ``refund_openai``): 1 to 5, each as the plain ``refund`` takes it.
REFUNDS_INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "refunds": {"type": "array", "items": REFUND_ARGS_SCHEMA, "minItems": 1, "maxItems": 5},
    },
    "required": ["refunds"],
    "additionalProperties": False,
}

#: What a reviewer may do with a proposed refund (``refund_graph``'s too).
REFUND_DECISIONS = ["approve", "edit", "reject", "respond"]

CENT = Decimal("0.01")


def describe_refund(args: dict[str, Any]) -> str:
    """What a reviewer reads about a proposed refund (``refund_graph``'s too)."""
    return f"Refund {args.get('amount')} on order {args.get('order_id')}"


def refund_prompt(args: dict[str, Any]) -> dict[str, Any]:
    """The approval the agent asks for: one ``refund`` action held to its schema."""
    return {
        "action_requests": [{"name": "refund", "args": args, "description": describe_refund(args)}],
        "review_configs": [{
            "action_name": "refund",
            "allowed_decisions": REFUND_DECISIONS,
            "args_schema": REFUND_ARGS_SCHEMA,
        }],
    }


def record_refund(order_id: str, amount: Any, run_id: str) -> dict[str, Any]:
    """Store the approved refund exactly as approved; the result says what the row holds.

    One row per run and order id: recording the same order again in the same run
    (the effect run again) returns the row already there. Another amount for an order
    the run refunded already (two calls for one order, an edit naming it) is not
    made, and the result says so (``refunded: false`` and why) rather than passing
    the first refund off as this one.
    """
    from example_project.shop.models import Refund

    refund = Refund(order_id=order_id, amount=Decimal(str(amount)), run_id=run_id)
    # The schema refused such values before anyone approved them. Should one get here
    # anyway, the row's own validators refuse it rather than the database rounding it.
    refund.clean_fields()
    asked = refund.amount.quantize(CENT)
    refund, _ = Refund.objects.get_or_create(run_id=run_id, order_id=refund.order_id, defaults={
        "amount": asked})
    result = {"refund_id": refund.pk, "order_id": refund.order_id, "amount": str(refund.amount)}
    if refund.amount != asked:
        return {**result, "refunded": False, "reason": (
            f"order {refund.order_id} was refunded {refund.amount} in this run already; "
            f"this refund of {asked} was not made")}
    return result


class RefundAgent:
    #: Seconds between two pieces of the confirmation; 0 streams it at once.
    pace = 0.0

    def __init__(self, tenant: Any) -> None:
        self.tenant = tenant

    def confirmation(self, args: dict[str, Any]) -> list[str]:
        """The pieces of what the agent says once the refund is recorded."""
        return ["Refund ", f"of {args['amount']} ", f"on order {args['order_id']} ", "is done."]

    async def start_typed(self, context: NewTurn, input: Any) -> AsyncGenerator[Event, None]:
        given = input if isinstance(input, dict) else {}
        args = {key: given[key] for key in ("order_id", "amount") if key in given}
        # The proposal is the input: refuse a bad one before saying anything about it.
        prompt = validate_proposal(refund_prompt(args))
        yield MessageDelta(
            text=f"Order {args['order_id']} qualifies for a refund of {args['amount']}. ")
        yield MessageCompleted(text="I need a person to approve it.")
        await request_pause(kind="approval", idempotency_key="refund", prompt=prompt)

    async def continue_recovered_typed(
        self, continuation: ResumedTurn, *, prepared_plan: Any = None, event_guard: Any = None,
    ) -> AsyncGenerator[Event, None]:
        # The one proposed refund, with what was decided on it (docs/agents.md).
        [action] = continuation.actions
        if action.approved_args is not None:
            # What the reviewer approved: the edited args, or the proposal as shown.
            args = action.approved_args
            call_id = f"refund-{continuation.run.pk}"
            yield ToolStarted(tool_call_id=call_id, name="refund", args=args)
            # Money moves only while this worker still holds the run: the refund row and
            # its tool.completed event commit together, or (LeaseLost) not at all.
            result = await afenced(
                record_refund, args["order_id"], args["amount"], str(continuation.run.pk),
                event=lambda result: ToolCompleted(tool_call_id=call_id, name="refund",
                                                   args=args, result=result))
            for n, piece in enumerate(self.confirmation(args)):
                if n and self.pace:
                    await asyncio.sleep(self.pace)
                yield MessageDelta(text=piece)
            yield TurnCompleted(output={"refunded": True, **result})
        elif action.decision == "respond":
            # A message to the agent, not a refusal: it says what it heard and does nothing.
            message = action.message
            yield MessageCompleted(text=f"The reviewer wrote: “{message}” "
                                        "I made no refund, and I will follow their note.")
            yield TurnCompleted(output={"refunded": False, "message": message})
        else:
            timed_out = action.decision == "expired"
            reason = "the approval timed out" if timed_out else "the reviewer rejected it"
            message = action.message
            # The reviewer's words are quoted as given, never run into a sentence of ours.
            said = f" They wrote: “{message}”" if message else ""
            yield MessageCompleted(text=f"No refund was made: {reason}.{said}")
            yield TurnCompleted(output={"refunded": False, "reason": reason,
                                        **({"message": message} if message else {})})


def refund_agent(tenant: Any) -> RefundAgent:
    return RefundAgent(tenant)


# Read by start_run (the API's POST runs/ included): an input outside it never becomes a run.
refund_agent.input_schema = REFUND_ARGS_SCHEMA  # type: ignore[attr-defined]


class SlowRefundAgent(RefundAgent):
    """``refund``, its confirmation streamed a word every ``pace`` seconds (6 s in all)."""

    pace = 0.25

    def confirmation(self, args: dict[str, Any]) -> list[str]:
        text = (f"Refund of {args['amount']} on order {args['order_id']} is done. The customer "
                "gets the money back on the card they paid with, within five business days.")
        words = text.split(" ")
        return [word + " " for word in words[:-1]] + [words[-1]]


def slow_refund_agent(tenant: Any) -> SlowRefundAgent:
    return SlowRefundAgent(tenant)


slow_refund_agent.input_schema = REFUND_ARGS_SCHEMA  # type: ignore[attr-defined]


#: The carriers the shipping agent may book, and what it asks a person to choose.
CARRIERS = ["dhl", "ups", "fedex"]
#: The question's answer: one carrier, each offered and shown by its name ("DHL", not "dhl").
CARRIER_ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"carrier": {"title": "Carrier", "oneOf": [
        {"const": "dhl", "title": "DHL"}, {"const": "ups", "title": "UPS"},
        {"const": "fedex", "title": "FedEx"}]}},
    "required": ["carrier"],
    "additionalProperties": False,
}
CARRIER_INPUT_SCHEMA = {
    "type": "object",
    "properties": {"order_id": {"type": "string", "minLength": 1, "maxLength": 100}},
    "required": ["order_id"],
    "additionalProperties": False,
}


class ShippingAgent:
    """Asks a question, not an approval: which carrier ships an order's replacement.

    Registered as ``shipping``; input ``{"order_id": str}``. The answer is
    ``{"carrier": "dhl" | "ups" | "fedex"}``, checked against the pause's schema.
    """

    async def start_typed(self, context: NewTurn, input: Any) -> AsyncGenerator[Event, None]:
        order_id = input["order_id"]
        yield MessageCompleted(text=f"The replacement for order {order_id} is packed.")
        await request_pause(kind="question", idempotency_key="carrier", prompt={
            "question": f"Which carrier should ship the replacement for order {order_id}?",
            "description": "Pick the carrier; the agent books it.",
        }, answer_schema=CARRIER_ANSWER_SCHEMA)

    async def continue_recovered_typed(
        self, continuation: ResumedTurn, *, prepared_plan: Any = None, event_guard: Any = None,
    ) -> AsyncGenerator[Event, None]:
        answer = continuation.answer
        if isinstance(answer, dict) and answer.get("carrier") in CARRIERS:
            yield MessageCompleted(text=f"Booked {answer['carrier'].upper()} for the replacement.")
            yield TurnCompleted(output={"carrier": answer["carrier"]})
        else:  # the question expired (ON_EXPIRE="resume")
            yield MessageCompleted(text="Nobody chose a carrier in time; nothing was booked.")
            yield TurnCompleted(output={"carrier": None})


def shipping_agent(tenant: Any) -> ShippingAgent:
    return ShippingAgent()


shipping_agent.input_schema = CARRIER_INPUT_SCHEMA  # type: ignore[attr-defined]
