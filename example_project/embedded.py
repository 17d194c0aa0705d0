"""The embedded default: a Celery worker and beat, threads of the server process.

With ``CELERY_BROKER_URL`` unset (``memory://``) the broker is this process's
memory: nothing outside it would ever consume a task or send the periodic
ones. So the server process runs one worker thread and Celery's embedded beat
(what ``celery worker -B`` runs, here as a thread: ``beat.EmbeddedService``
with ``thread=True``) on ``CELERY_BEAT_SCHEDULE``: expiry, notifications,
reminders, the reaper. A real deployment sets a broker and runs
``celery -A example_project worker`` and one ``celery -A example_project beat``.
"""

from __future__ import annotations

import logging
import threading
from contextlib import ExitStack

from celery import Celery
from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from symfonic_django.models import DeliveryStatus, NotificationDelivery
from symfonic_django.notifications import DELIVER_TASK

log = logging.getLogger(__name__)

_lock = threading.Lock()
_stack: ExitStack | None = None

#: The beat's schedule lives in memory: nothing is written beside the project, and the
#: schedule starts afresh with the process (its first run is ``catch_up``'s).
BEAT_SCHEDULER = "celery.beat:Scheduler"


def embedded() -> bool:
    return settings.CELERY_BROKER_URL.startswith("memory")


def start_embedded_worker_if_needed() -> bool:
    """Start the in-process worker and beat once; returns whether they run now."""
    global _stack
    if not embedded():
        return False
    with _lock:
        if _stack is None:
            from celery.beat import EmbeddedService
            from celery.contrib.testing.worker import start_worker

            from example_project.celery import app

            stack = ExitStack()
            stack.enter_context(start_worker(app, pool="solo", concurrency=1,
                                             perform_ping_check=False, loglevel="WARNING",
                                             hostname="embedded@localhost"))
            beat = EmbeddedService(app, thread=True, scheduler_cls=BEAT_SCHEDULER)
            beat.start()
            stack.callback(beat.stop)
            catch_up(app)
            _stack = stack
    return True


def catch_up(app: Celery) -> None:
    """What the beat and the messages of earlier processes would have done, done now.

    Each periodic task runs once at start (the beat's own first run is one period
    later), so a demo started again expires, reaps and reminds at once. And every
    pending delivery that is due is sent: its message went to the in-memory broker of
    a process that has ended (``seed_demo``'s, or this server's before a restart), so
    it is lost for certain, and the beat's ``send_due_notifications`` would resend it
    only minutes later. A delivery already attempted is skipped by its own claim.
    """
    for entry in app.conf.beat_schedule.values():
        app.send_task(entry["task"], args=entry.get("args", ()), kwargs=entry.get("kwargs", {}))
    due = NotificationDelivery.objects.filter(status=DeliveryStatus.PENDING,
                                              next_attempt_at__lte=timezone.now())
    try:
        pending = list(due.order_by("next_attempt_at").values_list("pk", flat=True))
    except DatabaseError:  # not migrated yet: the server starts, and says why pages fail
        log.warning("The database has no tables yet: run `manage.py migrate`.")
        return
    for delivery_id in pending:
        app.send_task(DELIVER_TASK, args=[str(delivery_id)])


def stop_embedded_worker() -> None:
    global _stack
    with _lock:
        if _stack is not None:
            _stack.close()
            _stack = None
