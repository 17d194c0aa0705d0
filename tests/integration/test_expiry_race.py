"""Expiry and answers race through the same guard: a pause leaves pending once."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from symfonic_django import pauses
from symfonic_django.binding import PauseBinding
from symfonic_django.models import Decision, Pause, PauseStatus, Run, RunStatus
from tests.agents import APPROVE_PROMPT

from .conftest import process_env
from .contenders import collect, process_context, race_expiry_against_answer

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

TRIALS = 200
# Each trial's pause expires LEAD seconds after the two contenders meet. The
# answer lands from ANSWER_EARLY before expires_at to ANSWER_LATE after it (its
# own lookups take a few milliseconds first, more on a loaded machine); the
# expirer, like a sweeper, acts at or just after it (a sweep before the
# deadline expires nothing).
LEAD = 0.07
ANSWER_EARLY, ANSWER_LATE = 0.06, 0.015
EXPIRER_LAG = 0.005
PAIRS = 2  # pairs of contenders, each racing its own share of the trials side by side


def paused_runs_with_one_pause(n: int) -> list[Pause]:
    runs = [Run(agent="echo", scope_key="acme", status=RunStatus.PAUSED) for _ in range(n)]
    for run in runs:
        run.root_id = run.id
    Run.objects.bulk_create(runs)
    created = []
    for run in runs:
        binding = PauseBinding(pin=None, scope=None, run_id=str(run.pk),
                               root_run_id=str(run.pk), session_id="", thread_id="",
                               checkpoint_id=None)
        pause, _ = pauses.create_pause(run=run, binding=binding, kind="approval",
                                       prompt=APPROVE_PROMPT, ttl=3600)
        created.append(pause)
    return created


@pytest.mark.parametrize("sweep", [False, True], ids=["expire", "expire_all_due"])
def test_200_expiries_racing_answers_each_end_in_exactly_one_outcome(sweep: bool):
    """``expire(pause)`` for one pause, or the beat's sweep ``expire_all_due()`` (batches
    of ``expire_due()``): the same transaction either way, racing ``approve`` through the
    same guard."""
    trials = paused_runs_with_one_pause(TRIALS)
    rng = random.Random(20261129)
    answerer_plan = [(str(p.pk), rng.uniform(-ANSWER_EARLY, ANSWER_LATE)) for p in trials]
    expirer_plan = [(str(p.pk), rng.uniform(0, EXPIRER_LAG)) for p in trials]

    ctx = process_context()
    results = ctx.Queue()
    env = process_env(SYMFONIC_ON_EXPIRE="fail")
    contenders, shared = [], []
    for pair in range(PAIRS):
        barrier, due = ctx.Barrier(2), ctx.Value("d", 0.0)
        shared.append((barrier, due))  # alive until every contender has them
        for role, plan in (("answerer", answerer_plan), ("expirer", expirer_plan)):
            contenders.append(ctx.Process(
                target=race_expiry_against_answer, daemon=True,
                args=(env, role, plan[pair::PAIRS], LEAD, barrier, due, results, sweep)))
    for contender in contenders:
        contender.start()
    reports: dict[str, list] = {"answerer": [], "expirer": []}
    for role, done in collect(results, contenders, timeout=60 + TRIALS * 0.2):
        assert isinstance(done, list), (role, done)
        reports[role] += done

    answered = {pk: (outcome, start, end) for pk, outcome, start, end in reports["answerer"]}
    expired = {pk: (outcome, start, end) for pk, outcome, start, end in reports["expirer"]}
    decisions: dict[str, list[str]] = {}
    for pause_id, action in Decision.objects.values_list("pause_id", "action"):
        decisions.setdefault(str(pause_id), []).append(action)
    rows = {str(p["id"]): p for p in Pause.objects.values("id", "status", "run_id")}
    runs = {str(r["id"]): r for r in Run.objects.values("id", "status", "error")}
    continued = Counter(str(pk) for pk in Run.objects.filter(parent__isnull=False)
                        .values_list("parent_id", flat=True))

    outcomes = Counter()
    contested = 0
    for pause in trials:
        pk, run_pk = str(pause.pk), str(pause.run_id)
        outcome = (rows[pk]["status"], answered[pk][0], expired[pk][0],
                   tuple(decisions.get(pk, ())), runs[run_pk]["status"], continued[run_pk])
        outcomes[outcome] += 1
        (_, a_start, a_end), (_, e_start, e_end) = answered[pk], expired[pk]
        contested += a_start < e_end and e_start < a_end  # both were in flight at once

    answered_outcome = (PauseStatus.ANSWERED, "answered", "none", ("approve",),
                        RunStatus.PAUSED, 1)
    expired_outcome = (PauseStatus.EXPIRED, "expired", "expired", ("expire",),
                       RunStatus.FAILED, 0)
    assert set(outcomes) <= {answered_outcome, expired_outcome}, outcomes
    assert sum(outcomes.values()) == TRIALS
    # Both ends happen: the race is real, not decided by the schedule alone.
    assert outcomes[answered_outcome] > 0 and outcomes[expired_outcome] > 0, outcomes
    assert contested > 0, "no trial had the answer and the expiry in flight together"
    failed = [runs[str(p.run_id)]["error"]["code"] for p in trials
              if rows[str(p.pk)]["status"] == PauseStatus.EXPIRED]
    assert set(failed) == {"pause_expired"}
    print(f"\n{TRIALS} trials: {outcomes[answered_outcome]} answered, "
          f"{outcomes[expired_outcome]} expired, {contested} with both in flight at once")
