"""Migration operations for indexes on tables that are large by the time they migrate.

A plain ``CREATE INDEX`` locks its table against writes until it is built: on a
year's pauses or events, minutes in which no turn can store an event and no
reviewer can answer. On PostgreSQL these build the index ``CONCURRENTLY`` with
Django's own ``AddIndexConcurrently``, so their migration must say
``atomic = False``. On other databases (SQLite, for the demo and the tests) they
are a plain ``AddIndex``.

Django's PostgreSQL operations are imported only when the database is
PostgreSQL: that module needs psycopg, which a SQLite-only install has not.
"""

from __future__ import annotations

from typing import Any

from django.db.migrations import AddIndex
from django.db.migrations.operations.base import Operation
from django.db.models import Index


def _on_postgresql(schema_editor: Any) -> bool:
    return bool(schema_editor.connection.vendor == "postgresql")


def _built_concurrently(model_name: str, index: Index) -> AddIndex:
    """Django's own ``AddIndexConcurrently`` (imported here: its module needs psycopg)."""
    from django.contrib.postgres.operations import AddIndexConcurrently as Concurrently

    return Concurrently(model_name, index)


class AddIndexConcurrently(AddIndex):
    """``AddIndex``, built ``CONCURRENTLY`` on PostgreSQL (the migration is non-atomic)."""

    def _for(self, schema_editor: Any) -> AddIndex:
        """The operation that does the work on this database."""
        if _on_postgresql(schema_editor):
            return _built_concurrently(self.model_name, self.index)
        return AddIndex(self.model_name, self.index)

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any,
                          to_state: Any) -> None:
        self._for(schema_editor).database_forwards(app_label, schema_editor, from_state,
                                                   to_state)

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any,
                           to_state: Any) -> None:
        self._for(schema_editor).database_backwards(app_label, schema_editor, from_state,
                                                    to_state)


class AddPostgresIndexConcurrently(Operation):
    """An index only PostgreSQL has (a trigram GIN index), built ``CONCURRENTLY``.

    It is not part of the model's state: SQLite rebuilds a table from that
    state whenever a later migration alters it, and would then try to create
    an index it cannot. Other databases skip it.
    """

    reversible = True
    atomic = False

    def __init__(self, model_name: str, index: Index) -> None:
        self.model_name = model_name
        self.index = index

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        return self.__class__.__qualname__, [], {"model_name": self.model_name,
                                                 "index": self.index}

    def state_forwards(self, app_label: str, state: Any) -> None:
        pass

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any,
                          to_state: Any) -> None:
        if _on_postgresql(schema_editor):
            _built_concurrently(self.model_name, self.index).database_forwards(
                app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any,
                           to_state: Any) -> None:
        if _on_postgresql(schema_editor):
            _built_concurrently(self.model_name, self.index).database_backwards(
                app_label, schema_editor, from_state, to_state)

    def describe(self) -> str:
        return f"Create index {self.index.name} on {self.model_name} (PostgreSQL only)"


class CreateExtension(Operation):
    """Django's ``CreateExtension`` on PostgreSQL (``pg_trgm`` for the search indexes)."""

    reversible = True

    def __init__(self, name: str) -> None:
        self.name = name

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        return self.__class__.__qualname__, [], {"name": self.name}

    def state_forwards(self, app_label: str, state: Any) -> None:
        pass

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any,
                          to_state: Any) -> None:
        if _on_postgresql(schema_editor):
            from django.contrib.postgres.operations import CreateExtension as Create

            Create(self.name).database_forwards(app_label, schema_editor, from_state, to_state)

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any,
                           to_state: Any) -> None:
        pass  # other apps' indexes may use the extension: leave it installed

    def describe(self) -> str:
        return f"Create the PostgreSQL extension {self.name}"
