"""A new run on a thread that is still paused on another run's pauses is refused, changing
nothing: LangGraph would take the new input and drop the pending interrupts, leaving
pauses that can be answered in the app but whose continuation could only fail
(``used_interrupt``). The earlier pause stays answerable and resumes the graph."""

from __future__ import annotations

from typing import Any

import pytest

from symfonic_django import pauses, runs
from symfonic_django.models import PauseStatus, Run, RunStatus

from ..conftest import snapshot
from .conftest import continue_run, events_of, pauses_of, run_turn, thread_rows
from .graphs import CALLS

pytestmark = pytest.mark.django_db

THREAD = "t-paused"


def refused_as_paused(run: Run) -> dict[str, Any]:
    assert run.status == RunStatus.FAILED
    kind, data = events_of(run)[-1]
    assert (kind, data["code"]) == ("turn.failed", "thread_paused")
    assert run.error == data
    return data


def test_a_new_run_on_a_paused_thread_is_refused_and_the_pause_still_resumes_it(tenants):
    first = run_turn("lg_questions", {"ask": True}, thread_id=THREAD)
    [pause] = pauses_of(first)
    before = (snapshot(pause), thread_rows(THREAD))

    data = refused_as_paused(run_turn("lg_questions", {"ask": False}, thread_id=THREAD))
    assert str(pause.pk) in data["message"] and str(first.pk) in data["message"]
    assert (snapshot(pause), thread_rows(THREAD)) == before  # nothing changed

    # The earlier pause is answered, and the graph resumes where it stopped.
    second_turn = continue_run(pauses.answer_pause(pause.pk, "A-1").continuation.pk)
    assert second_turn.status == RunStatus.PAUSED
    [second] = pauses_of(second_turn)
    assert second.prompt == {"question": "How much?"}
    last = continue_run(pauses.answer_pause(second.pk, {"amount": 5}).continuation.pk)
    assert last.status == RunStatus.COMPLETED
    assert last.output == {"ask": True, "answers": ["A-1", {"amount": 5}]}
    assert CALLS["two_questions.after"] == 1

    # Once nothing waits on the thread, a new run on it goes ahead.
    assert run_turn("lg_questions", {"ask": False}, thread_id=THREAD).status == (
        RunStatus.COMPLETED)


def test_a_new_run_is_refused_while_an_answered_pause_waits_for_its_continuation(tenants):
    [pause] = pauses_of(run_turn("lg_questions", {"ask": True}, thread_id=THREAD))
    continuation = pauses.answer_pause(pause.pk, "A-1").continuation
    assert continuation.status == RunStatus.QUEUED

    refused_as_paused(run_turn("lg_questions", {"ask": False}, thread_id=THREAD))

    assert continue_run(continuation.pk).status == RunStatus.PAUSED  # on "How much?"


def test_a_refused_run_retried_once_the_thread_is_free_runs(tenants):
    [pause] = pauses_of(run_turn("lg_questions", {"ask": True}, thread_id=THREAD))
    refused = run_turn("lg_questions", {"ask": False}, thread_id=THREAD)
    refused_as_paused(refused)
    # The pause is cancelled (its run fails): nothing will resume the thread any more.
    pauses.cancel(pause.pk)

    runs.retry(refused.pk)
    assert continue_run(refused.pk).status == RunStatus.COMPLETED


def test_interrupts_whose_pauses_were_cancelled_do_not_hold_the_thread(tenants):
    [pause] = pauses_of(run_turn("lg_questions", {"ask": True}, thread_id=THREAD))
    pauses.cancel(pause.pk)
    assert snapshot(pause)["status"] == PauseStatus.CANCELLED

    assert run_turn("lg_questions", {"ask": False}, thread_id=THREAD).status == (
        RunStatus.COMPLETED)


def test_a_retried_turn_of_the_run_that_paused_is_not_refused(tenants):
    run = run_turn("lg_questions", {"ask": True}, thread_id=THREAD)
    [pause] = pauses_of(run)
    # The same run claimed anew (a redelivered or retried turn) gets its pause back.
    Run.objects.filter(pk=run.pk).update(status=RunStatus.QUEUED)
    assert continue_run(run.pk).status == RunStatus.PAUSED
    assert pauses_of(run) == [pause]


def test_the_refusal_names_the_paused_run_only_to_the_member_who_started_it(tenants):
    """Another member of the same scope is told the thread waits, not the ids of a run and
    pauses it may not read (the refusal is stored on its own run, which it reads)."""
    from django.contrib.auth import get_user_model

    alice, member = (get_user_model().objects.create_user(name) for name in ("alice", "member"))
    first = run_turn("lg_questions", {"ask": True}, thread_id=THREAD, started_by=alice)
    [pause] = pauses_of(first)

    theirs = refused_as_paused(run_turn("lg_questions", {"ask": False}, thread_id=THREAD,
                                        started_by=member))
    assert str(pause.pk) not in theirs["message"] and str(first.pk) not in theirs["message"]
    assert "another member's run" in theirs["message"]
    own = refused_as_paused(run_turn("lg_questions", {"ask": False}, thread_id=THREAD,
                                     started_by=alice))
    assert str(pause.pk) in own["message"] and str(first.pk) in own["message"]
