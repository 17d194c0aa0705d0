"""docs/pydantic-ai.md, run as written: the blocks that name a file under ``proj/`` become a
project package (its model and payments supplied by ``docs_project``), and a turn of the
agent they register goes start -> pause -> approve -> completed through the app."""

from __future__ import annotations

from decimal import Decimal

import pytest

from symfonic_django import pauses
from symfonic_django.models import PauseKind, RunStatus
from tests.testapp.models import Refund

from .conftest import continue_run, pauses_of, run_turn
from .docs_project import DOC_PROJECT, MAX_LINES, SNIPPET, file_blocks, pyd_project, python_blocks  # noqa: F401

pytestmark = pytest.mark.django_db


def test_the_snippet_is_under_20_lines():
    lines = DOC_PROJECT.snippet_lines()
    assert lines <= MAX_LINES, f"the snippet has {lines} lines"


def test_every_python_block_of_the_doc_compiles():
    for body in python_blocks():
        compile(body, "docs/pydantic-ai.md", "exec")


def test_the_snippet_puts_a_pydantic_ai_agent_behind_the_app(pyd_project):  # noqa: F811
    ask = {"refunds": [{"order_id": "A-1", "amount": 10}, {"order_id": "B-2", "amount": 20}]}
    run = run_turn("refunds", ask)
    assert run.status == RunStatus.PAUSED, run.error
    [pause] = pauses_of(run)
    assert pause.kind == PauseKind.APPROVAL
    assert [a["args"] for a in pause.prompt["action_requests"]] == ask["refunds"]
    # The call in words, its arguments in the tool's order (a JSON column may reorder them).
    assert pause.prompt["action_requests"][0]["description"] == "refund(order_id=A-1, amount=10)"
    [config] = pause.prompt["review_configs"]
    assert config["args_schema"]["properties"]["amount"]["maximum"] == 500
    assert "edit" in config["allowed_decisions"] and not Refund.objects.exists()

    done = continue_run(pauses.approve(pause.pk).continuation.pk)
    assert done.status == RunStatus.COMPLETED, done.error
    assert sorted(Refund.objects.values_list("order_id", "amount")) == [
        ("A-1", Decimal("10")), ("B-2", Decimal("20"))]
