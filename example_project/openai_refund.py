"""The OpenAI Agents SDK refund agent, ``refund_openai``: several refunds, one approval.

Registered as ``refund_openai`` when the ``[openai-agents]`` extra is installed
(``settings.py``). Input ``{"refunds": [{"order_id": str, "amount": number}, ...]}``:
1 to 5 refunds, each within ``REFUND_ARGS_SCHEMA``, as ``refund_graph`` takes them.
``start_run`` (and so ``POST runs/``) refuses any other input before a run exists.

It is an SDK ``Agent``, unchanged, behind the app's adapter:

- the model is the SDK's own test double, ``agents.testing.ScriptedModel``, each
  step answered by ``desk_reply`` from the conversation alone (offline and
  deterministic): to the request it replies with one ``refund`` call per refund,
  in one response; once those calls have outputs, it confirms;
- ``refund`` needs approval (``needs_approval=True``), so the run stops on one
  ``ToolApprovalItem`` per call: one approval pause with one action per refund,
  described as the plain agent describes a refund, held to the tool's own schema
  (its ``Field`` bounds are ``REFUND_ARGS_SCHEMA``'s), answered approve, reject or
  respond (the SDK runs an approved call only as proposed: no edit);
- the continuation runs the approved calls: each records one ``Refund`` row
  through the fenced ``refund`` tool, once however often the SDK runs it; a
  rejected call records nothing, and the model reads the reviewer's words;
- the model then confirms in a sentence, which is the turn's output.

A ``ScriptedModel`` answers as many calls as it has steps, so each turn gets an
agent of its own (``desk``, a factory of the scope): a turn that asked the model
more than ``STEPS`` times would fail rather than improvise. Tracing is off: the
example sends nothing anywhere.

The refunds carry the conversation's root run id, as ``refund_graph``'s do.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from agents import Agent, set_tracing_disabled
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from pydantic import Field

from example_project.agents import REFUNDS_INPUT_SCHEMA, describe_refund, record_refund
from symfonic_django.agents.openai_agents import fenced_function_tool, openai_agent
from symfonic_django.turns import current_turn

set_tracing_disabled(True)

#: The input: the refunds, as every several-refunds agent of the example takes them.
REFUND_OPENAI_INPUT_SCHEMA = REFUNDS_INPUT_SCHEMA

#: Model calls one turn may make: the request's (start) or the confirmation (continuation).
STEPS = 2


@fenced_function_tool(needs_approval=True)
def refund(order_id: Annotated[str, Field(min_length=1, max_length=100)],
           amount: Annotated[float, Field(gt=0, le=10000, multiple_of=0.01)]) -> dict[str, Any]:
    """Refund ``amount`` on order ``order_id``."""
    return record_refund(order_id, amount, current_turn().root_run_id)


def desk_reply(call: ModelCall) -> list[Any]:
    """The model's reply, from the conversation alone (``call.input``, the SDK's items)."""
    items = call.input if isinstance(call.input, list) else [
        {"role": "user", "content": call.input}]
    answered = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
    if answered:
        return [assistant_message(f"{len(answered)} refund(s) reviewed: the approved ones are "
                                  "done, the others were not made.", item_id="desk-confirm")]
    request = next(i["content"] for i in reversed(items)
                   if isinstance(i, dict) and i.get("role") == "user")
    refunds = json.loads(request)["refunds"]
    calls = [function_call("refund", args, call_id=f"refund-call-{number}")
             for number, args in enumerate(refunds, 1)]
    return [assistant_message(f"I will refund {len(calls)} order(s) once a person approves.",
                              item_id="desk-plan"), *calls]


def desk(scope: Any) -> Agent[Any]:
    """The turn's agent: the refund desk on a fresh scripted model."""
    model = ScriptedModel([ModelStep.respond(desk_reply) for _ in range(STEPS)])
    return Agent(name="refund_desk", instructions="Refund what the customer asks, once "
                 "approved.", model=model, tools=[refund])


refund_openai = openai_agent(desk, input_schema=REFUND_OPENAI_INPUT_SCHEMA,
                             describe=lambda name, args: describe_refund(args))
