"""Several approvers under real contention: 20 processes approve one two-approver pause.

Eight distinct reviewers of the pause's scope, two processes each, and four
accounts that may not answer it (no permission, another tenant's reviewer), all
released at one barrier. Each approval takes the pause's row lock; the pause
leaves pending with the second distinct reviewer, once. Invariant: exactly one
continuation, exactly two counted approvals (``Decision`` rows, by two different
reviewers), the four outsiders refused with ``permission_denied`` whenever they
came, and every other racer refused with ``already_approved`` (the same person
counted) or ``already_answered`` (the quorum was complete).
"""

from __future__ import annotations

from collections import Counter

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from symfonic_django.models import Decision, Pause, PauseStatus, Run
from tests.testapp.models import Membership, Tenant

from ..conftest import paused_run
from .conftest import process_env
from .contenders import approve_as_at_barrier, collect, process_context

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

REVIEWERS, EACH = 8, 2
#: Accounts that hold a user but may not answer the pause: (name, tenant, may answer).
OUTSIDERS = [("no-permission-0", "acme", False), ("no-permission-1", "acme", False),
             ("globex-reviewer-0", "globex", True), ("globex-reviewer-1", "globex", True)]


def account(name: str, tenant: str, answers: bool) -> None:
    user = get_user_model().objects.create_user(name)
    if answers:
        user.user_permissions.add(Permission.objects.get(codename="answer_pause"))
    Membership.objects.create(user=user, tenant=Tenant.objects.get(slug=tenant))


def test_20_processes_of_8_reviewers_and_4_outsiders_give_one_continuation_and_two_approvals(
        tenants):
    run, pause = paused_run("echo")
    # What APPROVAL_POLICY would have said when the pause was made: the racers' own
    # settings have no policy, and the quorum reads the pause's column.
    Pause.objects.filter(pk=pause.pk).update(approvals_needed=2)
    names = [f"reviewer-{i}" for i in range(REVIEWERS)]
    for name in names:
        account(name, "acme", answers=True)
    for name, tenant, answers in OUTSIDERS:
        account(name, tenant, answers)
    outsiders = {name for name, _, _ in OUTSIDERS}
    racers_for = [names[i % REVIEWERS] for i in range(REVIEWERS * EACH)] + sorted(outsiders)
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

    assert {outcome for _, name, outcome in reports if name in outsiders} <= {
        "permission_denied", "already_answered"}, reports
    tally = Counter(outcome for _, name, outcome in reports if name not in outsiders)
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
