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


#: How each of the 32 processes of ``test_state_race`` goes for a paused run's stored state,
#: by its index modulo 8: the three answer surfaces, then what a worker, a retry, a replayed
#: answer or a redelivered first turn do with it.
STATE_SURFACES = ("python", "api", "token", "admin", "worker", "retry", "forged", "first_turn")


def resume_state_at_barrier(env: dict[str, str], surface: str, ids: dict[str, Any],
                            index: int, barrier: Any, results: Any) -> None:
    """Go for the paused run's state through ``surface`` once every racer is ready.

    ``ids`` holds ``run`` (the paused run), ``pause``, ``answer`` (approving every
    action), ``token`` (the pause's) and ``reviewer`` (a DRF token of a reviewer of
    its scope). An answer surface that wins runs the continuation it made in this
    process, as a worker would. Reports ``(index, surface, outcome)``.
    """
    try:
        _setup_django(env)
    except BaseException as exc:
        barrier.abort()
        results.put((index, surface, f"error: setup failed: {exc!r}"))
        raise
    barrier.wait(timeout=120)
    try:
        outcome = _go_for_state(surface, ids, index)
    except Exception as exc:  # a 5xx-class failure: report it, the test fails on it
        outcome = f"error: {exc!r}"
    results.put((index, surface, outcome))


def _go_for_state(surface: str, ids: dict[str, Any], index: int) -> str:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from symfonic_django import pauses, runs
    from symfonic_django.exceptions import SymfonicError
    from symfonic_django.models import Pause, Run
    from symfonic_django.turns import execute_run

    def continuation_id() -> Any:
        return Pause.objects.filter(pk=ids["pause"]).values_list("continuation_id",
                                                                 flat=True).first()

    def answered(status: int, body: Any) -> str:
        if status == 202:
            return _ran(execute_run, continuation_id())
        return body.get("code", str(status)) if isinstance(body, dict) else str(status)

    try:
        if surface == "python":
            made = pauses.answer_pause(ids["pause"], ids["answer"], actor=f"racer-{index}")
            return _ran(execute_run, made.continuation.pk)
        if surface in ("api", "token"):
            client = Client()
            path, body, headers = (
                (f"/api/symfonic/pauses/{ids['pause']}/answer/", {"answer": ids["answer"]},
                 {"HTTP_AUTHORIZATION": f"Token {ids['reviewer']}"}) if surface == "api" else
                ("/api/symfonic/resume/", {"token": ids["token"], "answer": ids["answer"]}, {}))
            response = client.post(path, body, content_type="application/json", **headers)
            return answered(response.status_code, response.json())
        if surface == "admin":
            client = Client()
            client.force_login(get_user_model().objects.get(username="alice"))
            data = {f"decision_{i}": "approve" for i in range(ids["actions"])}
            response = client.post(f"/admin/symfonic_django/pause/{ids['pause']}/change/",
                                   data)
            return answered(202 if continuation_id() and response.status_code == 302
                            else response.status_code, None)
        if surface in ("worker", "retry"):
            deadline = time.monotonic() + 20
            while continuation_id() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            if surface == "retry":
                runs.retry(continuation_id(), comment=f"racer-{index}")
            return _ran(execute_run, continuation_id())
        if surface == "forged":  # an answer replayed into a second continuation of the pauses
            paused = Run.objects.get(pk=ids["run"])
            forged = Run.objects.create(agent=paused.agent, scope_key=paused.scope_key,
                                        parent=paused, root_id=paused.root_id or paused.pk,
                                        resumed_from_id=ids["pause"],
                                        input={"answers": {str(ids["pause"]): ids["answer"]}})
            return _ran(execute_run, forged.pk)
        return _ran(execute_run, ids["run"])  # the first turn delivered again
    except SymfonicError as exc:
        return exc.code


def _ran(execute_run: Any, run_id: Any) -> str:
    """What ``execute_run`` made of the run, with the code it failed with."""
    from symfonic_django.models import Run

    if run_id is None:
        return "no_continuation"
    outcome = execute_run(run_id)
    error = Run.objects.filter(pk=run_id).values_list("error", flat=True).first() or {}
    return f"{outcome}:{error['code']}" if error.get("code") else str(outcome)
