"""The LangGraph refund agent, ``refund_graph``: several refunds, one approval.

Registered as ``refund_graph`` when the ``[langgraph]`` extra is installed
(``settings.py``). Input ``{"refunds": [{"order_id": str, "amount": number}, ...]}``:
1 to 5 refunds, each within the plain ``refund`` agent's ``REFUND_ARGS_SCHEMA``.
``start_run`` (and so ``POST runs/``) refuses any other input before a run exists.

It is a LangChain ``create_agent`` agent, unchanged, behind the app's adapter:

- the model (``RefundDesk``, scripted: offline and deterministic) calls the
  ``refund`` tool once per requested refund, all in one message;
- ``HumanInTheLoopMiddleware`` (batched, its default) stops the turn there: one
  approval pause with one action request per call, each described as the plain
  agent describes its refund and held to ``REFUND_ARGS_SCHEMA`` (an edit outside
  it is refused when given), answered with one decision per action: approve,
  edit, reject or respond;
- the continuation runs the approved calls, edited ones with the reviewer's
  arguments: each records one ``Refund`` row through the fenced ``refund`` tool,
  exactly once however often LangGraph runs the tool again; a rejected (or
  responded) call records nothing;
- the model then confirms in a sentence, which is the turn's output.

The graph's state is kept by the app's checkpoint saver (``DjangoSaver``), in the
project's database beside the pause it explains.

**The run id a refund carries** is the conversation's root run: the first turn's
id, which its continuations share (each continuation is a run of its own; a
retried one keeps its id). The refunds of one request are found by that one id,
and as ``Refund`` is unique per run and order id, an order is refunded at most
once per conversation: an order asked for twice in one request is refunded once,
as the first of its approved calls says.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from itertools import takewhile
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.messages.tool import tool_call, tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

from example_project.agents import (
    REFUND_ARGS_SCHEMA,
    REFUND_DECISIONS,
    REFUNDS_INPUT_SCHEMA,
    describe_refund,
    record_refund,
)
from symfonic_django.agents.fencing import fenced_tool
from symfonic_django.agents.langgraph import langgraph_agent
from symfonic_django.checkpoint import DjangoSaver
from symfonic_django.turns import current_turn

#: The input: the refunds, as every several-refunds agent of the example takes them.
REFUND_GRAPH_INPUT_SCHEMA = REFUNDS_INPUT_SCHEMA


class RefundDesk(BaseChatModel):
    """A scripted tool-calling chat model: its reply follows from the conversation alone.

    To the user's request (the run's input, as JSON) it replies with one
    ``refund`` tool call per requested refund, in one message; once those calls
    are answered, it confirms. It keeps no state, so any process may ask it at
    any turn, and it streams its words, its tool calls in the last chunk.
    Written as LangChain documents a custom chat model (``_generate``, ``_stream``).
    """

    @property
    def _llm_type(self) -> str:
        return "refund-desk"

    def bind_tools(self, tools: Any, **kwargs: Any) -> RefundDesk:  # type: ignore[override]
        return self  # it knows its one tool

    def reply(self, messages: Sequence[BaseMessage]) -> AIMessage:
        # Its message ids follow from the conversation too: a step run again says the same.
        message_id = f"refund-desk-{len(messages)}"
        answered = list(takewhile(lambda m: isinstance(m, ToolMessage), reversed(messages)))
        if answered:
            return AIMessage(f"{len(answered)} refund(s) reviewed: the approved ones are done, "
                             "the others were not made.", id=message_id)
        request = json.loads(messages[-1].text)
        calls = [tool_call(name="refund", args=item, id=f"{message_id}-call-{number}")
                 for number, item in enumerate(request["refunds"], 1)]
        return AIMessage(f"I will refund {len(calls)} order(s) once a person approves.",
                         tool_calls=calls, id=message_id)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.reply(messages))])

    def _stream(self, messages: list[BaseMessage], stop: list[str] | None = None,
                run_manager: Any = None, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        message = self.reply(messages)
        for word in re.findall(r"\S+\s*", message.text):
            yield ChatGenerationChunk(message=AIMessageChunk(content=word, id=message.id))
        if message.tool_calls:
            chunks = [tool_call_chunk(name=call["name"], args=json.dumps(call["args"]),
                                      id=call["id"], index=index)
                      for index, call in enumerate(message.tool_calls)]
            yield ChatGenerationChunk(message=AIMessageChunk(content="", id=message.id,
                                                             tool_call_chunks=chunks))


@fenced_tool
def refund(order_id: str, amount: float) -> dict[str, Any]:
    """Refund ``amount`` on order ``order_id``."""
    return record_refund(order_id, amount, current_turn().root_run_id)


def describe(call: Any, state: Any, runtime: Any) -> str:
    """The description ``HumanInTheLoopMiddleware`` shows a reviewer of one call."""
    return describe_refund(call["args"])


def as_messages(run_input: Any) -> dict[str, Any]:
    """The run's input as the graph's: the user's request, as JSON."""
    return {"messages": [HumanMessage(json.dumps(run_input))]}


refund_graph = langgraph_agent(
    create_agent(RefundDesk(), tools=[refund], middleware=[HumanInTheLoopMiddleware(
        {"refund": {"allowed_decisions": REFUND_DECISIONS, "description": describe}})]),
    checkpointer=DjangoSaver(), input=as_messages, input_schema=REFUND_GRAPH_INPUT_SCHEMA,
    # HumanInTheLoopMiddleware sends no args_schema: the adapter adds the refund's.
    args_schemas={"refund": REFUND_ARGS_SCHEMA})
