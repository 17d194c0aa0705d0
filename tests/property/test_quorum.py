"""A Hypothesis stateful model of the quorum: several approvers of one answer.

One ``RuleBasedStateMachine`` drives the real state machine (``pauses``) against
the database: a run of its own small agent pauses with two or three sibling
pauses, each of two actions, each needing 1, 2 or 3 approvers (the pause's own
``APPROVAL_POLICY`` reads it from the proposal). Seven people answer them in any
order, through the admin and API surfaces (``via`` admin or api, the pauses of
their own scopes visible) and through a token (``via`` token, signed in or not):
the run's starter, three reviewers of its tenant, a reviewer of the other tenant,
a member who may only view, and an account with no permission. Answers are drawn
from a small pool of decision lists, so that approvers often agree and often do
not: all approve, mixed (approve with reject or respond), with differing messages,
all reject, and edits (one within the policy, one it would ask more approvers
for). Between answers, reviewers lose the answer permission, are deactivated,
leave the tenant, and get it all back; pauses fall due and expire.

A small model predicts each outcome (which call is refused and with which
exception, which answer counts, which ends the pause, when the run continues),
and after every step the invariants are checked against the rows, independently
of the model's predictions:

- **an action runs only with its quorum**: for every continuation queued, every
  action its answers let run (``approve``/``edit``) was approved, in exactly the
  decision list the continuation carries, by ``approvals_needed`` distinct users,
  none of them the run's starter, each holding the answer permission in the scope
  when they answered and still when the pause was answered (read from the log of
  permission changes, by the time of the ``Decision`` and of the answer); a
  single-approver pause may instead be answered with its token;
- a pending pause's approvals are by distinct people (an approval whose approver
  lost the right no longer counts, so a pending pause may hold more approvals than
  it needs, of more than one list, while fewer than it needs stand);
- no refusal changes a row.

A failure prints the shrunk steps and a blob, as ``test_state_machines.py`` does.
``SYMFONIC_PROPERTY_EXAMPLES`` / ``SYMFONIC_PROPERTY_STEPS`` select a longer run;
the default, 200 examples, runs on every leg (SQLite and PostgreSQL) in well under
a minute. Single-threaded on purpose; the race of approvers across processes is
``tests/integration/test_quorum_race.py``.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import override_settings
from django.utils import timezone
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from symfonic_django import pauses, request_pause
from symfonic_django.conf import ALL_SCOPES
from symfonic_django.events import MessageDelta, TurnCompleted
from symfonic_django.exceptions import (
    AlreadyAnswered,
    AlreadyApproved,
    ApprovalMismatch,
    ApprovalNotCounted,
    InvalidAnswer,
    NotFound,
    PauseCancelled,
    PauseExpired,
    PermissionDenied,
)
from symfonic_django.models import Decision, Pause, PauseStatus, Run, RunStatus
from symfonic_django.runs import start_run
from symfonic_django.scopes import reviewer_scope_keys
from symfonic_django.turns import execute_run
from tests.testapp.models import Membership, Tenant

EXAMPLES = int(os.environ.get("SYMFONIC_PROPERTY_EXAMPLES") or 200)
STEPS = int(os.environ.get("SYMFONIC_PROPERTY_STEPS") or 12)

PROFILE = settings(
    max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)

#: Rounds run again when the first did not reach every outcome of ``REACHED``.
EXTRA_ROUNDS = 2
#: What the interleavings must reach, not only refusals: mixed answers counted and
#: completing a quorum, each refusal of the rule, continuations.
REACHED = ("approval counted (mixed)", "answered, need 2+ (mixed)", "refused: ApprovalMismatch",
           "refused: PermissionDenied", "refused: ApprovalNotCounted", "refused: AlreadyApproved",
           "continuation queued")

PENDING, ANSWERED = PauseStatus.PENDING, PauseStatus.ANSWERED
EXPIRED, CANCELLED = PauseStatus.EXPIRED, PauseStatus.CANCELLED
TALLY: Counter[str] = Counter()

# --- the agent and its policy ---------------------------------------------------------------


class QuorumAgent:
    """Pauses with one approval per entry of its input's ``needs``, each of two refunds whose
    args carry how many approvers the pause needs (read by ``needs_from_the_proposal``)."""

    async def start_typed(self, context: Any, input: Any) -> Any:
        for i, need in enumerate(input["needs"]):
            await request_pause(kind="approval", idempotency_key=f"quorum-{i}", prompt={
                "action_requests": [{"name": "refund", "args": {"need": need, "amount": 1}},
                                    {"name": "refund", "args": {"need": need, "amount": 2}}]})
        yield MessageDelta(text="waiting")

    async def continue_recovered_typed(self, continuation: Any, **kwargs: Any) -> Any:
        yield TurnCompleted(output={})


def quorum_agent(scope: Any) -> QuorumAgent:
    return QuorumAgent()


def needs_from_the_proposal(pause: Pause) -> int:
    """The ``APPROVAL_POLICY``: the most any action's ``need`` asks (an edit may raise it)."""
    return max(int(request["args"].get("need", 1)) for request in pause.prompt["action_requests"])


# --- the people and the answers -------------------------------------------------------------

#: name -> (tenant, may answer): the starter and r1–r3 review acme (the runs' tenant).
PEOPLE = {"starter": ("acme", True), "r1": ("acme", True), "r2": ("acme", True),
          "r3": ("acme", True), "globex": ("globex", True), "viewer": ("acme", False),
          "nobody": (None, False)}
#: Those whose right to answer the machine takes away and gives back.
REVOCABLE = ["starter", "r1", "r2", "r3"]
#: Who answers: a person, or ``None``, a token with nobody signed in; the reviewers who may
#: count are drawn more often, so that quorums fill as often as they are refused.
WHO = st.sampled_from(["r1", "r2", "r3", "r1", "r2", "r3", *PEOPLE, None])
SURFACE = st.sampled_from(["admin", "api", "token"])
PAUSE = st.integers(min_value=0, max_value=5)


def _edit(amount: int, need_delta: int = 0) -> dict[str, Any]:
    return {"type": "edit", "edited_action": {"name": "refund", "args": {
        "need": "NEED", "amount": amount, "need_delta": need_delta}}}


#: The decision lists answers are drawn from (``NEED`` becomes the pause's own need).
ANSWERS: list[list[dict[str, Any]]] = [
    [{"type": "approve"}, {"type": "approve"}],
    [{"type": "approve"}, {"type": "reject"}],
    [{"type": "approve"}, {"type": "reject", "message": "not this one"}],
    [{"type": "reject"}, {"type": "approve"}],
    [{"type": "approve"}, {"type": "respond", "message": "ask first"}],
    [{"type": "approve"}, {"type": "respond", "message": "ask twice"}],
    [{"type": "reject", "message": "no"}, {"type": "reject", "message": "no"}],
    [{"type": "respond", "message": "ask first"}, {"type": "reject"}],
    [_edit(5), {"type": "approve"}],
    [_edit(5, need_delta=1), {"type": "reject"}],
]


def concrete(decisions: list[dict[str, Any]], need: int) -> dict[str, Any]:
    """A pool entry as an answer to a pause that needs ``need``: an edit keeps its need, or
    (``need_delta``) asks one approver more than the pause was asked with."""
    out = []
    for decision in decisions:
        if decision["type"] == "edit":
            args = decision["edited_action"]["args"]
            decision = {"type": "edit", "edited_action": {"name": "refund", "args": {
                "need": need + args["need_delta"], "amount": args["amount"]}}}
        out.append(decision)
    return {"decisions": out}


def lets_run(answer: Any) -> bool:
    return isinstance(answer, dict) and any(
        d["type"] in ("approve", "edit") for d in answer.get("decisions", []))


def rows() -> dict[str, list[dict[str, Any]]]:
    return {"run": list(Run.objects.order_by("pk").values()),
            "pause": list(Pause.objects.order_by("pk").values()),
            "decision": list(Decision.objects.order_by("pk").values())}


# --- the model --------------------------------------------------------------------------------

@dataclass
class Person:
    name: str
    pk: int
    tenant: str | None
    answers: bool
    active: bool = True
    member: bool = True

    def may_answer(self) -> bool:
        """The answer permission in acme, as the model has it now."""
        return self.answers and self.active and self.member and self.tenant == "acme"

    def sees_acme(self) -> bool:
        return self.member and self.tenant == "acme"


@dataclass
class PauseModel:
    pk: str
    run: str
    need: int
    status: str = PENDING
    due: bool = False
    #: The approvals counted when given: who, and the list each approved. One counts
    #: toward the quorum while its approver still may answer.
    approvers: dict[str, Any] = field(default_factory=dict)
    #: The list the latest counted approval gave (what ``agree`` gives again).
    approved: dict[str, Any] | None = None


class Quorum(RuleBasedStateMachine):
    """Random interleavings of answers, revocations and expiry on sibling quorum pauses."""

    users: dict[str, Any] = {}  # set by the test before the machine runs
    #: The people whose rights an earlier machine changed: given back at the next start.
    changed: set[str] = set()

    def __init__(self) -> None:
        super().__init__()
        self.people: dict[str, Person] = {}
        self.pauses: dict[str, PauseModel] = {}
        self.run_status: dict[str, str] = {}
        #: user pk -> [(when, may answer from then on)]: who held the right when.
        self.rights: dict[int, list[tuple[datetime, bool]]] = {}
        self.refused: tuple[str, Any] | None = None
        #: Whether a step may have moved a pause or a decision since the rows were checked.
        self.moved = True
        self.on_expire = "fail"
        self.overridden: override_settings | None = None

    @initialize(on_expire=st.sampled_from(["fail", "resume"]),
                needs=st.lists(st.sampled_from([1, 2, 2, 3]), min_size=2, max_size=2))
    def start(self, on_expire: str, needs: list[int]) -> None:
        self.on_expire = on_expire
        self.overridden = override_settings(SYMFONIC={
            **django_settings.SYMFONIC, "ON_EXPIRE": on_expire,
            "APPROVAL_POLICY": "tests.property.test_quorum.needs_from_the_proposal",
            "AGENTS": {**django_settings.SYMFONIC["AGENTS"],
                       "quorum": "tests.property.test_quorum.quorum_agent"}})
        self.overridden.enable()
        Run.objects.all().delete()
        now = timezone.now()
        for name in self.changed:
            self.restore_rights(self.users[name], PEOPLE[name][0], answers=True)
        self.changed.clear()
        for name, (tenant, answers) in PEOPLE.items():
            user = self.users[name]
            self.people[name] = Person(name=name, pk=user.pk, tenant=tenant, answers=answers)
            self.rights[user.pk] = [(now, self.people[name].may_answer())]
        self.pause_a_run(needs)

    def pause_a_run(self, needs: list[int]) -> None:
        self.moved = True
        run = start_run("quorum", {"needs": needs}, scope="acme",
                        started_by=self.users["starter"], dispatch=False)
        assert execute_run(run.pk) == RunStatus.PAUSED
        self.run_status[str(run.pk)] = RunStatus.PAUSED
        made = list(Pause.objects.filter(run=run).order_by("created_at"))
        assert [p.approvals_needed for p in made] == needs
        for pause in made:
            self.pauses[str(pause.pk)] = PauseModel(pk=str(pause.pk), run=str(run.pk),
                                                    need=pause.approvals_needed)

    def teardown(self) -> None:
        TALLY["machines"] += 1
        if self.overridden is not None:
            self.overridden.disable()

    @staticmethod
    def restore_rights(user: Any, tenant: str, answers: bool) -> None:
        """Give ``user`` back the answer permission, its account and its tenant."""
        get_user_model().objects.filter(pk=user.pk).update(is_active=True)
        if answers:
            user.user_permissions.add(Permission.objects.get(codename="answer_pause"))
        Membership.objects.get_or_create(user=user, tenant=Tenant.objects.get(slug=tenant))

    def pause_at(self, index: int) -> PauseModel:
        ordered = sorted(self.pauses.values(), key=lambda p: p.status != PENDING)
        return ordered[index % len(ordered)]

    def siblings(self, pause: PauseModel) -> list[PauseModel]:
        return [p for p in self.pauses.values() if p.run == pause.run]

    def any_pending(self) -> bool:
        return any(p.status == PENDING for p in self.pauses.values())

    def expect_refusal(self, what: str) -> None:
        TALLY[f"refused: {what}"] += 1
        self.refused = (what, rows())

    def closed(self, pause: PauseModel) -> type[Exception] | None:
        if pause.status == ANSWERED:
            return AlreadyAnswered
        if pause.status == CANCELLED:
            return PauseCancelled
        if pause.status == EXPIRED or pause.due:
            return PauseExpired
        return None

    def left_pending(self, pause: PauseModel, status: str, continuation: Run | None) -> None:
        """``pause`` left pending alive (answered, or expired with ``resume``): its run
        continues once none of its siblings is pending."""
        pause.status = status
        if any(p.status == PENDING for p in self.siblings(pause)):
            assert continuation is None
            return
        assert continuation is not None and str(continuation.parent_id) == pause.run
        self.run_status[pause.run] = "continued"
        TALLY["continuation queued"] += 1

    def died(self, pause: PauseModel) -> None:
        for sibling in self.siblings(pause):
            if sibling.status == PENDING:
                sibling.status = CANCELLED
        self.run_status[pause.run] = RunStatus.FAILED

    def expected(self, pause: PauseModel, who: str | None, surface: str,
                 answer: dict[str, Any]) -> type[Exception] | str:
        """What answering ``pause`` as ``who`` through ``surface`` does: a refusal, or
        ``"counted"`` (one more approval, still pending), or ``"answered"``."""
        person = self.people[who] if who is not None else None
        if surface != "token" and not (person is not None and person.sees_acme()):
            return NotFound
        closed = self.closed(pause)
        if closed is not None:
            return closed
        counts = pause.need > 1 and lets_run(answer)
        if (counts or surface != "token") and not (person is not None and person.may_answer()):
            return PermissionDenied
        if (surface == "token" and person is not None and not person.may_answer()
                and not (who == "starter" and person.active and person.sees_acme())):
            return PermissionDenied  # a token sent with a login: the starter's, or a reviewer's
        edits = [d for d in answer["decisions"] if d["type"] == "edit"]
        if any(d["edited_action"]["args"]["need"] > pause.need for d in edits):
            return InvalidAnswer  # the policy would ask more approvers for the edit
        if not counts:
            return "answered"
        if edits:
            return InvalidAnswer  # an edit of a several-approver pause
        if who == "starter":
            return ApprovalNotCounted
        standing = self.standing(pause)
        if who in standing:
            return AlreadyApproved
        if any(given != answer for given in standing.values()):
            return ApprovalMismatch
        return "answered" if len(standing) + 1 >= pause.need else "counted"

    def standing(self, pause: PauseModel) -> dict[str, Any]:
        """The approvals of ``pause`` that count now: their approvers still may answer."""
        return {name: given for name, given in pause.approvers.items()
                if self.people[name].may_answer()}

    # --- rules ----------------------------------------------------------------------------

    @precondition(lambda self: not self.any_pending()
                  and all(s != RunStatus.PAUSED for s in self.run_status.values()))
    @rule(needs=st.lists(st.sampled_from([1, 2, 2, 3]), min_size=2, max_size=3))
    def pause_another_run(self, needs: list[int]) -> None:
        self.pause_a_run(needs)

    @precondition(lambda self: self.any_pending())
    @rule(pause=PAUSE, who=WHO, surface=SURFACE, pick=st.sampled_from(range(len(ANSWERS))))
    def answer(self, pause: int, who: str | None, surface: str, pick: int) -> None:
        """``answer_pause`` with a list from the pool (``agree`` gives the earlier one)."""
        target = self.pause_at(pause)
        answer = concrete(ANSWERS[pick], target.need)
        if who is None and surface != "token":
            surface = "token"  # the admin and the API always have a signed-in user
        self.give(target, who, surface, answer,
                  lambda actor, via, visible: pauses.answer_pause(
                      target.pk, answer, actor=actor, via=via, visible=visible))

    # Answers are most of what happens: the same rule once more, under another name.
    answer_again = answer

    @precondition(lambda self: any(p.approved is not None and p.status == PENDING
                                   for p in self.pauses.values()))
    @rule(pause=PAUSE, who=st.integers(min_value=0, max_value=3), surface=SURFACE)
    def agree(self, pause: int, who: int, surface: str) -> None:
        """Another of the scope's people gives the list a pause's earlier approvers gave
        (mixed ones too): ``who`` picks among those who have not approved it yet."""
        ordered = sorted(self.pauses.values(),
                         key=lambda p: not (p.approved is not None and p.status == PENDING))
        target = ordered[pause % len(ordered)]
        answer = target.approved or concrete(ANSWERS[0], target.need)
        others = [name for name in REVOCABLE if name not in target.approvers]
        # Mostly those who may count now: the earlier approvals stand only while their
        # approvers may answer, so a quorum fills when agreement comes before revocation.
        able = [name for name in others if name != "starter" and self.people[name].may_answer()]
        pool = able if able and who < 3 else others
        self.give(target, pool[who % len(pool)], surface, answer,
                  lambda actor, via, visible: pauses.answer_pause(
                      target.pk, answer, actor=actor, via=via, visible=visible))

    agree_again = agree

    @precondition(lambda self: self.any_pending())
    @rule(pause=PAUSE, who=st.sampled_from(list(PEOPLE)), surface=st.sampled_from(
        ["admin", "api"]), approve=st.booleans())
    def approve_or_reject_all(self, pause: int, who: str, surface: str, approve: bool) -> None:
        """``pauses.approve`` / ``reject`` (the API's approve/reject, the admin's bulk)."""
        target = self.pause_at(pause)
        decision = {"type": "approve"} if approve else {"type": "reject", "message": "no"}
        answer = {"decisions": [dict(decision), dict(decision)]}
        self.give(target, who, surface, answer, lambda actor, via, visible: (
            pauses.approve(target.pk, actor=actor, via=via, visible=visible) if approve else
            pauses.reject(target.pk, actor=actor, via=via, visible=visible, comment="no")))

    def give(self, target: PauseModel, who: str | None, surface: str, answer: dict[str, Any],
             call: Any) -> None:
        # The caller as its surface holds it: loaded before, perhaps since revoked.
        actor = self.users[who] if who is not None else None
        visible = ALL_SCOPES if surface == "token" else reviewer_scope_keys(actor)
        outcome = self.expected(target, who, surface, answer)
        if not isinstance(outcome, str):
            self.expect_refusal(f"{outcome.__name__} ({surface})")
            with pytest.raises(outcome):
                call(actor, surface, visible)
            return
        resolution = call(actor, surface, visible)
        self.moved = True
        mixed = lets_run(answer) and not all(d["type"] == "approve" for d in answer["decisions"])
        if outcome == "counted":
            TALLY["approval counted" + (" (mixed)" if mixed else "")] += 1
            assert resolution.approvals is not None and resolution.continuation is None
            assert resolution.pause.status == PENDING
            target.approvers[who or ""] = answer
            target.approved = answer
            assert resolution.approvals.have == len(self.standing(target))
            return
        TALLY[f"answered, need {min(target.need, 2)}{'+' if target.need > 1 else ''}"
              + (" (mixed)" if mixed else "")] += 1
        assert resolution.approvals is None and resolution.pause.status == ANSWERED
        self.left_pending(target, ANSWERED, resolution.continuation)

    @rule(who=st.sampled_from(REVOCABLE),
          how=st.sampled_from(["permission", "deactivate", "scope", "restore"]))
    def change_rights(self, who: str, how: str) -> None:
        person, user = self.people[who], self.users[who]
        permission = Permission.objects.get(codename="answer_pause")
        if how == "permission":
            user.user_permissions.remove(permission)
            person.answers = False
        elif how == "deactivate":
            get_user_model().objects.filter(pk=user.pk).update(is_active=False)
            person.active = False
        elif how == "scope":
            Membership.objects.filter(user=user).delete()
            person.member = False
        else:
            self.restore_rights(user, "acme", answers=True)
            person.answers = person.active = person.member = True
        TALLY[f"rights: {how}"] += 1
        self.changed.add(who)
        self.rights[user.pk].append((timezone.now(), person.may_answer()))

    @precondition(lambda self: self.any_pending())
    @rule(pause=PAUSE, sweep=st.booleans())
    def fall_due(self, pause: int, sweep: bool) -> None:
        """A pause's deadline passes; with ``sweep`` the expiry sweep then reaches it."""
        target = self.pause_at(pause)
        if target.status != PENDING:
            return
        Pause.objects.filter(pk=target.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
        target.due = True
        self.moved = True
        if not sweep:
            return
        resolution = pauses.expire(target.pk)
        assert resolution is not None and resolution.pause.status == EXPIRED
        TALLY["expired"] += 1
        if self.on_expire == "fail":
            target.status = EXPIRED
            self.died(target)
        else:
            self.left_pending(target, EXPIRED, resolution.continuation)

    # --- invariants ---------------------------------------------------------------------

    @invariant()
    def no_refusal_changes_a_row(self) -> None:
        if self.refused is not None:
            what, before = self.refused
            self.refused = None
            assert rows() == before, f"the refused {what} changed rows"

    def held_the_right(self, user_pk: int | None, when: datetime) -> bool:
        if user_pk is None or user_pk not in self.rights:
            return False
        held = [right for moment, right in self.rights[user_pk] if moment <= when]
        return bool(held) and held[-1]

    @invariant()
    def an_action_runs_only_with_its_quorum(self) -> None:
        """Read after each step that may have moved a pause (a refusal is checked above)."""
        if not self.moved:
            return
        self.moved = False
        starter = self.users["starter"].pk
        by_pause: dict[str, list[Decision]] = {}
        for decision in Decision.objects.order_by("pk"):
            by_pause.setdefault(str(decision.pause_id), []).append(decision)
        found = {str(p.pk): p for p in Pause.objects.all()}
        for pause in found.values():
            if pause.status == PENDING:
                approvals = [d for d in by_pause.get(str(pause.pk), []) if d.action == "approve"]
                assert len({d.actor_id for d in approvals}) == len(approvals), pause.pk
        for run in Run.objects.filter(parent__isnull=False):
            for pause_id, answer in run.input["answers"].items():
                if not lets_run(answer):
                    continue
                pause = found[pause_id]
                given = [d for d in by_pause.get(pause_id, []) if d.answer == answer]
                if pause.approvals_needed == 1 and [d.via for d in given] == ["token"]:
                    continue  # a single approver's token answers for itself
                # N distinct people approved exactly this list, each holding the right when
                # they answered and still when the pause was answered; the starter may be
                # the one approver of a pause that needs one, never one of a quorum.
                approvers = {d.actor_id for d in given
                             if (d.actor_id != starter or pause.approvals_needed == 1)
                             and self.held_the_right(d.actor_id, d.created_at)
                             and self.held_the_right(d.actor_id, pause.answered_at)}
                assert len(approvers) >= pause.approvals_needed, (
                    pause_id, answer, [(d.actor_label, d.via, d.created_at) for d in given])


@pytest.mark.django_db(transaction=True)
def test_an_action_runs_only_when_its_quorum_approved_its_exact_answer(tenants: Any) -> None:
    TALLY.clear()
    users = {}
    for name in PEOPLE:
        user = get_user_model().objects.create_user(f"quorum-{name}")
        codenames = ["view_pause", "answer_pause"] if PEOPLE[name][1] else (
            ["view_pause"] if PEOPLE[name][0] else [])
        user.user_permissions.add(*Permission.objects.filter(
            content_type__app_label="symfonic_django", codename__in=codenames))
        if PEOPLE[name][0] is not None:
            Membership.objects.create(user=user, tenant=tenants[PEOPLE[name][0]])
        users[name] = user
    Quorum.users = users
    Quorum.changed.clear()
    rounds = 0
    try:
        # Each example may use only some of the rules (Hypothesis' swarm testing): a round
        # that missed an outcome of REACHED is followed by another, a bounded number of times.
        while rounds == 0 or (unreached() and rounds <= EXTRA_ROUNDS):
            run_state_machine_as_test(Quorum, settings=PROFILE)
            rounds += 1
    finally:
        Quorum.users = {}
    print(f"{rounds} round(s) of {EXAMPLES} examples of up to {STEPS} steps:",
          ", ".join(f"{name} {n}" for name, n in sorted(TALLY.items())))
    assert not unreached(), f"no interleaving reached {unreached()}: {TALLY}"


def unreached() -> set[str]:
    """The outcomes of ``REACHED`` no step reached yet (a refusal on any surface)."""
    reached = {name.split(" (")[0] if name.startswith("refused") else name for name in TALLY}
    return set(REACHED) - reached
