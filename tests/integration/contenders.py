"""Entry points of the separate processes that contend for a pause.

Each contender is an OS process of its own, never a fork of the pytest
process: it sets up Django against the test database from the environment it
is handed, opens its own connection, waits at a barrier, then acts and
reports what happened as plain tuples on a queue. Nothing here imports Django
at module level: the module is imported before ``django.setup()`` runs.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from typing import Any

# Modules that read no Django setting and define no model when imported. A
# fresh interpreter spends over a second of CPU importing them; the forkserver
# imports them once and forks each contender from that clean server process
# (never from pytest), so 32 contenders start in seconds on two cores. Each
# contender still runs ``django.setup()`` itself, with its own environment.
PRELOAD = ["psycopg", "jsonschema", "kombu", "celery.app", "django.db.models", "django.http",
           "django.urls", "django.db.backends.postgresql.base", "django.contrib.admin",
           "rest_framework", "channels", "twisted.internet.asyncioreactor",
           "autobahn.twisted.websocket"]


def process_context() -> Any:
    """The multiprocessing context contenders are started from (a clean forkserver)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(PRELOAD)
    return ctx


def collect(results: Any, processes: list[Any], *, timeout: float) -> list[Any]:
    """One report per process from ``results``; fails fast when one dies without reporting.

    Joins (or, past the deadline, kills) every process before returning.
    """
    import queue

    reports: list[Any] = []
    deadline = time.monotonic() + timeout
    try:
        while len(reports) < len(processes):
            try:
                reports.append(results.get(timeout=0.5))
                continue
            except queue.Empty:
                pass
            dead = [p.exitcode for p in processes if p.exitcode not in (None, 0)]
            if dead or time.monotonic() > deadline:
                # Drain what was reported meanwhile, to say who did report.
                while True:
                    try:
                        reports.append(results.get_nowait())
                    except queue.Empty:
                        break
                if len(reports) < len(processes):
                    raise AssertionError(
                        f"{len(reports)} of {len(processes)} contenders reported "
                        f"({'exit codes ' + str(dead) if dead else f'timeout {timeout:g}s'}): "
                        f"{reports}")
    finally:
        for p in processes:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join(timeout=5)
    return reports


def _setup_django(env: dict[str, str]) -> None:
    from django.conf import settings

    assert not settings.configured, "a contender must set Django up itself"
    os.environ.update(env)
    import django

    django.setup()
    from django.db import connection

    connection.ensure_connection()  # connect before the barrier, not in the race


def _edit(qty: int) -> dict[str, Any]:
    return {"decisions": [{"type": "edit", "edited_action": {"name": "ship", "args": {"qty": qty}}}]}


def answer_at_barrier(env: dict[str, str], pause_id: str, index: int, barrier: Any,
                      results: Any) -> None:
    """Answer ``pause_id`` with ``qty = index + 1`` the moment every racer is ready.

    Odd racers go through ``approve(edited_args=...)``, even ones through
    ``answer_pause`` with the same ``HITLResponse``; both are the one guarded
    transition. Reports ``(index, "won" | refusal code | "error: ...")``.
    """
    try:
        _setup_django(env)
        from symfonic_django import pauses
        from symfonic_django.exceptions import SymfonicError
    except BaseException as exc:
        barrier.abort()
        results.put((index, f"error: setup failed: {exc!r}", 0.0))
        raise
    barrier.wait(timeout=120)
    released = time.time()
    actor = f"racer-{index}"
    try:
        if index % 2:
            pauses.approve(pause_id, edited_args={"qty": index + 1}, actor=actor)
        else:
            pauses.answer_pause(pause_id, _edit(index + 1), actor=actor)
        outcome = "won"
    except SymfonicError as exc:
        outcome = exc.code
    except Exception as exc:  # a 5xx-class failure: report it, the test fails on it
        outcome = f"error: {exc!r}"
    results.put((index, outcome, released))


def approve_as_at_barrier(env: dict[str, str], pause_id: str, index: int, username: str,
                          barrier: Any, results: Any) -> None:
    """Approve ``pause_id`` as the user ``username`` the moment every racer is ready.

    Reports ``(index, username, "approved" | "continued" | refusal code | "error: ...")``:
    ``"continued"`` when this approval completed the quorum and queued the continuation.
    """
    try:
        _setup_django(env)
        from django.contrib.auth import get_user_model

        from symfonic_django import pauses
        from symfonic_django.exceptions import SymfonicError

        user = get_user_model().objects.get(username=username)
    except BaseException as exc:
        barrier.abort()
        results.put((index, username, f"error: setup failed: {exc!r}"))
        raise
    barrier.wait(timeout=120)
    try:
        resolution = pauses.approve(pause_id, actor=user, via="api")
        outcome = "continued" if resolution.continuation is not None else "approved"
    except SymfonicError as exc:
        outcome = exc.code
    except Exception as exc:  # a 5xx-class failure: report it, the test fails on it
        outcome = f"error: {exc!r}"
    results.put((index, username, outcome))


def race_expiry_against_answer(env: dict[str, str], role: str, trials: list[tuple[str, float]],
                               lead: float, barrier: Any, due: Any, results: Any,
                               sweep: bool = False) -> None:
    """Two of these race, trial by trial: one ``"expirer"``, one ``"answerer"``.

    For each ``(pause_id, offset)`` the expirer sets the pause's ``expires_at``
    to ``lead`` seconds from now and shares it through ``due``; both meet at
    ``barrier``, then each acts at ``expires_at + offset``: the answerer calls
    ``approve`` (outcome ``"answered"`` or the refusal code), the expirer calls
    ``expire`` (``"expired"`` when it expired the pause, ``"none"`` when it
    returned None). With ``sweep`` the expirer runs the beat's sweep,
    ``expire_all_due()``, instead: ``"expired"`` when the pause is expired after it.
    Meeting per trial keeps a slow trial from delaying the next. Reports
    ``(role, [(pause_id, outcome, started, ended)])``.
    """
    try:
        _setup_django(env)
        from datetime import UTC, datetime

        from symfonic_django import pauses
        from symfonic_django.exceptions import SymfonicError
        from symfonic_django.models import Pause
    except BaseException as exc:
        barrier.abort()
        results.put((role, f"error: setup failed: {exc!r}"))
        raise
    done = []
    for pause_id, offset in trials:
        if role == "expirer":
            at = time.time() + lead
            Pause.objects.filter(pk=pause_id).update(expires_at=datetime.fromtimestamp(at, UTC))
            due.value = at
        barrier.wait(timeout=60)
        delay = due.value + offset - time.time()
        if delay > 0:
            time.sleep(delay)
        started = time.time()
        try:
            if role == "answerer":
                pauses.approve(pause_id, actor=role)
                outcome = "answered"
            elif sweep:
                pauses.expire_all_due()
                expired = Pause.objects.filter(pk=pause_id, status="expired").exists()
                outcome = "expired" if expired else "none"
            else:
                outcome = "expired" if pauses.expire(pause_id) is not None else "none"
        except SymfonicError as exc:
            outcome = exc.code
        except Exception as exc:
            outcome = f"error: {exc!r}"
        done.append((pause_id, outcome, started, time.time()))
    results.put((role, done))
