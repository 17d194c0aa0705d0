"""Several approvers under real contention: 16 processes approve one two-approver pause.

Eight distinct reviewers, two processes each, all released at one barrier.
Each approval takes the pause's row lock; the pause leaves pending with the
second distinct approver, once. Invariant: exactly one continuation, exactly
two counted approvals (``Decision`` rows, by two different people), and every
other racer refused with ``already_approved`` (the same person counted) or
``already_answered`` (the quorum was complete).
"""

from __future__ import annotations

from collections import Counter

import pytest
from django.contrib.auth import get_user_model

from symfonic_django.models import Decision, Pause, PauseStatus, Run

from ..conftest import paused_run
from .conftest import process_env
from .contenders import approve_as_at_barrier, collect, process_context

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

REVIEWERS, EACH = 8, 2


def test_16_processes_of_8_reviewers_give_one_continuation_and_two_approvals(tenants):
    run, pause = paused_run("echo")
    # What APPROVAL_POLICY would have said when the pause was made: the racers' own
    # settings have no policy, and the quorum reads the pause's column.
    Pause.objects.filter(pk=pause.pk).update(approvals_needed=2)
    names = [f"reviewer-{i}" for i in range(REVIEWERS)]
    for name in names:
        get_user_model().objects.create_user(name)
    racers_for = [names[i % REVIEWERS] for i in range(REVIEWERS * EACH)]
    ctx = process_context()
    barrier = ctx.Barrier(len(racers_for))
    results = ctx.Queue()
    env = process_env()
    racers = [ctx.Process(target=approve_as_at_barrier,
                          args=(env, str(pause.pk), i, name, barrier, results), daemon=True)
              for i, name in enumerate(racers_for)]
    for racer in racers:
        racer.start()
    reports = collect(results, racers, timeout=120)

    tally = Counter(outcome for _, _, outcome in reports)
    assert tally["approved"] == 1 and tally["continued"] == 1, (tally, reports)
    assert set(tally) <= {"approved", "continued", "already_approved", "already_answered"}, tally
    counted = {name for _, name, outcome in reports if outcome in ("approved", "continued")}
    assert len(counted) == 2

    pause = Pause.objects.get(pk=pause.pk)
    assert pause.status == PauseStatus.ANSWERED
    approvals = list(Decision.objects.filter(pause=pause).values_list("action", "actor_label"))
    assert sorted(approvals) == sorted(("approve", name) for name in counted)
    assert Run.objects.filter(parent=run).count() == 1
    assert pause.continuation_id is not None
