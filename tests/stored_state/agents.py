"""An agent that keeps its state with ``agents.stored_state`` and records calls with
``agents.recorded``, as the framework adapters do: the core both stand on, driven alone."""

from __future__ import annotations

import json
from typing import Any

from asgiref.sync import sync_to_async

from symfonic_django import request_pause
from symfonic_django.agents.recorded import record_once
from symfonic_django.agents.stored_state import consume_state, save_state, saved_state
from symfonic_django.events import TurnCompleted
from tests.testapp.models import Refund

#: How often each recorded call's body ran, by call id.
BODY_RUNS: dict[str, int] = {}


def refund(call_id: str, order_id: str, run_id: Any) -> dict[str, Any]:
    BODY_RUNS[call_id] = BODY_RUNS.get(call_id, 0) + 1
    Refund.objects.create(order_id=order_id, amount=1, run_id=run_id)
    return {"refunded": order_id}


class StatefulAgent:
    """Stores ``{"orders": [...]}`` when it pauses; the continuation takes it and refunds
    each order through ``record_once`` (call id ``call-<order>``, or the input's)."""

    framework = "test"

    async def start_typed(self, context: Any, input: Any):
        state = await sync_to_async(saved_state)(self.framework)
        if state is None:
            # "<NUL>" stands for a NUL character, which no run input may carry.
            state = (input["raw_state"].replace("<NUL>", "\x00") if "raw_state" in input
                     else json.dumps({"orders": input["orders"], "ids": input.get("ids")}))
            await sync_to_async(save_state)(self.framework, state)
        await request_pause(kind="approval", idempotency_key="refunds", prompt={
            "action_requests": [{"name": "refund", "args": {"orders": input["orders"]}}]})
        return
        yield

    async def continue_recovered_typed(self, continuation: Any, *, prepared_plan: Any = None,
                                       event_guard: Any = None):
        state = json.loads(await sync_to_async(consume_state)(
            self.framework, continuation.paused_run_id))
        ids = ([i.replace("<NUL>", "\x00") for i in state["ids"]] if state["ids"]
               else [f"call-{order}" for order in state["orders"]])
        results = []
        for call_id, order in zip(ids, state["orders"], strict=True):
            results.append(await sync_to_async(record_once)(
                "refund", call_id, {"order_id": order},
                lambda c=call_id, o=order: refund(c, o, continuation.run.root_id)))
        yield TurnCompleted(output=results)


class OtherFrameworkAgent(StatefulAgent):
    framework = "other"


def stateful_agent(scope: Any) -> StatefulAgent:
    return StatefulAgent()


def other_framework_agent(scope: Any) -> OtherFrameworkAgent:
    return OtherFrameworkAgent()
