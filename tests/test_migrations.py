"""Migrations that move data: each one tested by migrating a database with old rows.

``MigrationExecutor`` migrates the test database back to the state before the
migration, rows are written through that state's historical models (what an
old version stored), and it migrates forward again, as ``manage.py migrate``
would on an upgrade.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, models
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from symfonic_django import pauses
from symfonic_django.models import GraphCheckpoint, GraphCheckpointWrite, Pause, PauseSearch
from symfonic_django.operations import DropFieldIndexConcurrently
from symfonic_django.runs import start_run
from symfonic_django.threads import checkpoint_thread_id, quarantine_thread_id
from symfonic_django.turns import execute_run

from .langgraph.graphs import AGENTS as LANGGRAPH_AGENTS

APP = "symfonic_django"
BEFORE_SEARCH_TABLE = [(APP, "0020_claimed_by_me_index")]
SEARCH_TABLE = [(APP, "0021_pause_search")]


def migrate(targets: list[tuple[str, str]]) -> Any:
    """Migrate the test database to ``targets``; the historical apps of that state."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state(targets).apps


def old_pause(apps: Any, text: str) -> uuid.UUID:
    Run = apps.get_model(APP, "Run")
    Pause = apps.get_model(APP, "Pause")
    run = Run.objects.create(agent="refund", scope_key="acme", status="paused", input={})
    Run.objects.filter(pk=run.pk).update(root=run)
    now = timezone.now()
    return Pause.objects.create(
        run=run, root_run=run, scope_key="acme", kind="approval", prompt={},
        bound_run_id=str(run.pk), bound_root_run_id=str(run.pk), expires_at=now,
        created_at=now, search_text=text).pk


@pytest.mark.django_db(transaction=True)
def test_0021_moves_each_pauses_search_text_into_its_own_row_and_back():
    old = migrate(BEFORE_SEARCH_TABLE)
    texts = {old_pause(old, f"refund\nold{n}\nsession s-{n}"): f"refund\nold{n}\nsession s-{n}"
             for n in range(3)}
    empty = old_pause(old, "")  # a pause from before 0008 filled the text

    migrate(SEARCH_TABLE)
    moved = dict(PauseSearch.objects.values_list("pause_id", "text"))
    assert moved == {**texts, empty: ""}
    assert "search_text" not in {f.name for f in Pause._meta.get_fields()}

    back = migrate(BEFORE_SEARCH_TABLE)  # reversible: the column and its text come back
    assert dict(back.get_model(APP, "Pause").objects.values_list("pk", "search_text")) == {
        **texts, empty: ""}
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes(APP))  # as it was


BEFORE_SCOPE_AGENT = [(APP, "0023_run_scope_status_index")]
SCOPE_AGENT = [(APP, "0024_run_scope_agent_index")]


def run_indexes() -> dict[str, list[str]]:
    """The run table's indexes, by name: their columns."""
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, "symfonic_django_run")
    return {name: info["columns"] for name, info in found.items()
            if info["index"] and not info["primary_key"]}


@pytest.mark.django_db(transaction=True)
def test_0024_trades_the_scope_keys_own_indexes_for_one_by_tenant_and_agent_and_back():
    migrate(BEFORE_SCOPE_AGENT)
    before = run_indexes()
    own = sorted(name for name, columns in before.items() if columns == ["scope_key"])
    # PostgreSQL gives a CharField an index for LIKE beside the one for =.
    assert len(own) == (2 if connection.vendor == "postgresql" else 1)
    assert "symfonic_run_scopeagent_idx" not in before

    statements: list[str] = []
    with connection.execute_wrapper(
            lambda execute, sql, *rest: statements.append(sql) or execute(sql, *rest)):
        migrate(SCOPE_AGENT)
    if connection.vendor == "postgresql":  # neither takes the table's lock for long
        assert {f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"' for name in own} <= set(statements)
        assert any(s.startswith("CREATE INDEX CONCURRENTLY") for s in statements)
    after = run_indexes()
    assert after["symfonic_run_scopeagent_idx"] == ["scope_key", "agent", "created_at"]
    assert not [name for name, columns in after.items() if columns == ["scope_key"]]
    # Nothing else moved: the tenant's other indexes stay.
    assert set(after) == set(before) - set(own) | {"symfonic_run_scopeagent_idx"}

    migrate(BEFORE_SCOPE_AGENT)  # reversible: the field's own indexes are built again
    assert sorted(n for n, c in run_indexes().items() if c == ["scope_key"]) == own
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes(APP))  # as it was


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("field", [
    models.CharField(max_length=100, verbose_name="scope key"),  # another change too
    models.CharField(max_length=200, verbose_name="scope key", db_index=True),  # none
])
def test_dropping_a_fields_index_concurrently_refuses_any_other_change(field: Any) -> None:
    before = MigrationExecutor(connection).loader.project_state(BEFORE_SCOPE_AGENT)
    after = before.clone()
    operation = DropFieldIndexConcurrently(model_name="run", name="scope_key", field=field)
    operation.state_forwards(APP, after)
    indexes = run_indexes()
    with connection.schema_editor(atomic=False) as editor, \
            pytest.raises(ValueError, match="changes nothing else"):
        operation.database_forwards(APP, editor, before, after)
    assert run_indexes() == indexes


# --- 0025: the app saver's threads move to their scopes' keys -----------------------------

BEFORE_THREAD_KEYS = [(APP, "0024_run_scope_agent_index")]
THREAD_KEYS = [(APP, "0025_graph_threads_by_scope")]


def old_run(apps: Any, scope: str, thread_id: str = "", *, minutes: int,
            root: Any = None) -> str:
    """A run as the previous version stored it, ``minutes`` after the first one."""
    run = apps.get_model(APP, "Run").objects.create(
        agent="graph", scope_key=scope, status="completed", input={}, thread_id=thread_id,
        created_at=timezone.now() - timedelta(hours=1) + timedelta(minutes=minutes))
    run.root_id = root or run.pk
    run.save()
    return str(run.pk)


def old_checkpoints(apps: Any, thread_id: str, run_id: str, ids: list[str], *,
                    writes: int = 1, checkpoint_ns: str = "") -> None:
    """Checkpoints ``ids`` of a thread that ``run_id`` wrote, ``writes`` pending writes
    after the last one, stored under the caller's thread id, as the previous version did."""
    apps.get_model(APP, "GraphCheckpoint").objects.bulk_create(
        apps.get_model(APP, "GraphCheckpoint")(
            thread_id=thread_id, checkpoint_ns=checkpoint_ns, checkpoint_id=checkpoint_id,
            run_id=run_id, checkpoint_type="msgpack", checkpoint=b"{}",
            metadata={"run_id": run_id} if run_id else {})
        for checkpoint_id in ids)
    apps.get_model(APP, "GraphCheckpointWrite").objects.bulk_create(
        apps.get_model(APP, "GraphCheckpointWrite")(
            thread_id=thread_id, checkpoint_ns=checkpoint_ns, checkpoint_id=ids[-1],
            task_id="task", idx=n, channel="messages", value_type="msgpack", value=b"[]")
        for n in range(writes))


def stored_rows() -> dict[str, Any]:
    """Every checkpoint and pending write: its checkpoint's key, by the thread it is under."""
    return {"checkpoints": sorted(GraphCheckpoint.objects.values_list(
                "thread_id", "checkpoint_ns", "checkpoint_id", "run_id")),
            "writes": sorted(GraphCheckpointWrite.objects.values_list(
                "thread_id", "checkpoint_ns", "checkpoint_id", "idx"))}


@pytest.mark.django_db(transaction=True)
def test_0025_moves_each_thread_to_its_scopes_key_setting_aside_other_scopes_rows_and_back(
        caplog: pytest.LogCaptureFixture) -> None:
    old = migrate(BEFORE_THREAD_KEYS)
    # "T", the finding: acme wrote it first, then a globex run continued acme's checkpoints.
    acme_t = old_run(old, "acme", "T", minutes=0)
    globex_t = old_run(old, "globex", "T", minutes=5)
    old_checkpoints(old, "T", acme_t, ["c1", "c2"])
    old_checkpoints(old, "T", globex_t, ["c3", "c4"], writes=2)
    old_checkpoints(old, "T", "", ["c0"], writes=0)  # a checkpoint naming no run
    # A run with no thread id and its continuation, in a subgraph's namespace too.
    root = old_run(old, "acme", minutes=1)
    continuation = old_run(old, "acme", minutes=2, root=root)
    old_checkpoints(old, root, root, ["r1"])
    old_checkpoints(old, root, continuation, ["r2"], checkpoint_ns="inner:1")
    # A thread whose checkpoints name no run (written before run ids went into the
    # metadata), named by a globex run: it is globex's.
    old_run(old, "globex", "named", minutes=3)
    old_checkpoints(old, "named", "", ["n1"])
    # A graph driven outside the app on the same saver: no run names it.
    old_checkpoints(old, "outside", "", ["o1"])
    before = stored_rows()

    with caplog.at_level("INFO", logger="symfonic_django.migrations"):
        migrate(THREAD_KEYS)

    acme, globex = (lambda t: checkpoint_thread_id("acme", t)), (
        lambda t: checkpoint_thread_id("globex", t))
    aside = quarantine_thread_id("globex", "T")
    assert stored_rows() == {
        "checkpoints": sorted([
            (acme("T"), "", "c0", ""), (acme("T"), "", "c1", acme_t),
            (acme("T"), "", "c2", acme_t),
            (aside, "", "c3", globex_t), (aside, "", "c4", globex_t),
            (acme(root), "", "r1", root), (acme(root), "inner:1", "r2", continuation),
            (globex("named"), "", "n1", ""), ("outside", "", "o1", "")]),
        "writes": sorted([
            (acme("T"), "", "c2", 0), (aside, "", "c4", 0), (aside, "", "c4", 1),
            (acme(root), "", "r1", 0), (acme(root), "inner:1", "r2", 0),
            (globex("named"), "", "n1", 0), ("outside", "", "o1", 0)])}
    [warning] = [r for r in caplog.records if r.levelname == "WARNING"]
    assert "'T'" in warning.getMessage() and "2 checkpoint(s)" in warning.getMessage()
    assert "globex" not in caplog.text and "acme" not in caplog.text  # no scope key logged
    assert any("1 named by no run" in r.getMessage() for r in caplog.records)

    migrate(BEFORE_THREAD_KEYS)  # reversible: every row under the caller's thread id again
    assert stored_rows() == before
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes(APP))  # as it was


@pytest.mark.django_db(transaction=True)
def test_0025_keeps_a_paused_graph_thread_resumable_across_the_migration_and_back(
        settings: Any, tenants: Any) -> None:
    settings.SYMFONIC = {**settings.SYMFONIC, "AGENTS": {**settings.SYMFONIC["AGENTS"],
                                                         **LANGGRAPH_AGENTS}}
    run = start_run("lg_questions", {"ask": True}, scope="acme", thread_id="T",
                    dispatch=False)
    assert execute_run(run.pk) == "paused"
    [pause] = Pause.objects.filter(run=run)
    key = checkpoint_thread_id("acme", "T")
    stored = GraphCheckpoint.objects.filter(thread_id=key).count()
    assert stored

    migrate(BEFORE_THREAD_KEYS)  # the previous version's rows: under "T"
    assert GraphCheckpoint.objects.filter(thread_id="T").count() == stored
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes(APP))
    assert GraphCheckpoint.objects.filter(thread_id=key).count() == stored

    # The pause resumes its thread where it stopped: the graph asks its second question.
    continuation = pauses.answer_pause(pause.pk, "A-1").continuation
    assert execute_run(continuation.pk) == "paused"
    assert Pause.objects.get(run=continuation).prompt == {"question": "How much?"}
