"""docs/openai-agents.md's project: the python blocks that name a file under ``proj/``,
what they leave to the reader (supplied here), and the ``project`` fixture that puts that
package on the path with its settings block applied (the snippet test and the browser
test of its review page)."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "openai-agents.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
TARGET = re.compile(r"^# (proj/[\w/]+\.py)$")

#: The agent module and its SYMFONIC entry, in under 20 lines.
SNIPPET = ("proj/agents.py", "proj/settings.py")
MAX_LINES = 19

#: What the snippet leaves to the project: the model (the SDK's scripted test double,
#: answering as the example's desk does) and the code that moves the money.
SUPPLIED = {
    "proj/__init__.py": "",
    "proj/llm.py": "from agents.testing import ModelStep, ScriptedModel\n"
                   "from tests.testapp.openai_refund import desk_reply\n\n"
                   "model = ScriptedModel([ModelStep.respond(desk_reply) for _ in range(20)])\n",
    "proj/payments.py": "from symfonic_django.turns import current_turn\n"
                        "from tests.testapp.agents import record_refund\n\n\n"
                        "def make_refund(order_id, amount):\n"
                        "    return record_refund(order_id, amount, current_turn().root_run_id)\n",
}
PROJECT = ("proj/agents.py",)


def python_blocks() -> list[str]:
    return [body for language, body in FENCE.findall(DOC.read_text()) if language == "python"]


def file_blocks() -> dict[str, str]:
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
    for path, text in {**SUPPLIED, **{path: blocks[path] for path in PROJECT}}.items():
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


#: What the doc's agent is asked in the tests: three refunds.
THREE_REFUNDS = {"refunds": [{"order_id": "A-1", "amount": 10},
                             {"order_id": "B-2", "amount": 19.99},
                             {"order_id": "C-3", "amount": 3}]}
