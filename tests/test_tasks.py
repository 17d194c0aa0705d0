"""The Celery tasks: registered under the names lower layers send, scheduled as documented."""

from __future__ import annotations

from django.conf import settings

from symfonic_django import runs
from symfonic_django.tasks import BEAT_SCHEDULE
from tests.testapp.celery import app


def test_the_task_names_runs_sends_by_are_registered_acks_late_tasks():
    # Importing symfonic_django.tasks (above) registered its shared tasks on the app.
    for name in (runs.START_TASK, runs.CONTINUATION_TASK,
                 *(entry["task"] for entry in BEAT_SCHEDULE.values())):
        task = app.tasks[name]
        assert task.acks_late and task.reject_on_worker_lost, name


def test_the_example_schedules_every_background_task_of_the_app():
    assert settings.CELERY_BEAT_SCHEDULE == BEAT_SCHEDULE


def test_the_prune_task_says_what_it_deleted_of_each_kind(db):
    from symfonic_django.tasks import prune

    assert prune() == {"idempotency_records": 0, "events": 0, "checkpoints": 0}
