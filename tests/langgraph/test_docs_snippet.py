"""docs/langgraph.md, run as written.

- Section 1: the blocks that name a file under ``proj/`` become a project
  package, and a turn of the agent they register goes start -> pause ->
  approve -> completed through the app. What they import from the reader's own
  code is supplied here: the chat model (the tests' scripted one, which asks
  for one ``refund`` per item of the user's JSON message) and the code that
  moves the money (``make_refund``: a ``Refund`` row). "What a reviewer sees":
  the review page of that agent's pause has an input per argument of the
  doc's ``refund`` tool, with its constraints; a bad edit is refused on the
  form and over the API with nothing changed, and a good one completes the turn.
- Section 2: the wrong and the right tool run in a ``ToolNode`` that runs
  again after a sibling tool crashed; their ``Refund`` and ``notify_customer``
  (the reader's own) are counters here.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from types import SimpleNamespace
from typing import Any

import pytest
from django.urls import reverse
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from rest_framework.test import APIClient

from symfonic_django import pauses, runs
from symfonic_django.agents.langgraph import langgraph_agent
from symfonic_django.checkpoint import DjangoSaver
from symfonic_django.models import Decision, Pause, PauseKind, Run, RunStatus
from tests.testapp.models import Refund
from tests.testapp.seed import seed_users

from ..admin_pages import login, page
from ..conftest import snapshot
from .conftest import continue_run, events_of, pauses_of, run_turn
from .docs_project import (
    DOC,
    DOC_PROJECT,
    MAX_LINES,
    ONE_REFUND,
    python_blocks,
)
from .graphs import CALLS, FAIL_ONCE, flaky_check, orders_input, propose

pytestmark = pytest.mark.django_db

def test_the_snippet_is_under_20_lines():
    lines = DOC_PROJECT.snippet_lines()
    assert lines <= MAX_LINES, f"the snippet has {lines} lines"


def test_every_python_block_of_the_doc_compiles():
    for body in python_blocks():
        compile(body, str(DOC), "exec")


def test_the_snippet_puts_a_create_agent_agent_behind_the_app(project):
    ask = {"refunds": [{"order_id": "A-1", "amount": 10}, {"order_id": "B-2", "amount": 20}]}
    run = run_turn("refunds", {"messages": [{"role": "user", "content": json.dumps(ask)}]})
    assert run.status == RunStatus.PAUSED
    [pause] = pauses_of(run)  # batched: one approval for both calls of the model's message
    assert pause.kind == PauseKind.APPROVAL
    assert [a["args"] for a in pause.prompt["action_requests"]] == ask["refunds"]
    assert not Refund.objects.exists()

    done = continue_run(pauses.approve(pause.pk).continuation.pk)
    assert done.status == RunStatus.COMPLETED and done.output == "All refunds are handled."
    assert sorted(Refund.objects.values_list("order_id", "amount")) == [
        ("A-1", Decimal("10")), ("B-2", Decimal("20"))]
    assert CALLS["refund"] == 2
    assert [d["tool_call_id"] for kind, d in events_of(done) if kind == "tool.completed"] == [
        "call-0-A-1", "call-1-B-2"]


# --- section 1, "What a reviewer sees": the review page of the doc's agent -----------------



@pytest.fixture
def users(tenants: Any) -> dict[str, Any]:
    return seed_users()


def doc_pause() -> Pause:
    run = run_turn("refunds", {"messages": [{"role": "user", "content": json.dumps(ONE_REFUND)}]})
    [pause] = pauses_of(run)
    return pause


def input_tag(body: str, name: str) -> str:
    [tag] = re.findall(rf'<input[^>]*name="{re.escape(name)}"[^>]*>', body)
    return tag


def test_the_docs_agent_gets_a_per_field_edit_form_from_its_tools_schema(project, users):
    pause = doc_pause()
    [request] = pause.prompt["action_requests"]
    assert request["description"] == "refund(order_id=A-1, amount=10)"  # not LangChain's text
    assert pause.prompt["review_configs"][0]["args_schema"]["properties"] == {
        "order_id": {"type": "string", "minLength": 1, "maxLength": 40, "title": "Order Id"},
        "amount": {"type": "number", "exclusiveMinimum": 0, "maximum": 500, "title": "Amount"}}

    body = login("alice").get(page(pause)).content.decode()
    order_id, amount = input_tag(body, "args_0.order_id"), input_tag(body, "args_0.amount")
    assert 'type="text"' in order_id and 'maxlength="40"' in order_id and 'value="A-1"' in order_id
    assert 'type="number"' in amount and 'max="500"' in amount and 'value="10"' in amount
    assert '<textarea name="args_0"' not in body  # no JSON editor beside the inputs
    assert "Nothing checks these arguments" not in body
    inbox = login("alice").get(reverse("admin:symfonic_django_pause_inbox")).content.decode()
    assert "refund(order_id=A-1, amount=10)" in inbox
    assert "Tool execution requires approval" not in inbox + body


def test_a_bad_edit_is_refused_on_the_form_and_over_the_api_and_the_turn_goes_on(project, users):
    """-5 and 900 are outside the tool's ``gt=0, le=500``: refused where they are typed,
    nothing recorded; the pause stays answerable, and a good edit completes the turn."""
    pause = doc_pause()
    before = snapshot(pause)
    alice = login("alice")
    for amount in ("-5", "900"):
        response = alice.post(page(pause), {"decision_0": "edit", "args_0.order_id": "A-1",
                                            "args_0.amount": amount})
        assert response.status_code == 200
        assert not response.context["form"].is_valid()
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {users['alice']['token']}")
    bad = {"order_id": "A-1", "amount": -5}
    for path, data in (
        ("answer", {"answer": {"decisions": [
            {"type": "edit", "edited_action": {"name": "refund", "args": bad}}]}}),
        ("approve", {"edited_args": bad}),
    ):
        response = api.post(f"/api/symfonic/pauses/{pause.pk}/{path}/", data, format="json")
        assert (response.status_code, response.json()["code"]) == (400, "invalid_answer")
    assert snapshot(pause) == before
    assert not Decision.objects.filter(pause=pause).exists()
    assert Run.objects.get(pk=pause.run_id).status == RunStatus.PAUSED

    response = alice.post(page(pause), {"decision_0": "edit", "args_0.order_id": "A-1",
                                        "args_0.amount": "7.5"})
    assert response.status_code == 302
    done = continue_run(Pause.objects.get(pk=pause.pk).continuation_id)
    assert done.status == RunStatus.COMPLETED
    assert list(Refund.objects.values_list("order_id", "amount")) == [("A-1", Decimal("7.50"))]


# --- section 2: the wrong and the right tool ----------------------------------------------

def example(label: str) -> str:
    """The doc's python block whose first line starts with ``# {label}:``."""
    [body] = [b for b in python_blocks() if b.startswith(f"# {label}:")]
    return body


class CountedRefunds:
    """The doc's ``Refund.objects``: counts the refunds made."""

    @staticmethod
    def create(**fields: Any) -> Any:
        CALLS["Refund.create"] += 1
        return SimpleNamespace(pk=CALLS["Refund.create"], **fields)


def notify_customer(order_id: str, text: str) -> None:
    CALLS["notify_customer"] += 1


def tool_node_agent(tool: Any) -> Any:
    """``propose`` asks for the tool once for order A, beside ``flaky_check``."""
    builder = StateGraph(MessagesState)
    builder.add_node("propose", propose)
    builder.add_node("tools", ToolNode([tool, flaky_check]))
    builder.add_edge(START, "propose")
    builder.add_edge("propose", "tools")
    builder.add_edge("tools", END)
    return langgraph_agent(builder.compile(), checkpointer=DjangoSaver(), input=orders_input)


@pytest.mark.parametrize("label, notices, refunds", [("Wrong", 3, 2), ("Right", 0, 1)])
def test_the_side_effect_examples(settings, tenants, label, notices, refunds):
    """The question is asked; the answer's turn crashes in the sibling tool after the refund;
    the retried turn runs the ToolNode again. Wrong: the notice went out at each of the
    three runs of the node, the refund at both runs after the answer. Right: one refund."""
    namespace: dict[str, Any] = {"Refund": SimpleNamespace(objects=CountedRefunds),
                                 "notify_customer": notify_customer}
    exec(example(label), namespace)
    settings.SYMFONIC = {**settings.SYMFONIC, "AGENTS": {
        **settings.SYMFONIC["AGENTS"], "example": tool_node_agent(namespace["refund"])}}

    run = run_turn("example", {"orders": ["A"], "check": ["A"], "tool": "refund",
                               "args": {"amount": 5}})
    [pause] = pauses_of(run)
    assert pause.prompt == {"question": "Refund 5.0 on A?"}  # the args, as the tool parsed them
    FAIL_ONCE.add("flaky_check")
    failed = continue_run(pauses.answer_pause(pause.pk, "yes").continuation.pk)
    assert failed.status == RunStatus.FAILED
    runs.retry(failed.pk, comment="the checker is back")
    assert continue_run(failed.pk).status == RunStatus.COMPLETED
    assert (CALLS["notify_customer"], CALLS["Refund.create"]) == (notices, refunds)
