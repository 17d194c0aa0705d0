"""Migrations that move data: each one tested by migrating a database with old rows.

``MigrationExecutor`` migrates the test database back to the state before the
migration, rows are written through that state's historical models (what an
old version stored), and it migrates forward again, as ``manage.py migrate``
would on an upgrade.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.db import connection, models
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from symfonic_django.models import Pause, PauseSearch
from symfonic_django.operations import DropFieldIndexConcurrently

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
