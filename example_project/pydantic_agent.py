"""The Pydantic AI refund agent, ``refund_pydantic``: several refunds, one approval.

Registered as ``refund_pydantic`` when the ``[pydantic-ai]`` extra is installed
(``settings.py``). Its input is ``refund_graph``'s: ``{"refunds": [{"order_id": str,
"amount": number}, ...]}``, 1 to 5 refunds, each within ``REFUND_ARGS_SCHEMA``;
``start_run`` (and so ``POST runs/``) refuses any other input before a run exists.

It is a Pydantic AI ``Agent``, unchanged, behind the app's adapter:

- the model (``refund_desk``, a ``FunctionModel``: scripted, offline and
  deterministic) calls the ``refund`` tool once per requested refund, in one step;
- ``refund`` requires approval, so the run ends on ``DeferredToolRequests``: one
  approval pause with one action per call, described as the plain agent
  describes its refund, with the tool's own argument schema (the same bounds
  as ``REFUND_ARGS_SCHEMA``) so an edit outside it is refused when given;
- the continuation resumes the stored history once: approved calls run, edited
  ones with the reviewer's arguments, each recording one ``Refund`` row through
  the fenced tool, exactly once however often the history is resumed; a
  rejected (or responded) call records nothing and the model reads the words;
- the model then confirms in a sentence, which is the turn's output.

The refunds of one request carry the conversation's root run id, as
``refund_graph``'s do.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Annotated, Any

from pydantic import Field
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.tools import DeferredToolRequests

from example_project.agents import REFUNDS_INPUT_SCHEMA, describe_refund, record_refund
from symfonic_django.agents.pydantic_ai import fenced_tool, pydantic_ai_agent
from symfonic_django.turns import current_turn

#: The input: the refunds, as every several-refunds agent of the example takes them.
REFUND_PYDANTIC_INPUT_SCHEMA = REFUNDS_INPUT_SCHEMA
#: The refund's arguments, as REFUND_ARGS_SCHEMA bounds them: the tool's own schema says so.
OrderId = Annotated[str, Field(min_length=1, max_length=100)]
Amount = Annotated[float, Field(gt=0, le=10000, multiple_of=0.01)]


def reply(messages: list[ModelMessage], info: AgentInfo | None = None) -> ModelResponse:
    """The desk's reply, from the conversation alone: one ``refund`` call per requested
    refund; once they are answered, a confirmation. Its call ids follow from the
    conversation too, so a step asked again says the same."""
    last = messages[-1]
    answered = [p for p in last.parts if p.part_kind == "tool-return"] if isinstance(
        last, ModelRequest) else []
    if answered:
        return ModelResponse(parts=[TextPart(
            f"{len(answered)} refund(s) reviewed: the approved ones are done, the others "
            "were not made.")])
    request = json.loads(next(p.content for p in last.parts if p.part_kind == "user-prompt"))
    calls = [ToolCallPart("refund", item, tool_call_id=f"refund-desk-{len(messages)}-call-{n}")
             for n, item in enumerate(request["refunds"], 1)]
    return ModelResponse(parts=[
        TextPart(f"I will refund {len(calls)} order(s) once a person approves."), *calls])


async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[
        str | DeltaToolCalls]:
    """The same reply, streamed: its words, then its calls."""
    for index, part in enumerate(reply(messages, info).parts):
        if isinstance(part, TextPart):
            for word in re.findall(r"\S+\s*", part.content):
                yield word
        elif isinstance(part, ToolCallPart):
            yield {index: DeltaToolCall(name=part.tool_name, json_args=json.dumps(part.args),
                                        tool_call_id=part.tool_call_id)}


refund_desk = FunctionModel(reply, stream_function=stream, model_name="refund-desk")


@fenced_tool(requires_approval=True)
def refund(order_id: OrderId, amount: Amount) -> dict[str, Any]:
    """Refund ``amount`` on order ``order_id``."""
    return record_refund(order_id, amount, current_turn().root_run_id)


def describe(name: str, args: dict[str, Any], metadata: dict[str, Any]) -> str:
    return describe_refund(args)


refund_pydantic = pydantic_ai_agent(
    Agent(refund_desk, tools=[refund], output_type=[str, DeferredToolRequests]),
    describe=describe, input_schema=REFUND_PYDANTIC_INPUT_SCHEMA)
