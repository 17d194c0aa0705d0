"""Celery tasks: thin wrappers over the runner and the pause state machine.

Every task is ``acks_late`` with ``reject_on_worker_lost``: a worker that dies
mid-task gets its message redelivered, and redelivery is harmless because
the run claim lets exactly one delivery run the turn.
"""

from __future__ import annotations

from celery import shared_task

from . import pauses, runner

TASK_OPTIONS = {"acks_late": True, "reject_on_worker_lost": True, "ignore_result": True}


@shared_task(name="symfonic_django.start_run", **TASK_OPTIONS)
def start_run(run_id: str) -> str:
    return runner.execute_run(run_id)


@shared_task(name="symfonic_django.run_continuation", **TASK_OPTIONS)
def run_continuation(run_id: str) -> str:
    return runner.execute_run(run_id)


@shared_task(name="symfonic_django.expire_pauses", **TASK_OPTIONS)
def expire_pauses() -> int:
    return pauses.expire_due()


@shared_task(name="symfonic_django.reap_stale_runs", **TASK_OPTIONS)
def reap_stale_runs() -> int:
    return runner.reap_stale_runs()


#: Add to ``CELERY_BEAT_SCHEDULE`` (or ``app.conf.beat_schedule``).
BEAT_SCHEDULE = {
    "symfonic-expire-pauses": {"task": "symfonic_django.expire_pauses", "schedule": 30.0},
    "symfonic-reap-stale-runs": {"task": "symfonic_django.reap_stale_runs", "schedule": 30.0},
}
