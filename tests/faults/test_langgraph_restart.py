"""A paused LangGraph agent survives a restart of every process (issue 12, "Restart survival").

The test app's ``refund_graph`` runs on a live deployment (``tests/e2e/stack.py``:
a private ``redis-server``, daphne, two Celery workers) on PostgreSQL. A run is
started over the HTTP API and pauses on a worker. Then every process goes: the
workers and daphne are killed (SIGKILL: nothing gets to flush or hand anything
over), Redis is stopped, and the new deployment's Redis starts empty, so what
survives is what PostgreSQL holds: the pause and the graph's checkpoints. A new
deployment is started, the pause is answered over the API, and one of its
workers resumes the graph.

"Exactly where it stopped" is read from the thread's checkpoints: the rows of the
first turn are untouched, and the continuation's first checkpoint is the child of
the paused turn's last one, one step on. A graph started over would have written
an ``input`` checkpoint and run the model's first step again.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from symfonic_django.checkpoint import DjangoSaver
from symfonic_django.models import GraphCheckpoint, Pause, PauseStatus, Run, RunStatus
from symfonic_django.threads import checkpoint_thread_id
from tests.testapp.models import Refund

from ..e2e.conftest import running_stack
from ..e2e.stack import Stack, wait_for
from .conftest import assert_stream

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

THREE = {"refunds": [{"order_id": "R-1", "amount": 10}, {"order_id": "R-2", "amount": 19.99},
                     {"order_id": "R-3", "amount": 3}]}
#: Approve R-1, edit R-2 to 5.50, reject R-3.
DECISIONS = [{"type": "approve"},
             {"type": "edit", "edited_action": {"name": "refund",
                                                "args": {"order_id": "R-2", "amount": 5.5}}},
             {"type": "reject", "message": "already refunded"}]
RECORDED = [("R-1", Decimal("10.00")), ("R-2", Decimal("5.50"))]


@pytest.fixture
def alice_token(tenants: Any) -> str:
    """``seed_demo``'s alice, who may start runs and answer pauses in acme."""
    from tests.testapp.seed import seed_users

    return seed_users()["alice"]["token"]


def checkpoints(thread_id: str) -> list[dict[str, Any]]:
    """The acme thread's checkpoints, oldest first, with the bytes each one stores."""
    rows = GraphCheckpoint.objects.filter(thread_id=checkpoint_thread_id("acme", thread_id),
                                          checkpoint_ns="").order_by(
        "checkpoint_id").values("checkpoint_id", "parent_checkpoint_id", "run_id", "metadata",
                                "checkpoint")
    return [{**row, "checkpoint": bytes(row["checkpoint"])} for row in rows]


def wait_status(run_id: str, statuses: set[str], stack: Stack, what: str) -> Run:
    def reached() -> Run | None:
        run = Run.objects.get(pk=run_id)
        return run if run.status in statuses else None

    return wait_for(reached, timeout=90, what=what, detail=stack.logs)


def directory(path: Path) -> Path:
    path.mkdir()
    return path


def killed(stack: Stack) -> Callable[[], bool]:
    """Whether every process of ``stack`` is gone, Redis included."""
    assert stack.redis is not None
    redis = stack.redis
    return lambda: not any(proc.alive() for proc in stack.procs) and not redis.ping()


def test_a_paused_graph_survives_a_restart_of_every_process_and_resumes_where_it_stopped(
        alice_token: str, tmp_path: Path) -> None:
    # 1. Started over HTTP; a worker runs the first turn, which pauses.
    with running_stack(directory(tmp_path / "before"), kill_first=True) as first:
        status, body = first.api("POST", "runs/", alice_token,
                                 {"agent": "refund_graph", "input": THREE})
        assert status == 202, body
        run_id = body["run_id"]
        paused = wait_status(run_id, {RunStatus.PAUSED, RunStatus.FAILED}, first,
                             "the first turn to pause")
        assert paused.status == RunStatus.PAUSED, paused.error
    # 2. Every process is gone, Redis with its queues.
    assert killed(first)()
    [pause] = Pause.objects.filter(run_id=run_id)
    assert pause.status == PauseStatus.PENDING and len(pause.prompt["action_requests"]) == 3
    before = checkpoints(run_id)
    assert before and all(row["run_id"] == run_id for row in before)
    assert not Refund.objects.exists()

    # 3. A new deployment; the pause is answered over HTTP, a new worker continues.
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

    # The approved and the edited refund, once each, under the conversation's root run.
    assert sorted(Refund.objects.values_list("order_id", "amount")) == RECORDED
    assert set(Refund.objects.values_list("run_id", flat=True)) == {paused.pk}

    # Resumed exactly where it stopped: the first turn's checkpoints are as they were, and
    # the continuation's start from the last of them, one step on, with no new input.
    after = checkpoints(run_id)
    assert after[:len(before)] == before
    resumed = after[len(before):]
    assert resumed and all(row["run_id"] == continuation_id for row in resumed)
    assert resumed[0]["parent_checkpoint_id"] == before[-1]["checkpoint_id"]
    assert [row["metadata"]["step"] for row in resumed] == list(
        range(before[-1]["metadata"]["step"] + 1, before[-1]["metadata"]["step"] + 1
              + len(resumed)))
    assert {row["metadata"]["source"] for row in resumed} == {"loop"}

    # The conversation as the graph keeps it: the request, the model's calls, their three
    # answers, then the confirmation; the model was asked once for each of its turns.
    saved = DjangoSaver().get_tuple(
        {"configurable": {"thread_id": checkpoint_thread_id("acme", run_id)}})
    assert saved is not None
    messages = saved.checkpoint["channel_values"]["messages"]
    assert [type(m) for m in messages] == [HumanMessage, AIMessage, ToolMessage, ToolMessage,
                                           ToolMessage, AIMessage]
    assert len(messages[1].tool_calls) == 3 and not messages[-1].tool_calls

    # Each turn's events are contiguous and end once: paused, then completed.
    assert assert_stream(run_id, final=True)[-1] == "turn.paused"
    resumed_events = assert_stream(continuation_id, final=True)
    assert resumed_events[-1] == "turn.completed"
    assert resumed_events.count("tool.completed") == 3
    assert "tool.started" not in resumed_events  # the calls were not proposed again
