"""A paused Pydantic AI agent survives a restart of every process.

The tests' ``refund_pydantic`` runs on a live deployment (``tests/e2e/stack.py``). A run
is started over the HTTP API and pauses; then the workers and daphne are killed
(SIGKILL) and Redis is stopped, so what survives is what PostgreSQL holds: the pause
and the run's stored message history. A new deployment answers the pause over the API
and one of its workers resumes the history, once: each approved refund is recorded once,
and the model is not asked its first step again (the history ends on its calls).
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from symfonic_django.models import AgentState, Pause, PauseStatus, Run, RunStatus
from tests.testapp.models import Refund

from ..e2e.conftest import running_stack
from ..e2e.stack import Stack, wait_for
from .conftest import assert_stream

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

THREE = {"refunds": [{"order_id": "Q-1", "amount": 10}, {"order_id": "Q-2", "amount": 19.99},
                     {"order_id": "Q-3", "amount": 3}]}
DECISIONS = [{"type": "approve"},
             {"type": "edit", "edited_action": {"name": "refund",
                                                "args": {"order_id": "Q-2", "amount": 5.5}}},
             {"type": "reject", "message": "already refunded"}]
RECORDED = [("Q-1", Decimal("10.00")), ("Q-2", Decimal("5.50"))]


@pytest.fixture
def alice_token(tenants: Any) -> str:
    from tests.testapp.seed import seed_users

    return seed_users()["alice"]["token"]


def wait_status(run_id: str, statuses: set[str], stack: Stack, what: str) -> Run:
    def reached() -> Run | None:
        run = Run.objects.get(pk=run_id)
        return run if run.status in statuses else None

    return wait_for(reached, timeout=90, what=what, detail=stack.logs)


def directory(path: Path) -> Path:
    path.mkdir()
    return path


def test_a_paused_pydantic_ai_run_survives_a_restart_of_every_process(
        alice_token: str, tmp_path: Path) -> None:
    with running_stack(directory(tmp_path / "before"), kill_first=True) as first:
        status, body = first.api("POST", "runs/", alice_token,
                                 {"agent": "refund_pydantic", "input": THREE})
        assert status == 202, body
        run_id = body["run_id"]
        paused = wait_status(run_id, {RunStatus.PAUSED, RunStatus.FAILED}, first, "the pause")
        assert paused.status == RunStatus.PAUSED, paused.error
    assert first.redis is not None
    assert not any(proc.alive() for proc in first.procs) and not first.redis.ping()
    [pause] = Pause.objects.filter(run_id=run_id)
    assert pause.status == PauseStatus.PENDING and len(pause.prompt["action_requests"]) == 3
    stored = AgentState.objects.get(run_id=run_id)
    assert stored.consumed_by_id is None and not Refund.objects.exists()
    history = json.loads(stored.state)["messages"]

    with running_stack(directory(tmp_path / "after"), kill_first=True) as second:
        status, body = second.api("POST", f"pauses/{pause.pk}/answer/", alice_token,
                                  {"answer": {"decisions": DECISIONS}})
        assert status == 202, body
        continuation_id = body["run_id"]
        done = wait_status(continuation_id, {RunStatus.COMPLETED, RunStatus.FAILED}, second,
                           "the continuation to finish")
        worker_pids = {str(proc.pid) for proc in second.procs if proc.name.startswith("worker")}
    assert done.status == RunStatus.COMPLETED, done.error
    assert done.output.startswith("3 refund(s) reviewed")
    assert done.worker.rsplit(":", 1)[1] in worker_pids  # a worker of the new deployment
    assert sorted(Refund.objects.values_list("order_id", "amount")) == RECORDED
    assert set(Refund.objects.values_list("run_id", flat=True)) == {paused.pk}
    stored.refresh_from_db()
    assert stored.consumed_by_id == done.pk
    assert json.loads(stored.state)["messages"] == history  # the version resumed, as stored

    assert assert_stream(run_id, final=True)[-1] == "turn.paused"
    resumed = assert_stream(continuation_id, final=True)
    assert resumed[-1] == "turn.completed" and resumed.count("tool.completed") == 3
