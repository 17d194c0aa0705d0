"""The real ``@ag-ui/client`` ``HttpAgent`` (Node, its own event verification on) drives
``refund_graph`` through a live deployment: daphne, Celery workers, PostgreSQL, Redis.

start -> interrupt (three refunds, three interrupts) -> resume (approve one, edit one,
reject one) -> success; exactly the approved and the edited refunds are recorded, each
once, and the audit names alice and the surface ``ag-ui``. The client is installed by
``npm ci --prefix tests/ag_ui/client`` (NOTES-agui.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from symfonic_django.models import Decision
from tests.testapp.models import Refund

from ..conftest import need
from ..e2e.conftest import running_stack

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

CLIENT = Path(__file__).resolve().parent / "client"


def test_http_agent_approves_one_edits_one_rejects_one(tmp_path: Path, users: Any) -> None:
    node = shutil.which("node")
    need(node is not None, "needs node on PATH")
    need((CLIENT / "node_modules" / "@ag-ui" / "client").is_dir(),
         "needs @ag-ui/client: npm ci --prefix tests/ag_ui/client")
    with running_stack(tmp_path) as live:
        done = subprocess.run([str(node), "refund_graph.mjs", live.origin,
                               users["alice"]["token"]], cwd=CLIENT, capture_output=True,
                              text=True, timeout=180, env={**os.environ, "NODE_ENV": "test"})
        assert done.returncode == 0, f"{done.stderr}\n{live.logs()}"
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["errors"] == []
    assert [i["reason"] for i in seen["interrupts"]] == ["tool_call"] * 3
    assert seen["pendingAfter"] == []
    assert seen["types"].count("RUN_STARTED") == 2 and seen["types"][-1] == "RUN_FINISHED"
    # The client's own transcript: every held call got its result, on the ids it held.
    results = [m for m in seen["messages"] if m["role"] == "tool"]
    assert {m["toolCallId"] for m in results} == {i["toolCallId"] for i in seen["interrupts"]}
    assert sorted(Refund.objects.values_list("order_id", "amount")) == [
        ("NODE-1", Decimal("10.00")), ("NODE-2", Decimal("2.00"))]
    [decision] = Decision.objects.all()
    assert (decision.via, decision.actor.username, decision.action) == ("ag-ui", "alice", "edit")
