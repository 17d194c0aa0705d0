"""The refund agent: proposes a refund, waits for approval, then records it.

Registered as ``refund``; input ``{"order_id": str, "amount": number}``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from asgiref.sync import sync_to_async

from symfonic_django import afenced, request_pause
from symfonic_django.events import (
    MessageCompleted,
    MessageDelta,
    ToolCompleted,
    ToolStarted,
    TurnCompleted,
)

REFUND_ARGS_SCHEMA = {
    "type": "object",
    "properties": {"order_id": {"type": "string", "minLength": 1},
                   "amount": {"type": "number", "exclusiveMinimum": 0}},
    "required": ["order_id", "amount"],
    "additionalProperties": False,
}


def record_refund(order_id: str, amount: Any, run_id: str) -> dict[str, Any]:
    from example_project.shop.models import Refund

    refund, _ = Refund.objects.get_or_create(
        run_id=run_id, defaults={"order_id": order_id, "amount": Decimal(str(amount))})
    return {"refund_id": refund.pk, "order_id": refund.order_id, "amount": str(refund.amount)}


class RefundAgent:
    def __init__(self, tenant: Any) -> None:
        self.tenant = tenant

    async def start_typed(self, context: Any, input: dict[str, Any]):
        order_id, amount = str(input["order_id"]), input["amount"]
        yield MessageDelta(text=f"Order {order_id} qualifies for a refund of {amount}. ")
        yield MessageCompleted(text="I need a person to approve it.")
        await request_pause(
            kind="approval",
            idempotency_key="refund",
            prompt={
                "action_requests": [{
                    "name": "refund", "args": {"order_id": order_id, "amount": amount},
                    "description": f"Refund {amount} on order {order_id}",
                }],
                "review_configs": [{
                    "action_name": "refund",
                    "allowed_decisions": ["approve", "edit", "reject", "respond"],
                    "args_schema": REFUND_ARGS_SCHEMA,
                }],
            },
        )

    async def continue_recovered_typed(self, continuation: Any, *, prepared_plan: Any = None,
                                       event_guard: Any = None):
        answer = continuation.answer
        parent_input = await sync_to_async(_parent_input)(continuation.paused_run_id)
        decision = (answer or {}).get("decisions", [{}])[0] if isinstance(answer, dict) else {}
        kind = decision.get("type")
        if kind in ("approve", "edit"):
            args = decision["edited_action"]["args"] if kind == "edit" else {
                "order_id": parent_input["order_id"], "amount": parent_input["amount"]}
            call_id = f"refund-{continuation.run.pk}"
            yield ToolStarted(tool_call_id=call_id, name="refund", args=args)
            # Money moves only while this worker still holds the run: the refund row and
            # its tool.completed event commit together, or (LeaseLost) not at all.
            result = await afenced(
                record_refund, args["order_id"], args["amount"], str(continuation.run.pk),
                event=lambda result: ToolCompleted(tool_call_id=call_id, name="refund",
                                                   args=args, result=result))
            for word in ("Refund ", f"of {args['amount']} ", f"on order {args['order_id']} ",
                         "is done."):
                yield MessageDelta(text=word)
            yield TurnCompleted(output={"refunded": True, **result})
        else:
            reason = decision.get("message") or ("the approval timed out"
                                                 if answer == {"timeout": True} else "rejected")
            yield MessageCompleted(text=f"No refund was made: {reason}.")
            yield TurnCompleted(output={"refunded": False, "reason": reason})


def _parent_input(run_id: str) -> dict[str, Any]:
    from symfonic_django.models import Run

    return Run.objects.values_list("input", flat=True).get(pk=run_id)


def refund_agent(tenant: Any) -> RefundAgent:
    return RefundAgent(tenant)
