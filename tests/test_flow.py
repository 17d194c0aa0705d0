"""The whole pause lifecycle through the Python API, in-process."""

from __future__ import annotations

import pytest

from symfonic_django import pauses
from symfonic_django.exceptions import AlreadyAnswered, InvalidAnswer
from symfonic_django.models import Decision, Pause, PauseStatus, Run, RunStatus, TurnEvent
from symfonic_django.turns import execute_run

from .conftest import paused_run, snapshot

pytestmark = pytest.mark.django_db(transaction=True)


def event_types(run: Run) -> list[str]:
    return list(TurnEvent.objects.filter(run=run).order_by("seq").values_list("type", flat=True))


def test_turn_pauses_with_contiguous_events(tenants):
    run, pause = paused_run()
    assert run.status == RunStatus.PAUSED
    assert pause.status == PauseStatus.PENDING
    assert event_types(run) == ["turn.started", "message.delta", "pause.requested", "turn.paused"]
    seqs = list(TurnEvent.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))
    assert seqs == [1, 2, 3, 4]
    stored = TurnEvent.objects.get(run=run, type="pause.requested").data
    assert "token" not in stored and stored["pause_id"] == str(pause.pk)


def test_approval_creates_one_continuation_that_completes(tenants):
    run, pause = paused_run()
    resolution = pauses.approve(pause.pk, edited_args={"qty": 3})
    cont = resolution.continuation
    assert cont.status == RunStatus.QUEUED and cont.parent_id == run.pk
    assert cont.root_id == run.pk and cont.resumed_from_id == pause.pk
    assert execute_run(cont.pk) == "completed"
    assert execute_run(cont.pk) == "skipped"  # a second delivery does nothing
    cont.refresh_from_db()
    decision = cont.output["answers"][str(pause.pk)]["decisions"][0]
    assert decision == {"type": "edit", "edited_action": {"name": "ship", "args": {"qty": 3}}}
    assert event_types(cont)[0] == "turn.started" and event_types(cont)[-1] == "turn.completed"
    assert Decision.objects.filter(pause=pause).count() == 1


def test_second_answer_is_refused_and_changes_nothing(tenants):
    _, pause = paused_run()
    pauses.approve(pause.pk)
    before = snapshot(pause)
    with pytest.raises(AlreadyAnswered):
        pauses.reject(pause.pk, comment="too late")
    assert snapshot(pause) == before
    assert Decision.objects.filter(pause=pause).count() == 1


def test_edit_is_validated_against_args_schema(tenants):
    _, pause = paused_run()
    before = snapshot(pause)
    with pytest.raises(InvalidAnswer):
        pauses.approve(pause.pk, edited_args={"qty": 0})
    assert snapshot(pause) == before


def test_run_with_sibling_pauses_continues_once_with_all_answers(tenants):
    run, _ = paused_run("siblings", {"n": 3})
    ids = list(Pause.objects.filter(run=run).order_by("created_at").values_list("pk", flat=True))
    assert len(ids) == 3
    assert pauses.approve(ids[0]).continuation is None
    assert pauses.reject(ids[1], comment="no").continuation is None
    cont = pauses.approve(ids[2]).continuation
    assert cont is not None
    assert set(cont.input["answers"]) == {str(i) for i in ids}
    assert Pause.objects.filter(run=run, continuation=cont).count() == 3
    assert Run.objects.filter(parent=run).count() == 1


def test_the_resolution_holds_the_pause_as_stored(tenants, django_user_model):
    """The answered pause is handed back as committed, without being read again."""
    alice = django_user_model.objects.create_user("alice")
    run, _ = paused_run("siblings", {"n": 2})
    first, last = Pause.objects.filter(run=run).order_by("created_at")
    for pause, expect_continuation in ((first, False), (last, True)):
        resolution = pauses.approve(pause.pk, actor=alice, comment="ok")
        assert (resolution.continuation is not None) is expect_continuation
        stored = Pause.objects.get(pk=pause.pk)
        for field in ("status", "answer", "answered_by_id", "answered_via", "answered_at",
                      "updated_at", "continuation_id"):
            assert getattr(resolution.pause, field) == getattr(stored, field), field
        assert resolution.pause.answered_by.username == "alice"


def test_agent_error_fails_the_turn_with_an_event(tenants):
    from symfonic_django.runs import start_run

    run = start_run("boom", {}, scope="acme", dispatch=False)
    assert execute_run(run.pk) == "failed"
    run.refresh_from_db()
    assert run.error["code"] == "agent_error"
    assert event_types(run)[-1] == "turn.failed"
