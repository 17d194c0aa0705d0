"""Expiry, cancellation and the reaper: the ways a turn ends without an answer.

``ON_EXPIRE="fail"`` fails the paused run; ``"resume"`` continues it with a
recorded timeout answer; either way the pause is ``expired``, never
``rejected``. A running run whose worker stopped renewing its lease is failed
with ``lease_expired`` and a final ``turn.failed`` event, never re-run.
"""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from symfonic_django import pauses, tasks
from symfonic_django.events import TurnCompleted
from symfonic_django.exceptions import PauseExpired
from symfonic_django.models import Decision, Pause, PauseStatus, Run, RunStatus, TurnEvent
from symfonic_django.runs import LeaseLost, claim, end, reap_stale_runs, start_run
from symfonic_django.turns import execute_run

from .conftest import paused_run, snapshot

pytestmark = pytest.mark.django_db


def make_due(*pause_list: Pause) -> None:
    """Move pauses' deadline into the past (test setup: time passing, not a transition)."""
    past = timezone.now() - timedelta(minutes=1)
    Pause.objects.filter(pk__in=[p.pk for p in pause_list]).update(expires_at=past)


def actions(pause: Pause) -> list[str]:
    return list(Decision.objects.filter(pause=pause).values_list("action", flat=True))


@pytest.fixture
def on_expire(settings: Any):
    def set_to(value: str) -> None:
        settings.SYMFONIC = {**settings.SYMFONIC, "ON_EXPIRE": value}
    return set_to


def test_on_expire_fail_fails_the_run_and_cancels_its_siblings(tenants, on_expire):
    on_expire("fail")
    run, first = paused_run("siblings", {"n": 2})
    second = Pause.objects.filter(run=run).exclude(pk=first.pk).get()
    make_due(first)
    assert pauses.expire_due() == 1
    first.refresh_from_db(), second.refresh_from_db(), run.refresh_from_db()
    assert (first.status, first.answer, first.answered_via) == (PauseStatus.EXPIRED, None,
                                                                 "system")
    assert second.status == PauseStatus.CANCELLED
    assert run.status == RunStatus.FAILED and run.error["code"] == "pause_expired"
    assert (actions(first), actions(second)) == (["expire"], ["cancel"])
    assert not Run.objects.filter(parent=run).exists()
    assert first.continuation_id is None and second.continuation_id is None


def test_on_expire_resume_continues_with_a_recorded_timeout_answer(tenants, on_expire):
    on_expire("resume")
    run, pause = paused_run()
    make_due(pause)
    assert pauses.expire_due() == 1
    pause.refresh_from_db()
    assert pause.status == PauseStatus.EXPIRED and pause.answer == pauses.TIMEOUT_ANSWER
    assert actions(pause) == ["expire"]  # recorded as expired, apart from a rejection
    continuation = Run.objects.get(parent=run)
    assert pause.continuation_id == continuation.pk
    assert continuation.input == {"answers": {str(pause.pk): {"timeout": True}}}
    assert execute_run(continuation.pk) == "completed"
    continuation.refresh_from_db()
    assert continuation.output["answers"] == {str(pause.pk): {"timeout": True}}


def test_on_expire_resume_waits_for_pending_siblings(tenants, on_expire):
    on_expire("resume")
    run, first = paused_run("siblings", {"n": 2})
    second = Pause.objects.filter(run=run).exclude(pk=first.pk).get()
    make_due(first)
    assert pauses.expire_due() == 1
    assert not Run.objects.filter(parent=run).exists()
    continuation = pauses.reject(second.pk, comment="no").continuation
    assert continuation.input["answers"] == {
        str(first.pk): {"timeout": True},
        str(second.pk): {"decisions": [{"type": "reject", "message": "no"}]}}


def test_cancel_fails_the_run_and_cancels_its_siblings(tenants):
    run, first = paused_run("siblings", {"n": 3})
    resolution = pauses.cancel(first.pk, comment="customer withdrew")
    run.refresh_from_db()
    assert resolution.continuation is None
    assert resolution.pause.status == PauseStatus.CANCELLED
    assert run.status == RunStatus.FAILED and run.error["code"] == "pause_cancelled"
    statuses = set(Pause.objects.filter(run=run).values_list("status", flat=True))
    assert statuses == {PauseStatus.CANCELLED}
    assert not Run.objects.filter(parent=run).exists()


def test_expire_due_touches_only_due_pending_pauses(tenants):
    _, due = paused_run()
    _, not_yet = paused_run()
    _, answered = paused_run()
    _, cancelled = paused_run()
    pauses.approve(answered.pk)
    pauses.cancel(cancelled.pk)
    make_due(due, answered, cancelled)
    untouched = {p.pk: snapshot(p) for p in (not_yet, answered, cancelled)}

    assert pauses.expire_due() == 1
    due.refresh_from_db()
    assert due.status == PauseStatus.EXPIRED
    assert {pk: snapshot(Pause(pk=pk)) for pk in untouched} == untouched
    assert pauses.expire_due() == 0  # nothing is due twice


def test_an_answer_after_expiry_is_refused_and_expiry_after_an_answer_does_nothing(tenants):
    _, expired = paused_run()
    make_due(expired)
    pauses.expire_due()
    with pytest.raises(PauseExpired):
        pauses.approve(expired.pk)

    _, answered = paused_run()
    pauses.approve(answered.pk)
    before = snapshot(answered)
    assert pauses.expire(answered.pk, now=timezone.now() + timedelta(days=30)) is None
    assert snapshot(answered) == before


def test_symfonic_expire_command_expires_due_pauses(tenants):
    run, pause = paused_run()
    make_due(pause)
    out = io.StringIO()
    call_command("symfonic_expire", stdout=out)
    assert out.getvalue().strip() == "expired 1 pause(s)"
    pause.refresh_from_db(), run.refresh_from_db()
    assert pause.status == PauseStatus.EXPIRED and run.status == RunStatus.FAILED


def test_the_sweep_drains_a_backlog_a_batch_at_a_time_in_one_call(tenants):
    """The beat's task expires every due pause, however many batches that takes; a pause
    not yet due and one already answered are left as they were."""
    due = [paused_run()[1] for _ in range(5)]
    _, not_yet = paused_run()
    _, answered = paused_run()
    pauses.approve(answered.pk)
    make_due(*due, answered)
    untouched = {p.pk: snapshot(p) for p in (not_yet, answered)}

    batches: list[int] = []
    one_batch = pauses.expire_due

    def counted(**kwargs: Any) -> int:
        batches.append(one_batch(**kwargs))
        return batches[-1]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pauses.expiry, "expire_due", counted)  # where expire_all_due finds it
        assert pauses.expire_all_due(batch=2) == 5
    assert batches == [2, 2, 1, 0]  # it stops at the first batch that finds nothing
    assert set(Pause.objects.filter(pk__in=[p.pk for p in due])
               .values_list("status", flat=True)) == {PauseStatus.EXPIRED}
    assert {pk: snapshot(Pause(pk=pk)) for pk in untouched} == untouched
    assert tasks.expire_pauses() == 0


def test_the_sweep_stops_taking_batches_when_its_time_is_up(tenants):
    due = [paused_run()[1] for _ in range(3)]
    make_due(*due)
    assert pauses.expire_all_due(seconds=0, batch=2) == 2  # the batch it began, no more
    assert Pause.objects.filter(pk__in=[p.pk for p in due],
                                status=PauseStatus.PENDING).count() == 1
    assert tasks.expire_pauses() == 1


def test_the_expire_command_drains_every_batch_or_stops_at_its_seconds(tenants):
    due = [paused_run()[1] for _ in range(3)]
    make_due(*due)
    out = io.StringIO()
    call_command("symfonic_expire", "--seconds", "0", "--batch", "1", stdout=out)
    assert out.getvalue().strip() == "expired 1 pause(s)"
    call_command("symfonic_expire", stdout=out)
    assert out.getvalue().split("\n")[1] == "expired 2 pause(s)"
    assert not Pause.objects.filter(pk__in=[p.pk for p in due],
                                    status=PauseStatus.PENDING).exists()


@pytest.mark.parametrize("option", [["--batch", "0"], ["--batch", "-3"], ["--seconds", "-1"],
                                    ["--seconds", "nan"]])
def test_the_expire_command_refuses_a_bad_batch_or_seconds_and_expires_nothing(tenants,
                                                                              option):
    _, due = paused_run()
    make_due(due)
    before = snapshot(due)
    with pytest.raises(CommandError, match="--batch must be 1 or more"):
        call_command("symfonic_expire", *option, stdout=io.StringIO())
    assert snapshot(due) == before


def lapsed_running_run(worker: str = "worker-that-died") -> Run:
    """A turn claimed by a worker that then stopped renewing its lease."""
    run = start_run("noop", {}, scope="acme", dispatch=False)
    assert claim(run.pk, worker) is not None
    Run.objects.filter(pk=run.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    return run


def test_the_reaper_fails_a_run_whose_lease_lapsed_with_a_final_event(tenants):
    run = lapsed_running_run()
    alive = lapsed_running_run("worker-still-beating")
    Run.objects.filter(pk=alive.pk).update(lease_until=timezone.now() + timedelta(minutes=5))

    assert reap_stale_runs() == 1
    run.refresh_from_db(), alive.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.lease_until is None
    assert run.error["code"] == "lease_expired"
    last = TurnEvent.objects.filter(run=run).order_by("-seq").first()
    assert (last.type, last.data["code"]) == ("turn.failed", "lease_expired")
    assert alive.status == RunStatus.RUNNING
    assert reap_stale_runs() == 0


def test_a_reaped_run_is_never_silently_rerun_or_finished_by_its_old_worker(tenants):
    run = lapsed_running_run()
    reap_stale_runs()
    assert execute_run(run.pk) == "skipped"
    with pytest.raises(LeaseLost):
        end(run, 1, 99, TurnCompleted(output="too late"))
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.attempts == 1
    assert list(TurnEvent.objects.filter(run=run).order_by("seq").values_list(
        "type", flat=True)) == ["turn.started", "turn.failed"]  # the claim recorded the start


def test_symfonic_reap_command_reaps_lapsed_runs(tenants):
    run = lapsed_running_run()
    out = io.StringIO()
    call_command("symfonic_reap", stdout=out)
    assert out.getvalue().splitlines() == ["reaped 1 run(s)", "sent again 0 overdue run(s)"]
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.error["code"] == "lease_expired"


@pytest.mark.parametrize("siblings", [0, 2])
@pytest.mark.parametrize("policy", ["fail", "resume"])
def test_a_sweep_expires_in_bulk_with_at_most_3_queries_per_pause(
        tenants, on_expire, policy, siblings, django_capture_on_commit_callbacks):
    """The sweep locks, expires and audits the whole batch in a few queries, and cancels the
    pending siblings of every run it fails together; only settling each run costs queries of
    its own (fail: one UPDATE; resume: the continuation's INSERT and the pauses' link)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from symfonic_django import signals

    on_expire(policy)
    due = [paused_run("siblings", {"n": siblings + 1})[1] if siblings else paused_run()[1]
           for _ in range(30)]
    _, not_due = paused_run()
    make_due(*due)
    sent: list[Any] = []
    signals.pause_expired.connect(lambda **kw: sent.append(kw["pause"].pk), weak=False,
                                  dispatch_uid="sweep-test")
    try:
        with (django_capture_on_commit_callbacks(execute=True),
              CaptureQueriesContext(connection) as queries):
            assert pauses.expire_due() == len(due)
    finally:
        signals.pause_expired.disconnect(dispatch_uid="sweep-test")

    print(f"\n{policy}, {siblings} siblings: {len(queries)} queries for {len(due)} pauses")
    assert len(queries) <= 3 * len(due), len(queries)
    rows = Pause.objects.filter(pk__in=[p.pk for p in due])
    assert set(rows.values_list("status", flat=True)) == {PauseStatus.EXPIRED}
    assert Decision.objects.filter(pause__in=due, action="expire").count() == len(due)
    assert sorted(sent) == sorted(p.pk for p in due)  # each sent once, on commit
    runs = Run.objects.filter(pk__in=[p.run_id for p in due])
    others = Pause.objects.filter(run__in=runs).exclude(pk__in=[p.pk for p in due])
    assert others.count() == siblings * len(due)
    if policy == "fail":
        assert set(runs.values_list("status", flat=True)) == {RunStatus.FAILED}
        assert not Run.objects.filter(parent__in=runs).exists()
        assert set(others.values_list("status", flat=True)) <= {PauseStatus.CANCELLED}
        assert Decision.objects.filter(pause__in=others, action="cancel").count() == len(others)
    elif siblings:  # the siblings still wait for their answers
        assert set(others.values_list("status", flat=True)) == {PauseStatus.PENDING}
        assert not Run.objects.filter(parent__in=runs).exists()
    else:
        assert Run.objects.filter(parent__in=runs, status=RunStatus.QUEUED).count() == len(due)
        assert all(p.continuation_id for p in rows)
    not_due.refresh_from_db()
    assert not_due.status == PauseStatus.PENDING
