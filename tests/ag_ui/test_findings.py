"""What an attacker found in the AG-UI endpoint, each held by a test: a waiting stream
holds no database connection, a user message is read as every JSON surface reads JSON,
a thread with a turn in progress takes no new input, and a retried run's stream goes
past its old failure. (Concurrent new inputs on one thread: tests/integration.)"""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connection

from symfonic_django import runs
from symfonic_django.models import Pause, Run, RunStatus
from symfonic_django.runs import start_run

from .conftest import REFUND, body, run_queued

pytestmark = pytest.mark.django_db


def message(thread: str, text: str) -> dict[str, Any]:
    sent = body(thread)
    sent["messages"] = [{"id": "m1", "role": "user", "content": text}]
    return sent


@pytest.mark.django_db(transaction=True)
def test_a_waiting_stream_holds_no_database_connection(agui: Any, thread: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    held: list[bool] = []

    async def wait(run_id: Any, seconds: float) -> None:
        held.append(await sync_to_async(lambda: connection.connection is not None)())
        await sync_to_async(run_queued)()

    monkeypatch.setattr("symfonic_django.api.agui.stream.wait_for_more", wait)
    stream = agui("alice", "refund", body(thread, input=REFUND))
    assert stream.last["type"] == "RUN_FINISHED"
    assert held and not any(held), held


@pytest.mark.parametrize(("text", "why"), [
    ('{"order_id": ' + "[" * 3000 + "]" * 3000 + "}", "deeper than"),
    ('{"order_id": "A", "amount": 9999, "amount": 1}', "not read"),
    ('{"order_id": "A", "amount": 10000.0000000000001}', "not read"),
])
def test_a_user_message_is_read_as_every_json_surface_reads_json(agui: Any, thread: str,
                                                                 text: str, why: str) -> None:
    stream = agui("alice", "refund", message(thread, text))
    assert stream.types == ["RUN_ERROR"] and stream.last["code"] == "invalid_request"
    assert why in stream.last["message"] or why == "not read"
    assert not Run.objects.exists()


def test_a_user_message_that_is_json_is_the_input(agui: Any, thread: str) -> None:
    stream = agui("alice", "refund", message(thread, '{"order_id": "M-1", "amount": 3}'))
    assert stream.last["type"] == "RUN_FINISHED"
    assert Run.objects.get(thread_id=thread).input == {"order_id": "M-1", "amount": 3}


def test_a_thread_with_a_turn_in_progress_takes_no_new_input(agui: Any, thread: str,
                                                            users: Any) -> None:
    queued = start_run("refund", REFUND, scope="acme", thread_id=thread, dispatch=False)
    before = list(Run.objects.values_list("pk", "status"))
    stream = agui("alice", "refund", body(thread, input=REFUND))
    assert stream.types == ["RUN_ERROR"] and stream.last["code"] == "thread_paused"
    assert "in progress" in stream.last["message"]
    assert list(Run.objects.values_list("pk", "status")) == before
    assert Run.objects.get(pk=queued.pk).status == RunStatus.QUEUED


def test_a_retried_runs_stream_goes_past_its_old_failure(agui: Any, thread: str) -> None:
    """The first attempt asks, then fails; the stream ends RUN_ERROR. Retried, the run
    asks again and pauses: a reconnect from the start shows the interrupt, not the old
    failure."""
    first = agui("alice", "asks_then_fails_once", body(thread, input={}))
    assert first.last["type"] == "RUN_ERROR"
    run = Run.objects.get(thread_id=thread)
    runs.retry(run.pk, comment="the host is back")
    run_queued()
    run.refresh_from_db()
    assert run.status == RunStatus.PAUSED, run.error
    again = agui("alice", "asks_then_fails_once", body(thread, after=f"{run.pk}:0"))
    assert again.last["type"] == "RUN_FINISHED", again.events
    assert again.last["outcome"]["type"] == "interrupt"
    [interrupt] = again.interrupts
    assert interrupt["id"].split(":")[0] == str(Pause.objects.get(run=run).pk)
