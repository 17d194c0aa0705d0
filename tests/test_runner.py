"""The runner's claim, its end of a turn and its turn loop, on both databases."""

from __future__ import annotations

import threading

import pytest
from django.db import transaction

from symfonic_django import pauses, runner
from symfonic_django.events import TurnCompleted, TurnStarted
from symfonic_django.models import Run, RunStatus, TurnEvent
from symfonic_django.runner import LeaseLost, claim_run, execute_run, finish, start_run

from .conftest import paused_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_claim_returns_the_row_as_stored_and_records_turn_started(tenants):
    run = start_run("echo", {"text": "hi"}, scope="acme", dispatch=False)
    claimed = claim_run(run.pk, "w1")
    assert claimed is not None
    stored = Run.objects.get(pk=run.pk)
    for field in Run._meta.concrete_fields:  # every field read back, JSON ones decoded
        assert getattr(claimed, field.attname) == getattr(stored, field.attname), field.name
    assert claimed.status == RunStatus.RUNNING and claimed.worker == "w1"
    assert claimed.input == {"text": "hi"} and claimed.attempts == 1
    event = TurnEvent.objects.get(run=run)
    assert (event.seq, event.type) == (1, "turn.started")
    assert event.data == TurnStarted(agent="echo", resumed_from_pause=None).data()
    assert (claimed.started_event.pk, claimed.started_event.seq) == (event.pk, 1)
    assert claimed.started_event.data == event.data


def test_a_continuation_claim_records_the_pause_it_resumes_from(tenants):
    _, pause = paused_run()
    resolution = pauses.approve(pause.pk)
    claimed = claim_run(resolution.continuation.pk, "w1")
    event = TurnEvent.objects.get(run=resolution.continuation)
    assert event.data == {"agent": "echo", "resumed_from_pause": str(pause.pk)}
    assert claimed.input == resolution.continuation.input


def test_a_second_claim_gets_nothing_and_writes_nothing(tenants):
    run = start_run("noop", {}, scope="acme", dispatch=False)
    assert claim_run(run.pk, "w1") is not None
    assert claim_run(run.pk, "w2") is None
    assert Run.objects.get(pk=run.pk).worker == "w1"
    assert TurnEvent.objects.filter(run=run).count() == 1


def test_finish_by_a_worker_that_lost_the_run_writes_nothing(tenants):
    run = start_run("noop", {}, scope="acme", dispatch=False)
    claim_run(run.pk, "w1")
    with pytest.raises(LeaseLost):
        finish(run.pk, "w2", 2, TurnCompleted(output="not mine"))
    assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING
    assert list(TurnEvent.objects.filter(run=run).values_list("type", flat=True)) == [
        "turn.started"]
    assert finish(run.pk, "w1", 2, TurnCompleted(output="mine")) == RunStatus.COMPLETED
    run.refresh_from_db()
    assert (run.status, run.output, run.lease_until) == (RunStatus.COMPLETED, "mine", None)
    assert TurnEvent.objects.get(run=run, seq=2).data == {"output": "mine"}


def test_turns_share_one_loop_and_run_their_database_calls_in_the_calling_thread(tenants):
    seen = []
    for _ in range(2):
        run = start_run("where", {}, scope="acme", dispatch=False)
        assert execute_run(run.pk) == RunStatus.COMPLETED
        seen.append(Run.objects.get(pk=run.pk).output)
    # Both turns ran on this process's turn loop, on its own thread, not a loop each.
    loop = runner.turn_loop()
    assert [s["loop"] for s in seen] == [id(loop), id(loop)]
    assert seen[0]["thread"] == seen[1]["thread"] != threading.get_ident()
    # Inside an open transaction of this thread: the turn's writes join it, so they are
    # invisible to another connection until it commits, and gone after a rollback.
    with pytest.raises(RuntimeError), transaction.atomic():
        run = start_run("noop", {}, scope="acme", dispatch=False)
        assert execute_run(run.pk) == RunStatus.COMPLETED
        seen: list[int] = []
        reader = threading.Thread(target=lambda: seen.append(
            TurnEvent.objects.filter(run_id=run.pk).count()))
        reader.start(), reader.join()
        assert seen == [0]
        raise RuntimeError("roll back")
    assert not Run.objects.filter(pk=run.pk).exists()
