"""The embedded default: a Celery worker thread over the in-memory transport.

With ``CELERY_BROKER_URL`` unset (``memory://``) nothing outside this process
would ever consume a task, so the server process runs one worker thread
itself. A real deployment sets a broker and runs ``celery -A example_project worker``.
"""

from __future__ import annotations

import threading
from contextlib import ExitStack

from django.conf import settings

_lock = threading.Lock()
_stack: ExitStack | None = None


def embedded() -> bool:
    return settings.CELERY_BROKER_URL.startswith("memory")


def start_embedded_worker_if_needed() -> bool:
    """Start the in-process worker once; returns whether one runs now."""
    global _stack
    if not embedded():
        return False
    with _lock:
        if _stack is None:
            from celery.contrib.testing.worker import start_worker

            from example_project.celery import app

            stack = ExitStack()
            stack.enter_context(start_worker(app, pool="solo", concurrency=1,
                                             perform_ping_check=False, loglevel="WARNING",
                                             hostname="embedded@localhost"))
            _stack = stack
    return True


def stop_embedded_worker() -> None:
    global _stack
    with _lock:
        if _stack is not None:
            _stack.close()
            _stack = None
