"""Retention: ``retention.prune`` and ``manage.py symfonic_prune``."""

from __future__ import annotations

from datetime import datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command
from django.utils import timezone

from symfonic_django.models import IdempotentResponse, Run, RunStatus, TurnEvent
from symfonic_django.retention import PruneResult, prune

pytestmark = pytest.mark.django_db

HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


@pytest.fixture
def event_retention(settings: Any) -> None:
    """Events of finished runs are kept for one day; idempotency records for one hour."""
    settings.SYMFONIC = {**settings.SYMFONIC, "EVENT_RETENTION": int(DAY.total_seconds()),
                         "IDEMPOTENCY_RETENTION": int(HOUR.total_seconds())}


@pytest.fixture
def idempotency_hour(settings: Any) -> None:
    settings.SYMFONIC = {**settings.SYMFONIC, "IDEMPOTENCY_RETENTION": int(HOUR.total_seconds())}


def record(key: str, created_at: datetime) -> IdempotentResponse:
    return IdempotentResponse.objects.create(caller="user:1", key=key, status=202,
                                             body={"run_id": None}, created_at=created_at)


def run_with_events(status: str, finished_at: datetime | None, events: int = 3) -> Run:
    run = Run.objects.create(agent="echo", scope_key="acme", status=status,
                             finished_at=finished_at)
    TurnEvent.objects.bulk_create(
        TurnEvent(run=run, seq=seq, type="turn.delta", data={"n": seq},
                  scope_key=run.scope_key)
        for seq in range(1, events + 1))
    return run


def event_count(run: Run) -> int:
    return TurnEvent.objects.filter(run=run).count()


def every_row() -> dict[str, list[Any]]:
    """Every column of every row prune may touch, to assert a refusal changed nothing."""
    return {"records": list(IdempotentResponse.objects.order_by("pk").values()),
            "runs": list(Run.objects.order_by("pk").values()),
            "events": list(TurnEvent.objects.order_by("pk").values())}


def test_idempotency_records_older_than_the_retention_go_and_fresh_ones_stay(
        idempotency_hour: None) -> None:
    now = timezone.now()
    record("old", now - 2 * HOUR)
    record("just-past", now - HOUR - timedelta(seconds=1))
    record("at-the-limit", now - HOUR)
    record("fresh", now - timedelta(minutes=5))

    assert prune(now=now).idempotency_records == 2

    assert sorted(IdempotentResponse.objects.values_list("key", flat=True)) == [
        "at-the-limit", "fresh"]


def test_the_default_idempotency_retention_is_one_day() -> None:
    now = timezone.now()
    record("two-days", now - 2 * DAY)
    record("an-hour", now - HOUR)

    prune(now=now)

    assert list(IdempotentResponse.objects.values_list("key", flat=True)) == ["an-hour"]


def test_events_are_kept_for_ever_without_event_retention(idempotency_hour: None) -> None:
    now = timezone.now()
    run = run_with_events(RunStatus.COMPLETED, now - 365 * DAY)

    result = prune(now=now)

    assert result == PruneResult(idempotency_records=0, events=None)
    assert event_count(run) == 3


def test_events_of_runs_finished_before_the_retention_go(event_retention: None) -> None:
    now = timezone.now()
    completed = run_with_events(RunStatus.COMPLETED, now - 2 * DAY)
    failed = run_with_events(RunStatus.FAILED, now - DAY - timedelta(seconds=1), events=2)

    assert prune(now=now).events == 5

    assert event_count(completed) == event_count(failed) == 0
    # The runs themselves stay: only their event stream is gone.
    assert Run.objects.filter(pk__in=[completed.pk, failed.pk]).count() == 2


def test_events_of_recently_finished_runs_stay(event_retention: None) -> None:
    now = timezone.now()
    recent = run_with_events(RunStatus.COMPLETED, now - 23 * HOUR)
    at_the_limit = run_with_events(RunStatus.FAILED, now - DAY)

    assert prune(now=now).events == 0

    assert event_count(recent) == event_count(at_the_limit) == 3


@pytest.mark.parametrize("status", [RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.PAUSED])
def test_events_of_unfinished_runs_stay_however_old(event_retention: None, status: str) -> None:
    # A paused run keeps its finished_at from the turn that paused; its watchers still
    # replay its events, and its answer continues in a run of its own.
    now = timezone.now()
    run = run_with_events(status, now - 30 * DAY)

    assert prune(now=now).events == 0

    assert event_count(run) == 3


def test_events_of_a_finished_run_without_finished_at_stay(event_retention: None) -> None:
    run = run_with_events(RunStatus.FAILED, None)

    prune(now=timezone.now() + 30 * DAY)

    assert event_count(run) == 3


def test_events_false_keeps_events_even_with_a_retention(event_retention: None) -> None:
    now = timezone.now()
    run = run_with_events(RunStatus.COMPLETED, now - 2 * DAY)
    record("old", now - 2 * HOUR)

    result = prune(now=now, events=False)

    assert result == PruneResult(idempotency_records=1, events=None)
    assert event_count(run) == 3


def test_events_true_without_a_retention_is_refused_and_deletes_nothing(
        idempotency_hour: None) -> None:
    now = timezone.now()
    run_with_events(RunStatus.COMPLETED, now - 2 * DAY)
    record("old", now - 2 * HOUR)
    before = every_row()

    with pytest.raises(ImproperlyConfigured, match="EVENT_RETENTION"):
        prune(now=now, events=True)

    assert every_row() == before


def test_dry_run_counts_what_would_go_and_changes_no_row(event_retention: None) -> None:
    now = timezone.now()
    record("old", now - 2 * HOUR)
    record("fresh", now)
    run_with_events(RunStatus.COMPLETED, now - 2 * DAY)
    run_with_events(RunStatus.PAUSED, now - 2 * DAY)
    before = every_row()

    result = prune(now=now, dry_run=True)

    assert result == PruneResult(idempotency_records=1, events=3, dry_run=True)
    assert every_row() == before
    # What the dry run counted is what a real run deletes.
    assert prune(now=now) == PruneResult(idempotency_records=1, events=3)


def test_batches_smaller_than_the_rows_still_delete_all_of_them(event_retention: None) -> None:
    now = timezone.now()
    for n in range(5):
        record(f"old-{n}", now - 2 * HOUR)
    old = [run_with_events(RunStatus.COMPLETED, now - 2 * DAY, events=3) for _ in range(3)]
    kept = run_with_events(RunStatus.RUNNING, now - 2 * DAY, events=3)

    assert prune(now=now, batch=2) == PruneResult(idempotency_records=5, events=9)

    assert not IdempotentResponse.objects.exists()
    assert not TurnEvent.objects.filter(run__in=old).exists()
    assert event_count(kept) == 3


def test_a_second_prune_deletes_nothing_more(event_retention: None) -> None:
    now = timezone.now()
    record("old", now - 2 * HOUR)
    run_with_events(RunStatus.COMPLETED, now - 2 * DAY)
    prune(now=now)

    assert prune(now=now) == PruneResult(idempotency_records=0, events=0)


def test_a_batch_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="batch"):
        prune(batch=0)


def command(*args: str) -> str:
    out = StringIO()
    call_command("symfonic_prune", *args, stdout=out)
    return out.getvalue()


def test_the_command_prints_what_it_deleted(event_retention: None) -> None:
    now = timezone.now()
    record("old", now - 2 * HOUR)
    run = run_with_events(RunStatus.COMPLETED, now - 2 * DAY)

    assert command() == ("deleted 1 idempotency record(s)\n"
                         "deleted 3 event(s) of finished runs\n")
    assert event_count(run) == 0


def test_the_command_without_event_retention_says_events_are_kept(
        idempotency_hour: None) -> None:
    run = run_with_events(RunStatus.COMPLETED, timezone.now() - 2 * DAY)

    assert command() == ("deleted 0 idempotency record(s)\n"
                         "kept every event (EVENT_RETENTION is not set)\n")
    assert event_count(run) == 3


def test_the_command_dry_run_prints_what_would_go_and_changes_no_row(
        event_retention: None) -> None:
    now = timezone.now()
    record("old", now - 2 * HOUR)
    run_with_events(RunStatus.FAILED, now - 2 * DAY, events=2)
    before = every_row()

    assert command("--dry-run") == ("would delete 1 idempotency record(s)\n"
                                    "would delete 2 event(s) of finished runs\n")
    assert every_row() == before


def test_the_command_no_events_keeps_events(event_retention: None) -> None:
    run = run_with_events(RunStatus.COMPLETED, timezone.now() - 2 * DAY)

    assert command("--no-events", "--batch", "2") == ("deleted 0 idempotency record(s)\n"
                                                      "kept every event (--no-events)\n")
    assert event_count(run) == 3


def test_the_command_events_without_a_retention_is_an_error_and_deletes_nothing(
        idempotency_hour: None) -> None:
    record("old", timezone.now() - 2 * HOUR)
    before = every_row()

    with pytest.raises(CommandError, match="EVENT_RETENTION"):
        command("--events")

    assert every_row() == before


def test_the_command_refuses_a_batch_below_one() -> None:
    with pytest.raises(CommandError, match="--batch"):
        command("--batch", "0")
