"""Single use under real contention: many OS processes answer one pause at once."""

from __future__ import annotations

from collections import Counter

import pytest

from symfonic_django.models import Decision, Pause, PauseStatus, Run

from ..conftest import paused_run
from .conftest import process_env
from .contenders import answer_at_barrier, collect, process_context

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

RACERS = 32


def test_32_processes_answer_one_pause_exactly_one_wins(tenants):
    run, pause = paused_run("echo")
    ctx = process_context()
    barrier = ctx.Barrier(RACERS)
    results = ctx.Queue()
    env = process_env()
    racers = [ctx.Process(target=answer_at_barrier,
                          args=(env, str(pause.pk), i, barrier, results), daemon=True)
              for i in range(RACERS)]
    for racer in racers:
        racer.start()
    reports = collect(results, racers, timeout=90)
    outcomes = {index: outcome for index, outcome, _ in reports}
    released = [at for _, _, at in reports]

    tally = Counter(outcomes.values())
    assert tally == {"won": 1, "already_answered": RACERS - 1}, (tally, outcomes)
    winner = next(i for i, outcome in outcomes.items() if outcome == "won")
    assert max(released) - min(released) < 5, "the racers were not released together"

    pause = Pause.objects.get(pk=pause.pk)
    assert pause.status == PauseStatus.ANSWERED
    assert pause.answer == {"decisions": [{
        "type": "edit", "edited_action": {"name": "ship", "args": {"qty": winner + 1}}}]}
    decisions = list(Decision.objects.filter(pause=pause))
    assert len(decisions) == 1
    assert decisions[0].actor_label == f"racer-{winner}"
    assert decisions[0].answer == pause.answer
    assert Run.objects.filter(parent=run).count() == 1  # one continuation, not 32
