"""A paused run's stored framework state, gone for through every surface at once.

Pydantic AI and the OpenAI Agents SDK run the approved tools of whatever state they
are handed, as often as they are handed it. Here 32 OS processes go for one paused
run's state at the same moment (``contenders.STATE_SURFACES``): answers through
Python, the API, a pause token and the admin, each running the continuation it made;
workers running the continuation as a redelivery would; retries of it; answers
replayed into a second continuation; the first turn delivered again. Invariant: one
continuation takes the state and completes, each approved refund is recorded once,
nothing fails with anything but a refusal (a replayed answer's continuation row:
``lineage_refused``), and no process sees a 5xx.

``SYMFONIC_STATE_RACE_TRIALS`` trials per framework (1 in ``make test``; the issue's
acceptance is 20).
"""

from __future__ import annotations

import os
from collections import Counter
from importlib.util import find_spec

import pytest

from symfonic_django.models import AgentState, Run, RunStatus
from symfonic_django.pauses.creating import claims_for
from symfonic_django.tokens import mint_token
from tests.testapp.models import Refund
from tests.testapp.seed import seed_users

from ..conftest import paused_run
from .conftest import process_env
from .contenders import STATE_SURFACES, collect, process_context, resume_state_at_barrier

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

RACERS = 32
TRIALS = int(os.environ.get("SYMFONIC_STATE_RACE_TRIALS", "1"))
REFUNDS = [{"order_id": f"S-{n}", "amount": 10 + n} for n in range(3)]
#: What a process may end with: a continuation run to its end, or a refusal.
REFUSALS = {"already_answered", "not_retryable", "skipped", "no_continuation", "200", "302",
            "failed:state_consumed", "failed:lineage_refused"}

FRAMEWORKS = [pytest.param(agent, marks=pytest.mark.skipif(
    not find_spec(package) and not os.environ.get("CI"), reason=f"needs {package}"))
    for agent, package in (("refund_pydantic", "pydantic_ai"), ("refund_openai", "agents"))]


@pytest.mark.parametrize("agent", FRAMEWORKS)
def test_32_processes_on_every_surface_take_a_paused_runs_state_once(tenants, agent):
    reviewer = seed_users()["alice"]["token"]
    ctx = process_context()
    env = process_env()
    tallies: Counter[str] = Counter()
    for trial in range(TRIALS):
        run, pause = paused_run(agent, {"refunds": REFUNDS})
        actions = len(pause.prompt["action_requests"])
        assert actions == len(REFUNDS)
        ids = {"run": str(run.pk), "pause": str(pause.pk), "token": mint_token(claims_for(pause)),
               "reviewer": reviewer, "actions": actions,
               "answer": {"decisions": [{"type": "approve"}] * actions}}
        barrier, results = ctx.Barrier(RACERS), ctx.Queue()
        racers = [ctx.Process(target=resume_state_at_barrier, daemon=True, args=(
            env, STATE_SURFACES[i % len(STATE_SURFACES)], ids, i, barrier, results))
            for i in range(RACERS)]
        for racer in racers:
            racer.start()
        reports = collect(results, racers, timeout=180)
        outcomes = Counter(outcome for _, _, outcome in reports)
        tallies.update(outcomes)

        assert not [r for r in reports if r[2].startswith("error")], reports
        assert set(outcomes) <= REFUSALS | {"completed"}, reports
        state = AgentState.objects.get(run=run)
        taker = Run.objects.get(pk=state.consumed_by_id)
        assert taker.status == RunStatus.COMPLETED, (taker.error, reports)
        root = run.root_id or run.pk
        assert sorted(Refund.objects.filter(run_id=root).values_list("order_id", flat=True)) \
            == [r["order_id"] for r in REFUNDS], f"trial {trial}: {reports}"
        others = Run.objects.filter(parent=run).exclude(pk=taker.pk)
        assert all(o.status != RunStatus.COMPLETED for o in others), reports
    print(f"\n{agent}: {TRIALS} trial(s) of {RACERS} processes: {dict(tallies)}")
