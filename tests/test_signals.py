"""``symfonic_django.signals``: one signal per transition, sent once it commits.

Each transition runs as the app runs it (a turn in-process, an answer, the
expirer, the reaper, a retry); its signal fires once, with the model class as
``sender`` and exactly the arguments its comment names. The tests are
transactional, so ``on_commit`` behaves as in production.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction
from django.dispatch import Signal
from django.utils import timezone

from symfonic_django import pauses, signals
from symfonic_django.models import Decision, Pause, PauseStatus, Run, RunStatus
from symfonic_django.runs import ABANDON_MESSAGES, claim, reap_stale_runs, retry, start_run
from symfonic_django.turns import execute_run

from .conftest import paused_run

pytestmark = pytest.mark.django_db(transaction=True)

Received = list[tuple[Any, dict[str, Any]]]


@contextmanager
def receiving(watched: Signal) -> Iterator[Received]:
    """Collect ``(sender, arguments)`` for each send of ``watched`` while the block runs."""
    received: Received = []

    def record(sender: Any, signal: Signal, **arguments: Any) -> None:
        received.append((sender, arguments))

    watched.connect(record, weak=False)
    try:
        yield received
    finally:
        watched.disconnect(record)


def only(received: Received, sender: type[Any], names: set[str]) -> dict[str, Any]:
    """The arguments of the one send in ``received``, checked for sender and names."""
    assert len(received) == 1, received
    (got_sender, arguments), = received
    assert got_sender is sender and set(arguments) == names
    return arguments


def make_due(pause: Pause) -> None:
    """Move a pause's deadline into the past (time passing, not a transition)."""
    Pause.objects.filter(pk=pause.pk).update(expires_at=timezone.now() - timedelta(minutes=1))


def lapsed_running_run(worker: str = "worker-that-died") -> Run:
    """A turn claimed by a worker that then stopped renewing its lease."""
    run = start_run("noop", {}, scope="acme", dispatch=False)
    assert claim(run.pk, worker) is not None
    Run.objects.filter(pk=run.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    return run


def failed_run() -> Run:
    run = start_run("boom", {}, scope="acme", dispatch=False)
    assert execute_run(run.pk) == "failed"
    return run


def queued(agent: str) -> Run:
    return start_run(agent, {}, scope="acme", dispatch=False)


@pytest.fixture
def on_expire(settings: Any) -> Callable[[str], None]:
    def set_to(value: str) -> None:
        settings.SYMFONIC = {**settings.SYMFONIC, "ON_EXPIRE": value}
    return set_to


# --- pauses ------------------------------------------------------------------------------

def test_pause_requested_is_sent_once_with_the_new_pause(tenants: Any) -> None:
    run = queued("echo")
    with receiving(signals.pause_requested) as received:
        assert execute_run(run.pk) == "paused"
    pause = Pause.objects.get(run=run)
    arguments = only(received, Pause, {"pause"})
    assert arguments["pause"].pk == pause.pk and arguments["pause"].status == PauseStatus.PENDING


@pytest.mark.parametrize("agent, answer, action", [
    ("echo", lambda pk: pauses.approve(pk), "approve"),
    ("echo", lambda pk: pauses.reject(pk, comment="no"), "reject"),
    ("question", lambda pk: pauses.answer_pause(pk, {"color": "red"}), "answer"),
])
def test_pause_answered_is_sent_once_with_the_decision_and_the_continuation(
        tenants: Any, agent: str, answer: Callable[[Any], pauses.Resolution],
        action: str) -> None:
    run, pause = paused_run(agent)
    with receiving(signals.pause_answered) as received:
        resolution = answer(pause.pk)
    arguments = only(received, Pause, {"pause", "decision", "continuation"})
    assert arguments["pause"].pk == pause.pk
    assert arguments["pause"].status == PauseStatus.ANSWERED
    assert arguments["decision"].pk == Decision.objects.get(pause=pause).pk
    assert arguments["decision"].action == action
    assert resolution.continuation is not None
    assert arguments["continuation"].pk == resolution.continuation.pk
    assert Run.objects.get(parent=run).pk == resolution.continuation.pk


def test_pause_answered_carries_no_continuation_while_a_sibling_is_pending(tenants: Any) -> None:
    run, first = paused_run("siblings", {"n": 2})
    second = Pause.objects.filter(run=run).exclude(pk=first.pk).get()
    with receiving(signals.pause_answered) as received:
        pauses.approve(first.pk)
        pauses.approve(second.pk)
    assert [(sender, a["pause"].pk) for sender, a in received] == [(Pause, first.pk),
                                                                   (Pause, second.pk)]
    assert received[0][1]["continuation"] is None
    assert received[1][1]["continuation"].pk == Run.objects.get(parent=run).pk


@pytest.mark.parametrize("policy", ["fail", "resume"])
def test_pause_expired_is_sent_once_with_the_continuation_it_resumed(
        tenants: Any, on_expire: Callable[[str], None], policy: str) -> None:
    on_expire(policy)
    run, pause = paused_run()
    make_due(pause)
    with receiving(signals.pause_expired) as received:
        assert pauses.expire(pause.pk) is not None
        assert pauses.expire(pause.pk) is None  # already expired: no second send
    arguments = only(received, Pause, {"pause", "continuation"})
    assert arguments["pause"].pk == pause.pk and arguments["pause"].status == PauseStatus.EXPIRED
    if policy == "resume":
        assert arguments["continuation"].pk == Run.objects.get(parent=run).pk
    else:
        assert arguments["continuation"] is None


def test_pause_cancelled_is_sent_once_with_the_cancel_decision(tenants: Any) -> None:
    _, pause = paused_run()
    with receiving(signals.pause_cancelled) as received:
        pauses.cancel(pause.pk, comment="changed my mind")
    arguments = only(received, Pause, {"pause", "decision"})
    assert arguments["pause"].pk == pause.pk
    assert arguments["pause"].status == PauseStatus.CANCELLED
    decision = Decision.objects.get(pause=pause, comment="changed my mind")
    assert arguments["decision"].pk == decision.pk and decision.action == "cancel"


def test_pause_cancelled_is_sent_for_a_sibling_cancelled_with_it(tenants: Any) -> None:
    run, first = paused_run("siblings", {"n": 2})
    second = Pause.objects.filter(run=run).exclude(pk=first.pk).get()
    with receiving(signals.pause_cancelled) as received:
        pauses.cancel(first.pk)
    by_pause = {arguments["pause"].pk: arguments for _, arguments in received}
    assert len(received) == 2 and set(by_pause) == {first.pk, second.pk}
    assert all(sender is Pause and set(a) == {"pause", "decision"} for sender, a in received)
    sibling = by_pause[second.pk]
    assert sibling["pause"].status == PauseStatus.CANCELLED
    assert sibling["decision"].pk == Decision.objects.get(pause=second).pk
    assert (sibling["decision"].action, sibling["decision"].via) == ("cancel", "system")


# --- runs --------------------------------------------------------------------------------

def test_run_claimed_is_sent_once_with_the_worker_and_the_first_epoch(tenants: Any) -> None:
    run = queued("noop")
    with receiving(signals.run_claimed) as received:
        assert execute_run(run.pk, worker="worker-a") == "completed"
        assert execute_run(run.pk, worker="worker-b") == "skipped"  # a second delivery
    arguments = only(received, Run, {"run", "worker", "epoch"})
    assert arguments["run"].pk == run.pk
    assert (arguments["worker"], arguments["epoch"]) == ("worker-a", 1)


def test_run_paused_is_sent_once_with_the_ids_of_its_pauses(tenants: Any) -> None:
    run = start_run("siblings", {"n": 2}, scope="acme", dispatch=False)
    with receiving(signals.run_paused) as received:
        assert execute_run(run.pk) == "paused"
    arguments = only(received, Run, {"run", "pause_ids"})
    ids = [str(pk) for pk in Pause.objects.filter(run=run).order_by("created_at")
           .values_list("pk", flat=True)]
    assert arguments["run"].pk == run.pk and arguments["run"].status == RunStatus.PAUSED
    assert arguments["pause_ids"] == ids


def test_run_completed_is_sent_once_with_the_output(tenants: Any) -> None:
    run = queued("noop")
    with receiving(signals.run_completed) as received:
        assert execute_run(run.pk) == "completed"
    arguments = only(received, Run, {"run", "output"})
    assert arguments["run"].pk == run.pk and arguments["run"].status == RunStatus.COMPLETED
    assert arguments["output"] == "noop"


def test_run_failed_is_sent_once_when_the_agent_raises(tenants: Any) -> None:
    run = queued("boom")
    with receiving(signals.run_failed) as received:
        assert execute_run(run.pk) == "failed"
    arguments = only(received, Run, {"run", "code", "message"})
    assert arguments["run"].pk == run.pk and arguments["run"].status == RunStatus.FAILED
    assert (arguments["code"], arguments["message"]) == ("agent_error", "RuntimeError: boom")


def test_run_failed_is_sent_once_when_the_reaper_fails_a_lapsed_lease(tenants: Any) -> None:
    run = lapsed_running_run()
    with receiving(signals.run_failed) as received:
        assert reap_stale_runs() == 1
        assert reap_stale_runs() == 0
    arguments = only(received, Run, {"run", "code", "message"})
    assert arguments["run"].pk == run.pk and arguments["run"].status == RunStatus.FAILED
    assert arguments["code"] == "lease_expired"
    assert arguments["message"] == "worker worker-that-died stopped renewing its lease"


@pytest.mark.parametrize("code", ["pause_cancelled", "pause_expired"])
def test_run_failed_is_sent_once_when_a_pause_dies(
        tenants: Any, on_expire: Callable[[str], None], code: str) -> None:
    on_expire("fail")
    run, pause = paused_run("siblings", {"n": 2})
    with receiving(signals.run_failed) as received:
        if code == "pause_cancelled":
            pauses.cancel(pause.pk)
        else:
            make_due(pause)
            assert pauses.expire(pause.pk) is not None
    arguments = only(received, Run, {"run", "code", "message"})
    assert arguments["run"].pk == run.pk and arguments["run"].status == RunStatus.FAILED
    assert (arguments["code"], arguments["message"]) == (code, ABANDON_MESSAGES[code])


def test_run_retried_is_sent_once_with_the_actor_and_the_new_attempt(
        tenants: Any, django_user_model: Any) -> None:
    run = failed_run()
    operator = django_user_model.objects.create_user("operator")
    with receiving(signals.run_retried) as received:
        retry(run.pk, actor=operator)
    arguments = only(received, Run, {"run", "actor", "attempt"})
    assert arguments["run"].pk == run.pk and arguments["run"].status == RunStatus.QUEUED
    assert arguments["actor"] == operator and arguments["attempt"] == 2


# --- on commit only ----------------------------------------------------------------------

def _expired(state: Any) -> Any:
    make_due(state[1])
    return pauses.expire(state[1].pk)


#: One transition per signal: (signal, set-up, the transition on what the set-up returned).
TRANSITIONS: dict[str, tuple[Signal, Callable[[], Any], Callable[[Any], Any]]] = {
    "pause_requested": (signals.pause_requested, lambda: queued("echo"),
                        lambda run: execute_run(run.pk)),
    "pause_answered": (signals.pause_answered, paused_run,
                       lambda state: pauses.approve(state[1].pk)),
    "pause_expired": (signals.pause_expired, paused_run, _expired),
    "pause_cancelled": (signals.pause_cancelled, paused_run,
                        lambda state: pauses.cancel(state[1].pk)),
    "run_claimed": (signals.run_claimed, lambda: queued("noop"),
                    lambda run: claim(run.pk, "worker-a")),
    "run_paused": (signals.run_paused, lambda: queued("echo"), lambda run: execute_run(run.pk)),
    "run_completed": (signals.run_completed, lambda: queued("noop"),
                      lambda run: execute_run(run.pk)),
    "run_failed": (signals.run_failed, lambda: queued("boom"), lambda run: execute_run(run.pk)),
    "run_failed_by_the_reaper": (signals.run_failed, lapsed_running_run,
                                 lambda run: reap_stale_runs()),
    "run_failed_by_a_dead_pause": (signals.run_failed, paused_run,
                                   lambda state: pauses.cancel(state[1].pk)),
    "run_retried": (signals.run_retried, failed_run, lambda run: retry(run.pk)),
}


class RolledBack(Exception):
    pass


@pytest.mark.parametrize("name", TRANSITIONS)
def test_a_signal_waits_for_the_outer_transaction_to_commit(tenants: Any, name: str) -> None:
    watched, set_up, transition = TRANSITIONS[name]
    state = set_up()
    with receiving(watched) as received:
        with transaction.atomic():
            transition(state)
            assert received == []  # not before commit
        assert len(received) == 1


@pytest.mark.parametrize("name", TRANSITIONS)
def test_a_signal_is_not_sent_when_the_transaction_rolls_back(tenants: Any, name: str) -> None:
    watched, set_up, transition = TRANSITIONS[name]
    state = set_up()
    with receiving(watched) as received:
        with pytest.raises(RolledBack), transaction.atomic():
            transition(state)
            raise RolledBack
        assert received == []


# --- receivers that fail -----------------------------------------------------------------

def test_a_receiver_that_raises_is_logged_and_undoes_nothing(
        tenants: Any, caplog: pytest.LogCaptureFixture) -> None:
    run, pause = paused_run()

    def broken(sender: Any, **arguments: Any) -> None:
        raise RuntimeError("the mail server is down")

    signals.pause_answered.connect(broken, weak=False)
    try:
        with receiving(signals.pause_answered) as received, caplog.at_level(logging.ERROR):
            resolution = pauses.approve(pause.pk)  # does not raise
    finally:
        signals.pause_answered.disconnect(broken)
    assert len(received) == 1  # the other receivers still ran
    pause.refresh_from_db()
    assert pause.status == PauseStatus.ANSWERED
    assert resolution.continuation is not None
    assert Run.objects.get(parent=run).pk == resolution.continuation.pk
    errors = [r for r in caplog.records if r.name == signals.__name__]
    assert len(errors) == 1 and errors[0].levelno == logging.ERROR
    assert errors[0].exc_info is not None and "mail server" in str(errors[0].exc_info[1])


def test_a_sweeps_signals_are_each_sent_once_and_one_raising_stops_none(
        tenants: Any, caplog: pytest.LogCaptureFixture) -> None:
    """A batch's sends share one commit hook (``send_each_on_commit``): every pause of
    the sweep still gets its own send, and a receiver that raises for the first one is
    logged without keeping the others from theirs."""
    due = [paused_run()[1] for _ in range(3)]
    for pause in due:
        make_due(pause)
    seen: list[Any] = []

    def broken_once(sender: Any, pause: Pause, **arguments: Any) -> None:
        seen.append(pause.pk)
        if len(seen) == 1:
            raise RuntimeError("the webhook receiver is down")

    signals.pause_expired.connect(broken_once, weak=False)
    try:
        with receiving(signals.pause_expired) as received, caplog.at_level(logging.ERROR):
            assert pauses.expire_due() == 3
    finally:
        signals.pause_expired.disconnect(broken_once)
    assert sorted(seen) == sorted(pause.pk for pause in due)  # each once
    assert [arguments["pause"].pk for _, arguments in received] == seen  # one order for all
    assert [r.levelno for r in caplog.records if r.name == signals.__name__] == [logging.ERROR]


def test_a_batch_is_one_commit_hook_and_an_empty_one_is_none(
        tenants: Any, django_capture_on_commit_callbacks: Any) -> None:
    with receiving(signals.pause_cancelled) as received:
        with transaction.atomic():
            with django_capture_on_commit_callbacks() as none:
                signals.send_each_on_commit(signals.pause_cancelled, Pause, [])
            with django_capture_on_commit_callbacks() as one:
                signals.send_each_on_commit(signals.pause_cancelled, Pause, (
                    {"pause": name, "decision": None} for name in ("first", "second")))
            assert received == []  # not before the commit
    assert (len(none), len(one)) == (0, 1)
    assert [arguments["pause"] for _, arguments in received] == ["first", "second"]
