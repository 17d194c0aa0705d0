"""Celery tasks: thin wrappers over the turn driver and the two state machines.

Every task is ``acks_late`` with ``reject_on_worker_lost``: a worker that dies
mid-task gets its message redelivered, and redelivery is harmless because
the run claim lets exactly one delivery run the turn. Lower layers send these
tasks by name (``runs.START_TASK``, ``runs.CONTINUATION_TASK``), so nothing
below this module imports it.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.db import close_old_connections

from . import notifications, pauses, retention, runs, turns

TASK_OPTIONS: dict[str, Any] = {"acks_late": True, "reject_on_worker_lost": True,
                                "ignore_result": True}


def _turn(run_id: str) -> str:
    """Run one turn with Django's connection hygiene around it, as a request has.

    With ``CELERY_DB_REUSE_MAX`` Celery's Django fixup leaves the worker's
    connections alone between tasks, so one the database ended (a restart, a
    failover, an operator ending the session mid-turn) stayed broken and failed
    every later task of the worker. ``close_old_connections`` closes (or hands
    back to the pool) what errored or outlived ``CONN_MAX_AGE``.
    """
    close_old_connections()
    try:
        return turns.execute_run(run_id)
    finally:
        close_old_connections()


@shared_task(name=runs.START_TASK, **TASK_OPTIONS)
def start_run(run_id: str) -> str:
    return _turn(run_id)


@shared_task(name=runs.CONTINUATION_TASK, **TASK_OPTIONS)
def run_continuation(run_id: str) -> str:
    return _turn(run_id)


@shared_task(name="symfonic_django.expire_pauses", **TASK_OPTIONS)
def expire_pauses() -> int:
    return pauses.expire_all_due()


@shared_task(name="symfonic_django.reap_stale_runs", **TASK_OPTIONS)
def reap_stale_runs() -> int:
    return runs.reap_stale_runs()


@shared_task(name="symfonic_django.requeue_stalled_runs", **TASK_OPTIONS)
def requeue_stalled_runs() -> int:
    return runs.resend_overdue_runs()


@shared_task(name="symfonic_django.prune", **TASK_OPTIONS)
def prune() -> dict[str, int]:
    result = retention.prune()
    return {"idempotency_records": result.idempotency_records, "events": result.events or 0,
            "checkpoints": result.checkpoints}


@shared_task(name=notifications.DELIVER_TASK, bind=True, max_retries=None, **TASK_OPTIONS)
def deliver_notification(self: Any, delivery_id: str) -> str:
    """One attempt of a notification; a failure is retried after the delivery's backoff.

    The attempts are counted in the database, not by Celery (``max_retries=None``): a
    duplicate message, or one that outlived its attempt, finds nothing due and skips.
    """
    outcome = notifications.attempt(delivery_id)
    if outcome.retry_in is not None:
        raise self.retry(countdown=outcome.retry_in)
    return outcome.result


@shared_task(name="symfonic_django.send_due_notifications", **TASK_OPTIONS)
def send_due_notifications() -> int:
    return notifications.send_due()


@shared_task(name="symfonic_django.send_reminders", **TASK_OPTIONS)
def send_reminders() -> dict[str, int]:
    """Remind, then escalate, pending pauses nearing their expiry (each once)."""
    sweep = notifications.send_reminders()
    return {"reminded": sweep.reminded, "escalated": sweep.escalated}


#: Add to ``CELERY_BEAT_SCHEDULE`` (or ``app.conf.beat_schedule``).
BEAT_SCHEDULE = {
    "symfonic-expire-pauses": {"task": "symfonic_django.expire_pauses", "schedule": 30.0},
    "symfonic-reap-stale-runs": {"task": "symfonic_django.reap_stale_runs", "schedule": 30.0},
    "symfonic-requeue-stalled-runs": {"task": "symfonic_django.requeue_stalled_runs",
                                      "schedule": 15.0},
    "symfonic-prune": {"task": "symfonic_django.prune", "schedule": 3600.0},
    "symfonic-send-due-notifications": {"task": "symfonic_django.send_due_notifications",
                                        "schedule": 60.0},
    "symfonic-send-reminders": {"task": "symfonic_django.send_reminders", "schedule": 60.0},
}
