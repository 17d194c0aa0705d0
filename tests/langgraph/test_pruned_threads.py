"""``symfonic_prune`` (``retention.prune``) deletes the checkpoints of the threads the
LangGraph adapter drove, once every run on them is done: the thread it prunes is the one
the adapter ran on (the run's ``thread_id``, or its root run's id)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from symfonic_django import pauses
from symfonic_django.models import GraphCheckpoint, GraphCheckpointWrite, Run, RunStatus
from symfonic_django.retention import prune

from .conftest import checkpoint_key, continue_run, pauses_of, run_turn

pytestmark = pytest.mark.django_db

DAY = timedelta(days=1)


@pytest.fixture
def event_retention(settings: Any) -> None:
    settings.SYMFONIC = {**settings.SYMFONIC, "EVENT_RETENTION": int(DAY.total_seconds())}


def stored(thread_id: str) -> int:
    key = checkpoint_key(thread_id)
    return (GraphCheckpoint.objects.filter(thread_id=key).count()
            + GraphCheckpointWrite.objects.filter(thread_id=key).count())


def test_the_threads_of_runs_done_before_the_retention_go_and_a_paused_one_stays(
        tenants, event_retention):
    # A run that paused, was answered and completed, on its root run's id.
    paused = run_turn("lg_questions", {"ask": True})
    [first] = pauses_of(paused)
    second_turn = continue_run(pauses.answer_pause(first.pk, "A-1").continuation.pk)
    [second] = pauses_of(second_turn)
    done = continue_run(pauses.answer_pause(second.pk, {"amount": 5}).continuation.pk)
    assert done.status == RunStatus.COMPLETED
    # A conversation over two runs on a thread of its own.
    assert run_turn("lg_questions", {"ask": False}, thread_id="chat").status == (
        RunStatus.COMPLETED)
    assert run_turn("lg_questions", {"ask": False}, thread_id="chat").status == (
        RunStatus.COMPLETED)
    # A run still waiting for its answer.
    waiting = run_turn("lg_questions", {"ask": True}, thread_id="waiting")
    assert waiting.status == RunStatus.PAUSED
    kept = stored("waiting")
    gone = stored(str(paused.pk)) + stored("chat")
    assert kept and gone

    now = timezone.now() + 2 * DAY  # every turn finished two days ago
    assert prune(now=now, dry_run=True).checkpoints == gone
    assert prune(now=now).checkpoints == gone

    assert stored(str(paused.pk)) == stored("chat") == 0
    assert stored("waiting") == kept
    # The waiting run's pause still resumes its thread.
    [pause] = pauses_of(waiting)
    resumed = continue_run(pauses.answer_pause(pause.pk, "B-2").continuation.pk)
    assert resumed.status == RunStatus.PAUSED
    assert Run.objects.filter(thread_id="waiting").count() == 2
