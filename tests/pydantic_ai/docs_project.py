"""docs/pydantic-ai.md's project: the python blocks that name a file under ``proj/``, what
they leave to the reader (supplied here), and the ``project`` fixture that puts that package
on the path with its settings block applied (``test_docs_snippet`` and the browser test of
its review page)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..doc_projects import MAX_LINES, SNIPPET, DocProject

__all__ = ["DOC", "MAX_LINES", "SNIPPET", "file_blocks", "python_blocks"]


#: What the snippet leaves to the project: the model (the example's scripted desk: one
#: ``refund`` call per refund of the run's JSON input) and the code that moves the money.
SUPPLIED = {
    "proj/__init__.py": "",
    "proj/llm.py": "from example_project.pydantic_agent import refund_desk as model\n",
    "proj/payments.py": "from symfonic_django.turns import current_turn\n"
                        "from tests.testapp.agents import record_refund\n\n\n"
                        "def make_refund(order_id, amount):\n"
                        "    return record_refund(order_id, amount, current_turn().root_run_id)\n",
}

#: The blocks of the doc the project is made of.
PROJECT = ("proj/agents.py", "proj/tools.py")
#: One refund, as the doc's agent is asked it.
ONE_REFUND = {"refunds": [{"order_id": "A-1", "amount": 10}]}


DOC_PROJECT = DocProject("pydantic-ai.md", files=PROJECT, supplied=SUPPLIED)
DOC = DOC_PROJECT.path
python_blocks = DOC_PROJECT.python_blocks
file_blocks = DOC_PROJECT.file_blocks


@pytest.fixture
def pyd_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: Any) -> Iterator[None]:
    """The snippet's ``proj`` package on the path, its settings block applied."""
    with DOC_PROJECT.installed(tmp_path, monkeypatch, settings):
        yield
