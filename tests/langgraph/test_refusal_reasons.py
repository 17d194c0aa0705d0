"""A refused resume tells a client why, in a fixed form: ``turn.failed`` and ``run.error``
carry code ``resume_refused`` and a message ``"<reason>: <detail>"``, the reason one of
``ResumeRefused.REASONS`` (``turn.failed``'s data is pinned to ``code`` and ``message``,
docs/design.md section 6, so the reason goes in the message rather than in a key of its own)."""

from __future__ import annotations

import pytest

from symfonic_django import pauses, runs
from symfonic_django.checkpoint import DjangoSaver
from symfonic_django.exceptions import ResumeRefused
from symfonic_django.models import Pause, Run, RunStatus

from .conftest import (
    checkpoint_key,
    continue_run,
    events_of,
    moved_on_outside_the_app,
    pauses_of,
    run_turn,
)

pytestmark = pytest.mark.django_db


def never_asked(thread_id: str) -> Pause:
    [stale] = pauses_of(run_turn("lg_questions", {"ask": True}, thread_id=thread_id))
    DjangoSaver().delete_thread(checkpoint_key(thread_id))
    moved_on_outside_the_app(thread_id, {"ask": True})
    return stale


def used(thread_id: str) -> Pause:
    [stale] = pauses_of(run_turn("lg_questions", {"ask": True}, thread_id=thread_id))
    moved_on_outside_the_app(thread_id, {"ask": True})
    return stale


def finished(thread_id: str) -> Pause:
    [stale] = pauses_of(run_turn("lg_questions", {"ask": True}, thread_id=thread_id))
    moved_on_outside_the_app(thread_id, {"ask": False})
    return stale


def refused_continuation(reason: str) -> Run:
    thread_id = f"t-{reason}"
    if reason == "decisions_mismatch":
        # An answer that got past its pause (written into the continuation by hand).
        run = run_turn("lg_batched", {"refunds": [{"order_id": "A-1", "amount": 10},
                                                  {"order_id": "B-2", "amount": 20}]})
        [pause] = pauses_of(run)
        return continue_run(runs.queue_continuation(
            run, resumed_from=pause, dispatch=False,
            answers={str(pause.pk): {"decisions": [{"type": "approve"}]}}).pk)
    stale = {"unknown_interrupt": never_asked, "used_interrupt": used,
             "thread_finished": finished}[reason](thread_id)
    return continue_run(pauses.answer_pause(stale.pk, "A-1").continuation.pk)


@pytest.mark.parametrize("reason", ResumeRefused.REASONS)
def test_a_refused_resume_names_its_reason_first_in_the_event_and_the_run_error(tenants,
                                                                               reason):
    continuation = refused_continuation(reason)

    assert continuation.status == RunStatus.FAILED
    kind, data = events_of(continuation)[-1]
    assert kind == "turn.failed"
    assert set(data) == {"code", "message"}  # the pinned shape, nothing added
    assert data["code"] == "resume_refused"
    assert data["message"].partition(": ")[0] == reason
    assert data["message"].partition(": ")[2]  # and the sentence that says it for people
    assert continuation.error == data
