"""Retention: ``retention.prune`` and ``manage.py symfonic_prune``."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command
from django.utils import timezone

from symfonic_django.models import (
    GraphCheckpoint,
    GraphCheckpointWrite,
    IdempotentResponse,
    Run,
    RunStatus,
    TurnEvent,
)
from symfonic_django.retention import PruneResult, prune
from symfonic_django.threads import checkpoint_thread_id

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


# --- LangGraph checkpoints of idle threads --------------------------------------------

def run_on_thread(status: str, finished_at: datetime | None, *, thread_id: str = "",
                  root: Run | None = None, parent: Run | None = None,
                  scope: str = "acme") -> Run:
    """A run as the app makes them: a top-level run is its own root, a continuation
    shares its root's; the LangGraph adapter drives it on ``thread_id`` or the root's id."""
    run = Run(agent="graph", scope_key=scope, status=status, finished_at=finished_at,
              thread_id=thread_id, parent=parent)
    run.root_id = root.pk if root is not None else run.pk
    run.save(force_insert=True)
    return run


def stored_thread(thread_id: str, *, checkpoints: int = 2, writes: int = 1,
                  scope: str | None = "acme") -> None:
    """``checkpoints`` checkpoints of ``thread_id`` of ``scope`` (one in a subgraph's
    namespace), and ``writes`` pending writes after the last one. The rows are stored under
    the key the adapter gives the thread; with no scope, under ``thread_id`` as it is (a
    graph driven outside the app)."""
    if scope is not None:
        thread_id = checkpoint_thread_id(scope, thread_id)
    GraphCheckpoint.objects.bulk_create(
        GraphCheckpoint(thread_id=thread_id, checkpoint_ns="" if n else "inner:1",
                        checkpoint_id=f"c{n}", checkpoint_type="msgpack", checkpoint=b"{}")
        for n in range(checkpoints))
    GraphCheckpointWrite.objects.bulk_create(
        GraphCheckpointWrite(thread_id=thread_id, checkpoint_id=f"c{checkpoints - 1}",
                             task_id="t", idx=n, channel="messages", value_type="msgpack",
                             value=b"[]")
        for n in range(writes))


def stored_threads() -> dict[str, tuple[int, int]]:
    """Each stored thread's count of checkpoints and of pending writes, by its name: an acme
    thread's caller id, another scope's as ``scope/id``, a key the app never made as it is."""
    threads = set(GraphCheckpoint.objects.values_list("thread_id", flat=True)) | set(
        GraphCheckpointWrite.objects.values_list("thread_id", flat=True))
    return {_name(thread): (GraphCheckpoint.objects.filter(thread_id=thread).count(),
                            GraphCheckpointWrite.objects.filter(thread_id=thread).count())
            for thread in sorted(threads)}


def _name(key: str) -> str:
    for scope in ("acme", "globex"):
        if key.startswith(prefix := checkpoint_thread_id(scope, "")):
            return key.removeprefix(prefix) if scope == "acme" else f"{scope}/" + (
                key.removeprefix(prefix))
    return key


def test_checkpoints_of_threads_whose_every_run_finished_before_the_retention_go(
        event_retention: None) -> None:
    now = timezone.now()
    # A conversation over two runs on one thread, both long finished.
    run_on_thread(RunStatus.COMPLETED, now - 3 * DAY, thread_id="conversation")
    run_on_thread(RunStatus.FAILED, now - 2 * DAY, thread_id="conversation")
    stored_thread("conversation")
    # A run without a thread id that paused, and its continuation, which completed: the
    # thread is the root run's id (the paused run stays "paused" once continued).
    root = run_on_thread(RunStatus.PAUSED, now - 3 * DAY)
    run_on_thread(RunStatus.COMPLETED, now - 2 * DAY, root=root, parent=root)
    stored_thread(str(root.pk), checkpoints=3, writes=2)
    # A paused run not continued yet: its pauses' answers may still resume the thread.
    waiting = run_on_thread(RunStatus.PAUSED, now - 3 * DAY)
    stored_thread(str(waiting.pk))

    result = prune(now=now)

    assert result.checkpoints == 3 + 5
    assert stored_threads() == {str(waiting.pk): (2, 1)}


@pytest.mark.parametrize("status", [RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.PAUSED])
def test_a_thread_with_an_unfinished_run_keeps_its_checkpoints(event_retention: None,
                                                                status: str) -> None:
    now = timezone.now()
    run_on_thread(RunStatus.COMPLETED, now - 30 * DAY, thread_id="busy")
    run_on_thread(status, now - 30 * DAY if status == RunStatus.PAUSED else None,
                  thread_id="busy")
    stored_thread("busy")

    assert prune(now=now).checkpoints == 0

    assert stored_threads() == {"busy": (2, 1)}


def test_a_thread_with_a_run_finished_within_the_retention_keeps_its_checkpoints(
        event_retention: None) -> None:
    now = timezone.now()
    run_on_thread(RunStatus.COMPLETED, now - 30 * DAY, thread_id="recent")
    run_on_thread(RunStatus.COMPLETED, now - 23 * HOUR, thread_id="recent")
    stored_thread("recent")
    run_on_thread(RunStatus.FAILED, now - DAY, thread_id="at-the-limit")
    stored_thread("at-the-limit")

    assert prune(now=now).checkpoints == 0

    assert stored_threads() == {"at-the-limit": (2, 1), "recent": (2, 1)}


def test_a_thread_no_run_names_keeps_its_checkpoints(event_retention: None) -> None:
    # A graph driven outside the app on the same saver: the app cannot tell who uses it.
    run_on_thread(RunStatus.COMPLETED, timezone.now() - 30 * DAY, thread_id="ours")
    stored_thread("ours")
    stored_thread("ours", scope=None)  # the caller's name alone: not the app's key
    stored_thread("someone-elses")
    stored_thread("8d1c64a4-0d0e-4b4e-9f4c-6a0f6b0c1d2e")  # a run id the app never issued

    assert prune(now=timezone.now()).checkpoints == 3

    assert set(stored_threads()) == {"ours", "someone-elses",
                                     "8d1c64a4-0d0e-4b4e-9f4c-6a0f6b0c1d2e"}


def test_a_thread_is_idle_by_its_own_scopes_runs_only(event_retention: None) -> None:
    now = timezone.now()
    # acme's "chat" is long done; globex's "chat" is another thread, and no run of globex's
    # names it, so the app cannot tell who uses it: it stays.
    run_on_thread(RunStatus.COMPLETED, now - 30 * DAY, thread_id="chat")
    stored_thread("chat")
    stored_thread("chat", scope="globex")
    # acme's "live" has a running run; globex's "live" belongs to a run long done.
    run_on_thread(RunStatus.RUNNING, None, thread_id="live")
    stored_thread("live")
    run_on_thread(RunStatus.COMPLETED, now - 30 * DAY, thread_id="live", scope="globex")
    stored_thread("live", scope="globex")

    assert prune(now=now).checkpoints == 3 + 3

    assert stored_threads() == {"globex/chat": (2, 1), "live": (2, 1)}


def test_checkpoints_are_kept_without_event_retention_or_with_events_false(
        settings: Any) -> None:
    run_on_thread(RunStatus.COMPLETED, timezone.now() - 365 * DAY, thread_id="old")
    stored_thread("old")

    assert prune().checkpoints == 0
    settings.SYMFONIC = {**settings.SYMFONIC, "EVENT_RETENTION": int(DAY.total_seconds())}
    assert prune(events=False).checkpoints == 0

    assert stored_threads() == {"old": (2, 1)}


def test_a_dry_run_counts_the_checkpoints_that_would_go_and_deletes_none(
        event_retention: None) -> None:
    now = timezone.now()
    run_on_thread(RunStatus.COMPLETED, now - 2 * DAY, thread_id="old")
    stored_thread("old", checkpoints=4, writes=3)
    run_on_thread(RunStatus.RUNNING, None, thread_id="live")
    stored_thread("live")

    assert prune(now=now, dry_run=True).checkpoints == 7
    assert stored_threads() == {"live": (2, 1), "old": (4, 3)}
    assert prune(now=now).checkpoints == 7
    assert stored_threads() == {"live": (2, 1)}


def test_every_idle_thread_goes_however_small_the_batches(
        event_retention: None, threads_per_lookup: Callable[[int], int]) -> None:
    threads_per_lookup(2)
    now = timezone.now()
    for n in range(5):
        run_on_thread(RunStatus.COMPLETED, now - 2 * DAY, thread_id=f"old-{n}")
        stored_thread(f"old-{n}", checkpoints=3, writes=2)
    run_on_thread(RunStatus.PAUSED, now - 2 * DAY, thread_id="old-2b")
    stored_thread("old-2b")

    assert prune(now=now, batch=2).checkpoints == 5 * 5

    assert stored_threads() == {"old-2b": (2, 1)}
    assert prune(now=now).checkpoints == 0  # a second prune finds nothing more


def test_the_command_prints_the_checkpoints_it_deleted_or_would(event_retention: None) -> None:
    run_on_thread(RunStatus.COMPLETED, timezone.now() - 2 * DAY, thread_id="old")
    stored_thread("old")

    assert command("--dry-run") == ("would delete 0 idempotency record(s)\n"
                                    "would delete 0 event(s) of finished runs\n"
                                    "would delete 3 checkpoint row(s) of idle graph threads\n")
    assert command() == ("deleted 0 idempotency record(s)\n"
                         "deleted 0 event(s) of finished runs\n"
                         "deleted 3 checkpoint row(s) of idle graph threads\n")
    assert stored_threads() == {}
