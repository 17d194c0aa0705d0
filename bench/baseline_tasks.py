"""The hand-rolled minimum a continuation worker must do, as a bare Celery task.

``bench/bench_continuations.py`` starts its workers with ``-I bench.baseline_tasks``
so they serve this task beside ``symfonic_django.run_continuation``. It does the
database work of a no-op turn and nothing else, in raw SQL on
``django.db.connection``: a conditional UPDATE claims the queued run (moving it
to running with a lease), ``turn.started`` is inserted, then ``turn.completed``
and the terminal status are written in one transaction — the same rows, in the
same number of transactions, that the real path writes for a no-op turn.
"""

from __future__ import annotations

import json
import os
import socket

from celery import shared_task
from django.db import connection, transaction

from symfonic_django.tasks import TASK_OPTIONS

WORKER = f"{socket.gethostname()}:{os.getpid()}"

CLAIM = """
    UPDATE symfonic_django_run
       SET status = 'running', worker = %s, started_at = now(),
           lease_until = now() + interval '60 seconds', epoch = epoch + 1,
           updated_at = now()
     WHERE id = %s AND status = 'queued'
 RETURNING agent, resumed_from_id, scope_key
"""
EVENT = """
    INSERT INTO symfonic_django_turnevent (run_id, seq, type, data, scope_key, created_at)
    VALUES (%s, %s, %s, %s, %s, now())
"""
FINISH = """
    UPDATE symfonic_django_run
       SET status = 'completed', finished_at = now(), lease_until = NULL, output = %s,
           updated_at = now()
     WHERE id = %s AND status = 'running' AND worker = %s
"""


@shared_task(name="bench.baseline_continuation", **TASK_OPTIONS)
def baseline_continuation(run_id: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(CLAIM, [WORKER, run_id])
        row = cursor.fetchone()
        if row is None:
            return "skipped"
        agent, resumed_from, scope_key = row
        started = {"agent": agent, "resumed_from_pause": str(resumed_from)}
        cursor.execute(EVENT, [run_id, 1, "turn.started", json.dumps(started), scope_key])
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(EVENT, [run_id, 2, "turn.completed", json.dumps({"output": "noop"}),
                               scope_key])
        cursor.execute(FINISH, [json.dumps("noop"), run_id, WORKER])
    return "completed"

