"""LangGraph graphs and agents the LangGraph tests drive through the app.

Each ``*_agent`` is an ``agent_for(scope)`` registered under ``AGENTS`` (see
``conftest.langgraph_agents``). Every graph keeps its state on the app's
checkpoint saver. Side effects are ``Refund`` rows (each with a run id of its
own, counted by order id) and the ``CALLS`` counter of function bodies run.
"""

from __future__ import annotations

import json
import operator
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

from asgiref.sync import sync_to_async
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Send, interrupt

from symfonic_django.agents.fencing import fenced_tool
from symfonic_django.agents.langgraph import langgraph_agent
from symfonic_django.checkpoint import DjangoSaver

#: How many times each function body ran, by name: what the fence saves us from.
CALLS: Counter[str] = Counter()
#: Nodes told to fail once (by name): a crash after a side effect.
FAIL_ONCE: set[str] = set()


def record_refund(order_id: str, amount: Any) -> dict[str, Any]:
    from tests.testapp.models import Refund

    refund = Refund.objects.create(order_id=order_id, amount=amount, run_id=uuid.uuid4())
    return {"refund_id": refund.pk, "order_id": order_id}


# --- a fake tool-calling chat model ------------------------------------------------------

class ScriptedChatModel(GenericFakeChatModel):
    """Asks for one ``refund`` per item of the user's JSON message, then says it is done.

    Deterministic from the conversation (a graph is built again for each turn,
    so no script may be consumed across turns), and it streams its words, with
    its tool calls in the last chunk (``GenericFakeChatModel`` streams no tool calls).
    """

    messages: Iterator[AIMessage | str] = iter(())

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return AIMessage("All refunds are handled.", id=f"ai-done-{len(messages)}")
        request = json.loads(next(m for m in messages if isinstance(m, HumanMessage)).text)
        calls = [{"name": "refund", "args": item, "id": f"call-{i}-{item['order_id']}",
                  "type": "tool_call"} for i, item in enumerate(request["refunds"])]
        return AIMessage(f"Refunding {len(calls)} orders.", tool_calls=calls,
                         id=f"ai-ask-{len(messages)}")

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    def _stream(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        reply = self._reply(messages)
        yield from super()._stream(messages, stop, run_manager, **kwargs)
        if reply.tool_calls:
            yield ChatGenerationChunk(message=AIMessageChunk(content="", id=reply.id, tool_call_chunks=[
                {"name": c["name"], "args": json.dumps(c["args"]), "id": c["id"], "index": i}
                for i, c in enumerate(reply.tool_calls)]))


@fenced_tool
def refund(order_id: str, amount: float) -> dict[str, Any]:
    """Refund an order."""
    CALLS["refund"] += 1
    return record_refund(order_id, amount)


def refunds_input(run_input: Any) -> dict[str, Any]:
    return {"messages": [HumanMessage(json.dumps(run_input))]}


def refund_agent_graph(mode: str) -> Any:
    return create_agent(ScriptedChatModel(), tools=[refund], middleware=[
        HumanInTheLoopMiddleware({"refund": {"allowed_decisions": ["approve", "edit", "reject"]}},
                                 interrupt_mode=mode)])


batched_agent = langgraph_agent(lambda scope: refund_agent_graph("batched"),
                                checkpointer=DjangoSaver(), input=refunds_input)
per_call_agent = langgraph_agent(lambda scope: refund_agent_graph("per_call"),
                                 checkpointer=DjangoSaver(), input=refunds_input)


# --- several interrupts in one node ------------------------------------------------------

class Answers(TypedDict, total=False):
    ask: bool
    answers: list[Any]


def two_questions(state: Answers) -> Answers:
    if not state.get("ask", True):
        return {"answers": []}
    name = interrupt({"question": "Which order?"})
    amount = interrupt({"question": "How much?"}, response_schema={
        "type": "object", "properties": {"amount": {"type": "number", "exclusiveMinimum": 0}},
        "required": ["amount"]})
    CALLS["two_questions.after"] += 1
    return {"answers": [name, amount]}


def after_questions(state: Answers) -> Answers:
    if "after_questions" in FAIL_ONCE:
        FAIL_ONCE.discard("after_questions")
        raise RuntimeError("the node after the questions crashed")
    return {}


def questions_graph() -> Any:
    builder = StateGraph(Answers)
    builder.add_node("two_questions", two_questions)
    builder.add_node("after_questions", after_questions)
    builder.add_edge(START, "two_questions")
    builder.add_edge("two_questions", "after_questions")
    builder.add_edge("after_questions", END)
    return builder.compile()


questions_agent = langgraph_agent(lambda scope: questions_graph(), checkpointer=DjangoSaver())


# --- two interrupting tools in one ToolNode ----------------------------------------------

@fenced_tool
def ship(order_id: str) -> dict[str, Any]:
    """Ship an order once a person says yes."""
    answer = interrupt({"question": f"Ship {order_id}?"})
    CALLS[f"ship:{order_id}"] += 1
    if answer != "yes":
        return {"shipped": False, "order_id": order_id}
    return {"shipped": True, **record_refund(order_id, 1)}


@tool
def flaky_check(order_id: str) -> str:
    """A plain tool that crashes once when told to (FAIL_ONCE): its task runs again."""
    if "flaky_check" in FAIL_ONCE:
        FAIL_ONCE.discard("flaky_check")
        raise RuntimeError("the checker crashed")
    return f"{order_id} checked"


def propose(state: MessagesState) -> dict[str, Any]:
    request = json.loads(state["messages"][0].text)
    if request.get("reap_before"):
        reap_from_another_worker()
    calls = [{"name": request.get("tool", "ship"), "args": {"order_id": order, **request.get(
        "args", {})}, "id": request.get("ids", {}).get(order, f"ship-{order}"),
        "type": "tool_call"} for order in request["orders"]]
    calls += [{"name": "flaky_check", "args": {"order_id": o}, "id": f"check-{o}",
               "type": "tool_call"} for o in request.get("check", [])]
    return {"messages": [AIMessage("Shipping.", tool_calls=calls, id="ai-ship")]}


def tool_node_graph() -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("propose", propose)
    builder.add_node("tools", ToolNode([ship, flaky_check]))
    builder.add_edge(START, "propose")
    builder.add_edge("propose", "tools")
    builder.add_edge("tools", END)
    return builder.compile()


def orders_input(run_input: Any) -> dict[str, Any]:
    return {"messages": [HumanMessage(json.dumps(run_input))]}


tool_node_agent = langgraph_agent(lambda scope: tool_node_graph(), checkpointer=DjangoSaver(),
                                  input=orders_input)


# --- a subgraph, and Send fan-out --------------------------------------------------------

class Fan(TypedDict, total=False):
    items: list[str]
    item: str
    out: Annotated[list[str], operator.add]


def sub_ask(state: Fan) -> Fan:
    return {"out": [f"sub:{interrupt({'question': 'Go on?'})}"]}


def fan_out(state: Fan) -> list[Send]:
    return [Send("branch", {"item": item}) for item in state["items"]]


def branch(state: Fan) -> Fan:
    item = state["item"]
    return {"out": [f"{item}:{interrupt({'question': f'Item {item}?'})}"]}


def fan_graph(with_subgraph: bool) -> Any:
    sub = StateGraph(Fan)
    sub.add_node("sub_ask", sub_ask)
    sub.add_edge(START, "sub_ask")
    builder = StateGraph(Fan)
    builder.add_node("branch", branch)
    if with_subgraph:
        builder.add_node("sub", sub.compile())
        builder.add_edge(START, "sub")
        builder.add_edge("sub", END)
    else:
        builder.add_conditional_edges(START, fan_out, ["branch"])
    builder.add_edge("branch", END)
    return builder.compile()


subgraph_agent = langgraph_agent(lambda scope: fan_graph(True), checkpointer=DjangoSaver())
fan_agent = langgraph_agent(lambda scope: fan_graph(False), checkpointer=DjangoSaver())


# --- an async fenced tool ----------------------------------------------------------------

@fenced_tool
async def async_refund(order_id: str) -> dict[str, Any]:
    """Refund an order, from async code."""
    answer = interrupt({"question": f"Refund {order_id}?"})
    CALLS["async_refund"] += 1
    if answer != "yes":
        return {"refunded": False}
    return await sync_to_async(record_refund)(order_id, 2)


def async_tool_graph() -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("propose", propose)
    builder.add_node("tools", ToolNode([async_refund, flaky_check]))
    builder.add_edge(START, "propose")
    builder.add_edge("propose", "tools")
    builder.add_edge("tools", END)
    return builder.compile()


async_tool_agent = langgraph_agent(lambda scope: async_tool_graph(), checkpointer=DjangoSaver(),
                                   input=orders_input)

AGENTS = {
    "lg_batched": "tests.langgraph.graphs.batched_agent",
    "lg_per_call": "tests.langgraph.graphs.per_call_agent",
    "lg_questions": "tests.langgraph.graphs.questions_agent",
    "lg_tool_node": "tests.langgraph.graphs.tool_node_agent",
    "lg_subgraph": "tests.langgraph.graphs.subgraph_agent",
    "lg_fan": "tests.langgraph.graphs.fan_agent",
    "lg_async_tool": "tests.langgraph.graphs.async_tool_agent",
}


# --- Agent Inbox's HumanInterrupt ---------------------------------------------------------

def inbox_review(state: Answers) -> Answers:
    [response] = interrupt([{
        "action_request": {"action": "refund", "args": {"order_id": "I-1", "amount": 3}},
        "config": {"allow_accept": True, "allow_edit": True, "allow_respond": False,
                   "allow_ignore": True},
        "description": "Refund I-1?"}])
    return {"answers": [response]}


def inbox_graph() -> Any:
    builder = StateGraph(Answers)
    builder.add_node("inbox_review", inbox_review)
    builder.add_edge(START, "inbox_review")
    builder.add_edge("inbox_review", END)
    return builder.compile()


inbox_agent = langgraph_agent(lambda scope: inbox_graph(), checkpointer=DjangoSaver())


# --- a worker that loses its lease inside a fenced tool ----------------------------------

def reap_from_another_worker() -> None:
    """What a frozen worker wakes up to: meanwhile the reaper, elsewhere, failed its run."""
    import threading

    from django.db import connection
    from django.utils import timezone

    from symfonic_django import runs
    from symfonic_django.models import Run, RunStatus

    def reap() -> None:
        try:
            Run.objects.filter(status=RunStatus.RUNNING).update(lease_until=timezone.now())
            runs.reap_stale_runs()
        finally:
            connection.close()

    reaper = threading.Thread(target=reap)
    reaper.start()
    reaper.join()


@fenced_tool
def frozen_refund(order_id: str, freeze: bool = True) -> dict[str, Any]:
    """Refunds, but the worker lost its lease while doing it (when ``freeze``)."""
    CALLS["frozen_refund"] += 1
    if freeze:
        reap_from_another_worker()
    return record_refund(order_id, 4)


@fenced_tool
def unrecordable(order_id: str) -> Any:
    """Refunds, and returns what JSON cannot hold."""
    record_refund(order_id, 5)
    return {order_id}


def plain_tools_graph() -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("propose", propose)
    builder.add_node("tools", ToolNode([frozen_refund, unrecordable]))
    builder.add_edge(START, "propose")
    builder.add_edge("propose", "tools")
    builder.add_edge("tools", END)
    return builder.compile()


plain_tools_agent = langgraph_agent(lambda scope: plain_tools_graph(), checkpointer=DjangoSaver(),
                                    input=orders_input)

AGENTS |= {
    "lg_inbox": "tests.langgraph.graphs.inbox_agent",
    "lg_plain_tools": "tests.langgraph.graphs.plain_tools_agent",
}
