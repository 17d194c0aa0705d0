"""docs/langgraph.md, run as written.

- Section 1: the blocks that name a file under ``proj/`` become a project
  package, and a turn of the agent they register goes start -> pause ->
  approve -> completed through the app. What they import from the reader's own
  code is supplied here: the chat model (the tests' scripted one, which asks
  for one ``refund`` per item of the user's JSON message) and the tools (the
  tests' fenced ``refund``).
- Section 2: the wrong and the right tool run in a ``ToolNode`` that runs
  again after a sibling tool crashed; their ``Refund`` and ``notify_customer``
  (the reader's own) are counters here.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from example_project.shop.models import Refund
from symfonic_django import pauses, runs
from symfonic_django.agents.langgraph import langgraph_agent
from symfonic_django.checkpoint import DjangoSaver
from symfonic_django.models import PauseKind, RunStatus

from .conftest import continue_run, events_of, pauses_of, run_turn
from .graphs import CALLS, FAIL_ONCE, flaky_check, orders_input, propose

pytestmark = pytest.mark.django_db

DOC = Path(__file__).resolve().parents[2] / "docs" / "langgraph.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
TARGET = re.compile(r"^# (proj/[\w/]+\.py)$")

#: The acceptance of issue 12: the agent module and its SYMFONIC entry in under 20 lines.
SNIPPET = ("proj/agents.py", "proj/settings.py")
MAX_LINES = 19

#: What the snippet leaves to the project.
SUPPLIED = {
    "proj/__init__.py": "",
    "proj/llm.py": "from tests.langgraph.graphs import ScriptedChatModel\n\n"
                   "model = ScriptedChatModel()\n",
    "proj/tools.py": "from tests.langgraph.graphs import refund  # noqa: F401\n",
}


def python_blocks() -> list[str]:
    return [body for language, body in FENCE.findall(DOC.read_text()) if language == "python"]


def file_blocks() -> dict[str, str]:
    """The doc's python blocks whose first line names a file under ``proj/``, by path."""
    found = {}
    for body in python_blocks():
        target = TARGET.match(body.partition("\n")[0])
        if target:
            found[target.group(1)] = body
    return found


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: Any) -> Iterator[None]:
    """The snippet's ``proj`` package on the path, its settings block applied."""
    blocks = file_blocks()
    for path, text in {**SUPPLIED, "proj/agents.py": blocks["proj/agents.py"]}.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    namespace: dict[str, Any] = {}
    exec(blocks["proj/settings.py"], namespace)
    settings.SYMFONIC = {**settings.SYMFONIC, "AGENTS": {
        **settings.SYMFONIC["AGENTS"], **namespace["SYMFONIC"]["AGENTS"]}}
    yield
    for name in [n for n in sys.modules if n == "proj" or n.startswith("proj.")]:
        del sys.modules[name]


def test_the_snippet_is_under_20_lines():
    blocks = file_blocks()
    assert set(SNIPPET) <= set(blocks)
    lines = sum(len(blocks[path].splitlines()) for path in SNIPPET)
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
