"""``refund_openai`` (the tests' copy of the example) on a live deployment
(``tests/e2e/stack.py``: a private ``redis-server``, daphne, two Celery workers, PostgreSQL).

- Over the HTTP API: the run pauses once with one action per refund; an answer approving
  two and rejecting one records exactly the two approved refunds, once each.
- A run paused on that deployment survives every process going (workers and daphne
  SIGKILLed, Redis stopped): what survives is PostgreSQL, where the pause and the SDK's
  stored ``RunState`` are. A new deployment answers it over the API, and one of its workers
  takes the state and completes the run, each approved refund once, without the calls
  being proposed again.
"""

from __future__ import annotations

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

THREE = {"refunds": [{"order_id": "R-1", "amount": 10}, {"order_id": "R-2", "amount": 19.99},
                     {"order_id": "R-3", "amount": 3}]}
#: Approve R-1 and R-3, reject R-2.
DECISIONS = [{"type": "approve"}, {"type": "reject", "message": "already refunded"},
             {"type": "approve"}]
RECORDED = [("R-1", Decimal("10.00")), ("R-3", Decimal("3.00"))]


@pytest.fixture
def alice_token(tenants: Any) -> str:
    from tests.testapp.seed import seed_users

    return seed_users()["alice"]["token"]


def wait_status(run_id: str, statuses: set[str], stack: Stack, what: str) -> Run:
    def reached() -> Run | None:
        run = Run.objects.get(pk=run_id)
        return run if run.status in statuses else None

    return wait_for(reached, timeout=90, what=what, detail=stack.logs)


def start_paused(stack: Stack, token: str) -> tuple[Run, Pause]:
    status, body = stack.api("POST", "runs/", token, {"agent": "refund_openai", "input": THREE})
    assert status == 202, body
    paused = wait_status(body["run_id"], {RunStatus.PAUSED, RunStatus.FAILED}, stack,
                         "the first turn to pause")
    assert paused.status == RunStatus.PAUSED, paused.error
    [pause] = Pause.objects.filter(run=paused)
    assert pause.status == PauseStatus.PENDING
    assert [a["args"] for a in pause.prompt["action_requests"]] == THREE["refunds"]
    return paused, pause


def answer_and_finish(stack: Stack, token: str, pause: Pause) -> Run:
    status, body = stack.api("POST", f"pauses/{pause.pk}/answer/", token,
                             {"answer": {"decisions": DECISIONS}})
    assert status == 202, body
    return wait_status(body["run_id"], {RunStatus.COMPLETED, RunStatus.FAILED}, stack,
                       "the continuation to finish")


def assert_recorded_once(paused: Run, done: Run) -> None:
    assert done.status == RunStatus.COMPLETED, done.error
    assert done.output.startswith("3 refund(s) reviewed")
    assert sorted(Refund.objects.values_list("order_id", "amount")) == RECORDED
    assert set(Refund.objects.values_list("run_id", flat=True)) == {paused.pk}
    assert AgentState.objects.get(run=paused).consumed_by_id == done.pk
    assert assert_stream(str(paused.pk), final=True)[-1] == "turn.paused"
    resumed = assert_stream(str(done.pk), final=True)
    assert resumed[-1] == "turn.completed" and resumed.count("tool.completed") == 3
    assert "tool.started" not in resumed  # the calls were not proposed again


def test_over_the_http_api_one_pause_with_an_action_per_refund_records_the_approved_ones(
        alice_token: str, tmp_path: Path) -> None:
    with running_stack(tmp_path, kill_first=True) as stack:
        paused, pause = start_paused(stack, alice_token)
        done = answer_and_finish(stack, alice_token, pause)
    assert_recorded_once(paused, done)


def test_a_paused_run_survives_a_restart_of_every_process(alice_token: str,
                                                          tmp_path: Path) -> None:
    (tmp_path / "before").mkdir()
    (tmp_path / "after").mkdir()
    with running_stack(tmp_path / "before", kill_first=True) as first:
        paused, pause = start_paused(first, alice_token)
    assert first.redis is not None
    assert not any(proc.alive() for proc in first.procs) and not first.redis.ping()
    stored = AgentState.objects.get(run=paused)
    assert stored.consumed_by_id is None and not Refund.objects.exists()

    with running_stack(tmp_path / "after", kill_first=True) as second:
        done = answer_and_finish(second, alice_token, pause)
        worker_pids = {str(proc.pid) for proc in second.procs if proc.name.startswith("worker")}
    assert done.worker.rsplit(":", 1)[1] in worker_pids  # a worker of the new deployment
    assert_recorded_once(paused, done)
    assert AgentState.objects.get(run=paused).state == stored.state
