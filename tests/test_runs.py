"""The run state machine: claims with a fencing epoch, the end of a turn, fenced side
effects, operator retries and the resending of lost messages, on both databases."""

from __future__ import annotations

import ast
import pathlib
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from symfonic_django import pauses, runs
from symfonic_django.events import TurnCompleted, TurnStarted
from symfonic_django.exceptions import RunNotRetryable
from symfonic_django.models import Run, RunRetry, RunStatus, TurnEvent
from symfonic_django.runs import LeaseLost, claim, end, retry, start_run
from symfonic_django.turns import execute_run
from tests.testapp.models import Refund

from .conftest import paused_run

pytestmark = pytest.mark.django_db(transaction=True)


def types(run: Run) -> list[str]:
    return list(TurnEvent.objects.filter(run=run).order_by("seq").values_list("type", flat=True))


def seqs_are_contiguous(run: Run) -> bool:
    seqs = list(TurnEvent.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))
    return seqs == list(range(1, len(seqs) + 1))


# --- the table ---------------------------------------------------------------------------

def test_the_declared_edges_are_exactly_the_designed_ones():
    edges = {(source, e.target) for e in runs.EDGES.values() for source in e.sources}
    assert edges == {("queued", "running"), ("running", "completed"), ("running", "paused"),
                     ("running", "failed"), ("paused", "failed"), ("failed", "queued")}


#: The calls that write a row's fields, and the keywords that name the fields they write.
WRITE_CALLS = ("update", "create", "bulk_create", "save", "bulk_update", "update_or_create",
               "get_or_create")
FIELD_LISTS = ("update_fields", "fields")
FIELD_DICTS = (None, "defaults", "create_defaults")  # None: ``**{...}``


def writes_status(call: ast.Call) -> bool:
    """Whether ``call`` writes a ``status``: ``status=...``, ``**{"status": ...}``,
    ``defaults={"status": ...}``, ``save(update_fields=["status"])`` or
    ``bulk_update(rows, ["status"])``."""
    def names_status(node: ast.AST) -> bool:
        items = (node.keys if isinstance(node, ast.Dict)
                 else node.elts if isinstance(node, ast.List | ast.Tuple | ast.Set) else [])
        return any(isinstance(item, ast.Constant) and item.value == "status" for item in items)

    if not (isinstance(call.func, ast.Attribute) and call.func.attr in WRITE_CALLS):
        return False
    fields = [call.args[1]] if call.func.attr == "bulk_update" and len(call.args) > 1 else []
    for keyword in call.keywords:
        if keyword.arg == "status":
            return True
        if keyword.arg in FIELD_LISTS + FIELD_DICTS:
            fields.append(keyword.value)
    return any(names_status(node) for node in fields)


@pytest.mark.parametrize("write", [
    'Run.objects.filter(pk=1).update(status="failed")',
    'Run.objects.filter(pk=1).update(**{"status": "failed"})',
    'run.save(update_fields=["status", "updated_at"])',
    'Run.objects.bulk_update(rows, ["status"])',
    'Run.objects.bulk_update(rows, fields=("status",))',
    'Pause.objects.update_or_create(pk=1, defaults={"status": "expired"})',
    'Pause.objects.create(status="answered")',
])
def test_the_status_write_guard_sees_every_way_of_writing_one(write):
    call = ast.parse(write).body[0].value
    assert isinstance(call, ast.Call) and writes_status(call)


def test_no_module_but_transitions_writes_a_status():
    """Single writer: every state machine (runs, pauses, notification deliveries) declares
    its edges and moves through ``transitions.Machine.move``, the one status write."""
    package = pathlib.Path(runs.__file__).parent
    writers: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and writes_status(node)
                    # an idempotency record's status is the HTTP status it replays
                    and "IdempotentResponse" not in ast.unparse(node.func)):
                assert isinstance(node.func, ast.Attribute)
                writers.setdefault(str(path.relative_to(package)), set()).add(node.func.attr)
    assert writers == {"transitions.py": {"update"}}, writers


# --- claiming ------------------------------------------------------------------------------

def test_a_claim_increments_the_epoch_and_records_turn_started(tenants):
    run = start_run("echo", {"text": "hi"}, scope="acme", dispatch=False)
    claimed = claim(run.pk, "w1")
    assert claimed is not None
    stored = Run.objects.get(pk=run.pk)
    for field in Run._meta.concrete_fields:  # the returned row is the stored one
        assert getattr(claimed, field.attname) == getattr(stored, field.attname), field.name
    assert (stored.status, stored.worker, stored.epoch, stored.attempts) == (
        RunStatus.RUNNING, "w1", 1, 1)
    assert stored.resend_after is None  # a claimed run is never sent again
    event = TurnEvent.objects.get(run=run)
    assert (event.seq, event.type) == (1, "turn.started")
    assert event.data == TurnStarted(agent="echo", resumed_from_pause=None).data()
    assert claimed.started_event.pk == event.pk


def test_a_second_claim_gets_nothing_and_writes_nothing(tenants):
    run = start_run("noop", {}, scope="acme", dispatch=False)
    assert claim(run.pk, "w1") is not None
    assert claim(run.pk, "w2") is None
    stored = Run.objects.get(pk=run.pk)
    assert (stored.worker, stored.epoch) == ("w1", 1)
    assert TurnEvent.objects.filter(run=run).count() == 1


def test_an_end_under_a_stale_epoch_writes_nothing(tenants):
    run = start_run("noop", {}, scope="acme", dispatch=False)
    claimed = claim(run.pk, "w1")
    with pytest.raises(LeaseLost):
        end(claimed, 0, 2, TurnCompleted(output="not mine"))
    assert Run.objects.get(pk=run.pk).status == RunStatus.RUNNING
    assert types(run) == ["turn.started"]
    assert end(claimed, 1, 2, TurnCompleted(output="mine")) == RunStatus.COMPLETED
    run.refresh_from_db()
    assert (run.status, run.output, run.lease_until) == (RunStatus.COMPLETED, "mine", None)


def test_the_lease_is_renewed_only_under_the_claims_epoch(tenants):
    run = start_run("noop", {}, scope="acme", dispatch=False)
    claim(run.pk, "w1")
    assert runs.extend_lease(run.pk, 1) is True
    assert runs.extend_lease(run.pk, 2) is False


# --- fencing -------------------------------------------------------------------------------

def test_a_fenced_effect_commits_with_its_event(tenants):
    run = start_run("fenced", {}, scope="acme", dispatch=False)
    assert execute_run(run.pk) == RunStatus.COMPLETED
    assert Refund.objects.filter(run_id=run.pk).count() == 1
    assert types(run) == ["turn.started", "tool.started", "tool.completed", "message.delta",
                          "turn.completed"]
    assert seqs_are_contiguous(run)


def test_a_worker_that_lost_its_lease_moves_no_money(tenants, caplog):
    run = start_run("fenced", {"lose_lease": True}, scope="acme", dispatch=False)
    assert execute_run(run.pk) == RunStatus.FAILED
    assert Refund.objects.count() == 0
    run.refresh_from_db()
    assert run.error["code"] == "lease_expired"
    # The reaper wrote the end; the worker wrote nothing after it, and said why.
    assert types(run) == ["turn.started", "tool.started", "turn.failed"]
    assert seqs_are_contiguous(run)
    assert "LeaseLost" in caplog.text


def test_a_fenced_block_that_raises_commits_neither_effect_nor_event(tenants):
    run = start_run("fenced", {"fail_inside": True}, scope="acme", dispatch=False)
    assert execute_run(run.pk) == RunStatus.FAILED
    assert Refund.objects.count() == 0
    assert types(run) == ["turn.started", "tool.started", "turn.failed"]
    assert seqs_are_contiguous(run)


def test_fenced_outside_a_turn_is_a_configuration_error(tenants):
    from symfonic_django import fenced
    from symfonic_django.exceptions import InteractionConfigurationError

    with pytest.raises(InteractionConfigurationError), fenced():
        pass


# --- retry -------------------------------------------------------------------------------------

def lease_expired_run() -> Run:
    run = start_run("fenced", {"lose_lease": True}, scope="acme", dispatch=False)
    assert execute_run(run.pk) == RunStatus.FAILED
    return Run.objects.get(pk=run.pk)


def test_a_retried_lease_expired_run_completes_exactly_once(tenants):
    run = lease_expired_run()
    operator = User.objects.create(username="ops", is_staff=True)
    Run.objects.filter(pk=run.pk).update(input={})  # the operator fixed what froze it
    retried = retry(run.pk, actor=operator, comment="worker host replaced")
    assert (retried.status, retried.attempts, retried.error) == (RunStatus.QUEUED, 2, None)
    audit = RunRetry.objects.get(run=run)
    assert (audit.actor, audit.attempt, audit.comment) == (operator, 2, "worker host replaced")
    assert audit.previous_error["code"] == "lease_expired"

    assert execute_run(run.pk) == RunStatus.COMPLETED
    assert execute_run(run.pk) == "skipped"  # a redelivery changes nothing
    assert Refund.objects.filter(run_id=run.pk).count() == 1
    run.refresh_from_db()
    assert (run.status, run.epoch, run.attempts) == (RunStatus.COMPLETED, 2, 2)
    assert types(run) == ["turn.started", "tool.started", "turn.failed",
                          "turn.started", "tool.started", "tool.completed", "message.delta",
                          "turn.completed"]
    assert seqs_are_contiguous(run)


@pytest.mark.parametrize("state", ["queued", "running", "completed", "paused"])
def test_only_a_failed_run_can_be_retried_and_a_refusal_changes_nothing(tenants, state):
    if state == "paused":
        run, _ = paused_run()
    else:
        run = start_run("noop", {}, scope="acme", dispatch=False)
        if state == "running":
            claim(run.pk, "w1")
        elif state == "completed":
            execute_run(run.pk)
    before = Run.objects.filter(pk=run.pk).values().get()
    with pytest.raises(RunNotRetryable) as refused:
        retry(run.pk)
    assert refused.value.code == "not_retryable" and refused.value.status == 409
    assert Run.objects.filter(pk=run.pk).values().get() == before
    assert not RunRetry.objects.exists()


def test_a_pause_that_died_fails_its_run_and_the_run_can_be_retried(tenants):
    run, pause = paused_run()
    pauses.cancel(pause.pk)
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and run.error["code"] == "pause_cancelled"
    assert retry(run.pk).status == RunStatus.QUEUED


def test_a_retried_turn_that_gets_its_own_pause_back_ends_paused_on_it(tenants):
    run = start_run("asks_then_fails_once", {}, scope="acme", dispatch=False)
    assert execute_run(run.pk) == RunStatus.FAILED
    (pause,) = run.pauses.all()
    assert pause.status == "pending"
    retry(run.pk)
    # The step runs again and request_pause returns the same pause: the turn waits on it.
    assert execute_run(run.pk) == RunStatus.PAUSED
    assert run.pauses.count() == 1
    assert TurnEvent.objects.filter(run=run, type="turn.paused").get().data == {
        "pause_ids": [str(pause.pk)]}
    pauses.approve(pause.pk)
    (continuation,) = Run.objects.filter(parent=run)
    assert execute_run(continuation.pk) == RunStatus.COMPLETED
    assert seqs_are_contiguous(run)


# --- lost messages -------------------------------------------------------------------------------

def sent_task_names() -> list[str]:
    """The names of the tasks waiting on the (in-memory) broker, consumed."""
    from celery import current_app

    names = []
    with current_app.connection_for_read() as connection:
        queue = connection.SimpleQueue("celery")
        try:
            while True:
                message = queue.get(block=True, timeout=0.2)
                names.append(message.headers["task"])
                message.ack()
        except queue.Empty:
            pass
        finally:
            queue.close()
    return names


def test_only_overdue_queued_runs_are_sent_again_with_backoff(tenants):
    sent_task_names()  # start from an empty queue
    lost = start_run("noop", {}, scope="acme", dispatch=False)
    fresh = start_run("noop", {}, scope="acme", dispatch=False)
    claimed = start_run("noop", {}, scope="acme", dispatch=False)
    claim(claimed.pk, "w1")
    now = timezone.now() + runs.RESEND_AFTER + timedelta(seconds=1)
    Run.objects.filter(pk=fresh.pk).update(resend_after=now + timedelta(seconds=5))

    assert runs.resend_overdue_runs(now=now) == 1
    assert sent_task_names() == [runs.START_TASK]
    lost.refresh_from_db()
    assert (lost.sends, lost.sent_at) == (2, now)
    assert lost.resend_after == now + 2 * runs.RESEND_AFTER  # the next wait is twice as long
    assert runs.resend_overdue_runs(now=now) == 0  # not overdue again yet
    assert sent_task_names() == []


def test_the_resend_backoff_doubles_up_to_its_cap():
    delays = [runs.resend_delay(n) for n in range(1, 12)]
    assert delays[:4] == [runs.RESEND_AFTER * k for k in (1, 2, 4, 8)]
    assert max(delays) == runs.RESEND_MAX == delays[-1]
