"""docs/openai-agents.md, run as written: its two blocks are a project whose agent goes
start -> pause -> answer -> completed through the app, recording the approved refunds."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from symfonic_django.models import PauseKind, RunStatus
from tests.testapp.models import Refund

from .conftest import answer, paused
from .docs_project import (
    DOC,
    DOC_PROJECT,
    MAX_LINES,
    THREE_REFUNDS,
    project,  # noqa: F401  (a fixture)
    python_blocks,
)

pytestmark = pytest.mark.django_db


def test_the_snippet_is_under_20_lines():
    lines = DOC_PROJECT.snippet_lines()
    assert lines <= MAX_LINES, f"the snippet has {lines} lines"
    assert f"counts their lines ({lines})" in DOC.read_text()


def test_every_python_block_of_the_doc_compiles():
    for body in python_blocks():
        compile(body, str(DOC), "exec")


def test_the_snippet_puts_an_sdk_agent_behind_the_app(project):  # noqa: F811
    run, pause = paused("refunds", THREE_REFUNDS)
    assert pause.kind == PauseKind.APPROVAL
    assert [a["args"] for a in pause.prompt["action_requests"]] == THREE_REFUNDS["refunds"]
    assert [c["allowed_decisions"] for c in pause.prompt["review_configs"]] == [
        ["approve", "reject", "respond"]]
    done = answer(pause, [{"type": "approve"}, {"type": "reject", "message": "no"},
                          {"type": "approve"}])
    assert done.status == RunStatus.COMPLETED, done.error
    assert done.output.startswith("3 refund(s) reviewed")
    assert sorted(Refund.objects.values_list("order_id", "amount")) == [
        ("A-1", Decimal("10.00")), ("C-3", Decimal("3.00"))]


def test_every_test_the_doc_names_exists():
    tests = DOC.parents[1] / "tests"
    defined = {match for path in tests.rglob("test_*.py")
               for match in re.findall(r"^def (test_\w+)", path.read_text(), re.M)}
    named = set(re.findall(r"`(test_\w+)`", DOC.read_text()))
    assert named and named <= defined, named - defined
