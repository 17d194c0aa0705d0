"""The app's migrations: forward and back on the test database, and nothing left out.

``MigrationExecutor`` takes the test database back to before the app
(``migrate symfonic_django zero``) and forward again, as ``manage.py migrate``
would; each test leaves every app migrated as it found it. Run the file with
and without ``DATABASE_URL``: it holds on SQLite and on PostgreSQL, and the
tests marked ``postgres`` check what only PostgreSQL builds.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from symfonic_django.models import (
    Decision,
    GraphCheckpoint,
    NotificationDelivery,
    Pause,
    PauseSearch,
    Run,
    TurnEvent,
)

APP = "symfonic_django"
INITIAL = [(APP, "0001_initial")]
#: The framework agents' stored state and the tool calls' argument digests.
LATEST = [(APP, "0002_agent_state")]
ZERO = [(APP, None)]


def migrate(targets: list[tuple[str, str | None]]) -> list[str]:
    """Migrate the test database to ``targets``; the SQL it sent, in order."""
    statements: list[str] = []
    with connection.execute_wrapper(
            lambda execute, sql, *rest: statements.append(sql) or execute(sql, *rest)):
        MigrationExecutor(connection).migrate(targets)
    return statements


@pytest.fixture
def restored() -> Iterator[None]:
    """Every app migrated again afterwards, whatever the test left behind."""
    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def app_tables() -> set[str]:
    prefix = f"{APP}_"
    return {t for t in connection.introspection.table_names() if t.startswith(prefix)}


def model_tables() -> set[str]:
    return {model._meta.db_table for model in apps.get_app_config(APP).get_models()}


def declared(model: Any) -> set[str]:
    """The names of the indexes and constraints ``model``'s Meta declares."""
    return {item.name for item in [*model._meta.indexes, *model._meta.constraints]}


def found(model: Any) -> set[str]:
    with connection.cursor() as cursor:
        return set(connection.introspection.get_constraints(cursor, model._meta.db_table))


def some_rows() -> dict[str, int]:
    """A run, its pause with its search row and decision, an event, a delivery, a checkpoint."""
    run = Run.objects.create(agent="refund", scope_key="acme", status="paused", input={})
    Run.objects.filter(pk=run.pk).update(root=run)
    pause = Pause.objects.create(
        run=run, root_run=run, scope_key="acme", kind="approval", prompt={},
        bound_run_id=str(run.pk), bound_root_run_id=str(run.pk), expires_at=timezone.now())
    PauseSearch.objects.create(pause=pause, text="refund a-1")
    Decision.objects.create(pause=pause, action="approve", via="api", scope_key="acme")
    TurnEvent.objects.create(run=run, seq=1, type="run.paused", scope_key="acme")
    NotificationDelivery.objects.create(
        channel="email", target="ops@example.com", event_type="pause.requested", payload={},
        scope_key="acme", run=run, pause=pause, max_attempts=3)
    GraphCheckpoint.objects.create(thread_id="T", checkpoint_id="c1", checkpoint_type="json",
                                   checkpoint=b"{}")
    return counts()


def counts() -> dict[str, int]:
    return {model.__name__: model.objects.count()
            for model in (Run, Pause, PauseSearch, Decision, TurnEvent, NotificationDelivery,
                          GraphCheckpoint)}


@pytest.mark.django_db(transaction=True)
def test_the_migration_goes_back_to_nothing_and_forward_again(restored: None) -> None:
    stored = some_rows()
    assert set(stored.values()) == {1}

    # Already there: nothing to do (no statement but reads), every row stays.
    assert not [s for s in migrate(LATEST) if not s.lstrip().upper().startswith("SELECT")]
    assert counts() == stored

    migrate(INITIAL)  # 0002 goes back alone, the rows of 0001's tables stay
    assert counts() == stored and "symfonic_django_agentstate" not in app_tables()

    migrate(ZERO)  # reversible: the app's tables go, with their rows
    assert app_tables() == set()

    migrate(LATEST)  # and come back, empty, taking rows as before
    assert app_tables() == model_tables()
    assert set(counts().values()) == {0}
    assert set(some_rows().values()) == {1}


@pytest.mark.django_db(transaction=True)
def test_the_migration_builds_every_index_and_constraint_the_models_declare(
        restored: None) -> None:
    migrate(ZERO)
    migrate(LATEST)
    for model in apps.get_app_config(APP).get_models():
        assert declared(model) <= found(model), model.__name__


@pytest.mark.django_db
def test_the_models_and_the_migration_agree() -> None:
    call_command("makemigrations", APP, "--check", "--dry-run", verbosity=0)  # exits 1 if not


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_on_postgresql_the_list_indexes_are_built_concurrently_and_the_search_has_trigrams(
        restored: None) -> None:
    migrate(ZERO)
    with connection.cursor() as cursor:  # the extension stays installed for other apps
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")
        assert cursor.fetchone()

    statements = migrate(INITIAL)  # non-atomic: CONCURRENTLY refuses a transaction
    concurrently = {s.split('"')[1] for s in statements
                    if s.startswith("CREATE INDEX CONCURRENTLY")}
    assert concurrently == {
        "symfonic_pause_scopekind_idx", "symfonic_pause_claimed_idx", "symfonic_run_recent_idx",
        "symfonic_run_status_idx", "symfonic_run_session_idx", "symfonic_run_thread_idx",
        "symfonic_run_agent_idx", "symfonic_run_scopestatus_idx", "symfonic_run_scopeagent_idx",
        "symfonic_decision_action_idx", "symfonic_decision_via_idx",
        "symfonic_decision_scope_idx", "symfonic_decision_scopeact_idx",
        "symfonic_decision_scopevia_idx", "symfonic_event_type_idx", "symfonic_event_scope_idx",
        "symfonic_event_scopetype_idx", "symfonic_search_text_idx"}
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s",
                       ["symfonic_search_text_idx"])
        [(definition,)] = cursor.fetchall()
        cursor.execute("SELECT attstattarget FROM pg_attribute "
                       "WHERE attrelid = %s::regclass AND attname = 'text'",
                       [PauseSearch._meta.db_table])
        [(statistics,)] = cursor.fetchall()
    assert "USING gin (text gin_trgm_ops)" in definition
    assert statistics == 1000
    # The run's scope key has no index of its own: the indexes it leads serve every lookup.
    run_indexes = {name: info["columns"] for name, info in
                   connection.introspection.get_constraints(
                       connection.cursor(), Run._meta.db_table).items() if info["index"]}
    assert ["scope_key"] not in run_indexes.values()
