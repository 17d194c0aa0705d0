"""32 OS processes go for one interrupt at once, through AG-UI and the API together.

Half resume it over AG-UI (``POST ag-ui/refund/``), half answer its pause over
``pauses/{id}/answer/``; as alice (the same caller: her AG-UI replays meet her own
idempotency record) and as admin. Invariant: the pause is answered once, one
continuation runs, one refund is recorded; every other process is refused with a code
(or, an AG-UI replay by the winner's own caller, sent the same continuation's stream),
and none sees a 5xx.
"""

from __future__ import annotations

from collections import Counter

import pytest

from symfonic_django.models import Decision, Pause, PauseStatus, Run, RunStatus
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run
from tests.testapp.models import Refund
from tests.testapp.seed import seed_users

from .agui_contenders import resume_at_barrier
from .conftest import process_env
from .contenders import collect, process_context

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

RACERS = 32
#: What a process may end with.
OUTCOMES = {"answered", "streamed:success", "already_answered", "idempotency_in_progress"}


def test_32_resumes_through_ag_ui_and_the_api_one_continuation_one_refund(tenants):
    users = seed_users()
    run = start_run("refund", {"order_id": "RACE-1", "amount": 40}, scope="acme",
                    thread_id="race-thread", dispatch=False)
    assert execute_run(run.pk) == RunStatus.PAUSED
    pause = Pause.objects.get(run=run)
    ids = {"pause": str(pause.pk), "thread": "race-thread",
           "tokens": {who: users[who]["token"] for who in ("alice", "admin")}}
    ctx = process_context()
    barrier = ctx.Barrier(RACERS)
    results = ctx.Queue()
    env = process_env()
    racers = [ctx.Process(target=resume_at_barrier, args=(env, ids, i, barrier, results),
                          daemon=True) for i in range(RACERS)]
    for racer in racers:
        racer.start()
    reports = collect(results, racers, timeout=150)

    outcomes = Counter(outcome for _, _, outcome in reports)
    assert set(outcomes) <= OUTCOMES, reports
    assert outcomes["answered"] + outcomes["streamed:success"] >= 1, reports
    pause = Pause.objects.get(pk=pause.pk)
    assert pause.status == PauseStatus.ANSWERED
    assert Decision.objects.filter(pause=pause).count() == 1
    [continuation] = Run.objects.filter(parent=run)  # one continuation, not several
    if continuation.status == RunStatus.QUEUED:  # an API answer won: run it, as a worker
        execute_run(continuation.pk)
    continuation.refresh_from_db()
    assert continuation.status == RunStatus.COMPLETED
    assert list(Refund.objects.values_list("order_id", flat=True)) == ["RACE-1"]
    # Whoever won, an AG-UI winner's stream ran to success; a replay by the winner's own
    # caller got that stream too, never a second answer.
    winner = pause.answered_via
    print(f"won through {winner}: {dict(outcomes)}")
    if winner == "ag-ui":
        assert outcomes["streamed:success"] >= 1, reports


INPUTS = 8


def test_new_inputs_sent_at_once_on_one_thread_start_one_run(tenants):
    """"Pending blocks input", under contention: 8 processes send a new input on one
    thread at the same moment. The check and the new run are one transaction under a lock
    of the thread: one run starts, the other 7 are refused thread_paused (the thread has a
    turn in progress), and no second run meets the first on the thread."""
    from .agui_contenders import start_at_barrier

    users = seed_users()
    ids = {"thread": "inputs-at-once", "token": users["alice"]["token"]}
    ctx = process_context()
    barrier, results = ctx.Barrier(INPUTS), ctx.Queue()
    env = process_env()
    racers = [ctx.Process(target=start_at_barrier, args=(env, ids, i, barrier, results),
                          daemon=True) for i in range(INPUTS)]
    for racer in racers:
        racer.start()
    reports = collect(results, racers, timeout=120)
    outcomes = Counter(outcome for _, outcome in reports)
    assert outcomes == {"started": 1, "thread_paused": INPUTS - 1}, reports
    assert Run.objects.filter(thread_id="inputs-at-once").count() == 1
