"""Celery tasks: thin wrappers over the runner and the pause state machine.

Every task is ``acks_late`` with ``reject_on_worker_lost``: a worker that dies
mid-task gets its message redelivered, and redelivery is harmless because
the run claim lets exactly one delivery run the turn.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.db import transaction

from . import pauses, runner

log = logging.getLogger(__name__)

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


@shared_task(name="symfonic_django.requeue_stalled_runs", **TASK_OPTIONS)
def requeue_stalled_runs() -> int:
    return runner.requeue_stalled_runs()


def send_run(run_id: Any, *, continuation: bool) -> bool:
    """Send a queued run to the workers; ``False`` (logged) if the broker refused.

    The run row is already committed, so a broker outage must not turn the
    caller's success into an error: ``requeue_stalled_runs`` sends it again.
    """
    task = run_continuation if continuation else start_run
    try:
        task.delay(str(run_id))
    except Exception:
        log.exception("could not send %s for run %s; requeue_stalled_runs will retry",
                      task.name, run_id)
        return False
    return True


def send_on_commit(run_id: Any, *, continuation: bool) -> None:
    transaction.on_commit(lambda: send_run(run_id, continuation=continuation))


#: Add to ``CELERY_BEAT_SCHEDULE`` (or ``app.conf.beat_schedule``).
BEAT_SCHEDULE = {
    "symfonic-expire-pauses": {"task": "symfonic_django.expire_pauses", "schedule": 30.0},
    "symfonic-reap-stale-runs": {"task": "symfonic_django.reap_stale_runs", "schedule": 30.0},
    "symfonic-requeue-stalled-runs": {"task": "symfonic_django.requeue_stalled_runs",
                                      "schedule": 15.0},
}
