"""What LangGraph lets through and the app refuses, each refusal leaving the thread and the
pause as they were: an unknown or used interrupt id, a finished thread, and a
``HITLResponse`` that does not match the pending request (docs/langgraph.md)."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from symfonic_django import pauses, runs
from symfonic_django.checkpoint import DjangoSaver
from symfonic_django.models import Pause, PauseStatus, Run, RunStatus, ToolResult
from tests.testapp.models import Refund
from tests.testapp.seed import seed_users

from ..conftest import snapshot
from .conftest import (
    checkpoint_key,
    continue_run,
    events_of,
    moved_on_outside_the_app,
    pauses_of,
    run_turn,
    thread_rows,
)

pytestmark = pytest.mark.django_db

API = "/api/symfonic/"


def refused(run: Run) -> dict[str, Any]:
    """The run's turn.failed, asserting it is the adapter's refusal."""
    assert run.status == RunStatus.FAILED
    kind, data = events_of(run)[-1]
    assert (kind, data["code"]) == ("turn.failed", "resume_refused")
    return data


def answered_then_continued(pause: Pause, answer: Any, thread_id: str) -> tuple[Run, dict, Any]:
    """Answer ``pause``, then run its continuation; returns it, and what the continuation
    found: the pause row and the thread's rows as the answer left them."""
    continuation = pauses.answer_pause(pause.pk, answer).continuation
    before = (snapshot(pause), thread_rows(thread_id))
    return continue_run(continuation.pk), before, (snapshot(pause), thread_rows(thread_id))


def test_an_answer_to_an_interrupt_the_thread_never_asked_is_refused(tenants):
    first = run_turn("lg_questions", {"ask": True}, thread_id="t-unknown")
    [stale] = pauses_of(first)
    # The thread is replaced under the app: deleted, then asked again by another run.
    DjangoSaver().delete_thread(checkpoint_key("t-unknown"))
    second = run_turn("lg_questions", {"ask": True}, thread_id="t-unknown")
    [current] = pauses_of(second)

    continuation, before, after = answered_then_continued(stale, "A-1", "t-unknown")
    assert "ever asked" in refused(continuation)["message"]
    assert after == before  # neither the pause nor the thread changed
    assert snapshot(current)["status"] == PauseStatus.PENDING
    # The interrupt the thread does wait for is still answerable, and resumes it.
    resumed = continue_run(pauses.answer_pause(current.pk, "B-2").continuation.pk)
    assert [p.prompt for p in pauses_of(resumed)] == [{"question": "How much?"}]


def test_an_answer_to_an_interrupt_already_used_or_abandoned_is_refused(tenants):
    first = run_turn("lg_questions", {"ask": True}, thread_id="t-used")
    [stale] = pauses_of(first)
    # Another program moves the thread on (a run of the app on it is refused while it is
    # paused, test_thread_paused.py): the first interrupt was asked, and is gone.
    moved_on_outside_the_app("t-used", {"ask": True})

    continuation, before, after = answered_then_continued(stale, "A-1", "t-used")
    assert "no longer waiting" in refused(continuation)["message"]
    assert after == before


def test_an_answer_to_a_finished_thread_is_refused(tenants):
    first = run_turn("lg_questions", {"ask": True}, thread_id="t-done")
    [stale] = pauses_of(first)
    moved_on_outside_the_app("t-done", {"ask": False})  # to its end

    continuation, before, after = answered_then_continued(stale, "A-1", "t-done")
    assert "has finished" in refused(continuation)["message"]
    assert after == before


@pytest.fixture
def alice(tenants: Any) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {seed_users()['alice']['token']}")
    return client


@pytest.mark.parametrize("decisions, words", [
    ([{"type": "approve"}], "Expected 2 decision(s)"),
    ([{"type": "approve"}, {"type": "approve"}, {"type": "approve"}], "Expected 2 decision(s)"),
    ([{"type": "approve"}, {"type": "respond", "message": "no"}], "not an allowed decision"),
])
def test_a_hitl_response_that_does_not_match_the_request_is_refused_when_given(
        alice, decisions, words):
    """Refused at answer time, so nothing reaches the graph, and the thread never breaks."""
    run = run_turn("lg_batched", {"refunds": [{"order_id": "A-1", "amount": 10},
                                              {"order_id": "B-2", "amount": 20}]})
    [pause] = pauses_of(run)
    thread, row = thread_rows(str(run.pk)), snapshot(pause)
    response = alice.post(f"{API}pauses/{pause.pk}/answer/", {"answer": {"decisions": decisions}},
                          format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_answer" and words in response.json()["detail"]
    assert snapshot(pause) == row and thread_rows(str(run.pk)) == thread
    assert not Run.objects.filter(parent=run).exists()
    # The right answer still goes through, once.
    good = {"decisions": [{"type": "approve"}, {"type": "reject"}]}
    assert alice.post(f"{API}pauses/{pause.pk}/answer/", {"answer": good},
                      format="json").status_code == 202
    done = continue_run(Pause.objects.get(pk=pause.pk).continuation_id)
    assert done.status == RunStatus.COMPLETED
    assert list(Refund.objects.values_list("order_id", flat=True)) == ["A-1"]


@pytest.mark.parametrize("decisions, words", [
    ([{"type": "approve"}], "Expected 2 decision(s)"),
    ([{"type": "approve"}, {"type": "respond", "message": "no"}], "not an allowed decision"),
])
def test_the_continuation_checks_the_answers_against_the_thread_again(tenants, decisions, words):
    """A continuation whose answer got past the pause (written to the run's input directly,
    here) is refused before the graph is resumed: the thread is never broken."""
    run = run_turn("lg_batched", {"refunds": [{"order_id": "A-1", "amount": 10},
                                              {"order_id": "B-2", "amount": 20}]})
    [pause] = pauses_of(run)
    thread = thread_rows(str(run.pk))
    forged = runs.queue_continuation(run, resumed_from=pause, dispatch=False,
                                     answers={str(pause.pk): {"decisions": decisions}})
    data = refused(continue_run(forged.pk))
    assert words in data["message"]
    assert thread_rows(str(run.pk)) == thread
    assert not Refund.objects.exists() and not ToolResult.objects.exists()
