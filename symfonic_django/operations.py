"""Migration operations for indexes on tables that are large by the time they migrate.

A plain ``CREATE INDEX`` locks its table against writes until it is built: on a
year's pauses or events, minutes in which no turn can store an event and no
reviewer can answer. On PostgreSQL these build the index ``CONCURRENTLY`` with
Django's own ``AddIndexConcurrently``, so their migration must say
``atomic = False``. On other databases (SQLite, for the demo and the tests) they
are a plain ``AddIndex``.

Dropping an index is quick, but a plain ``DROP INDEX`` waits for the table's
exclusive lock behind every query running on it and holds every later query
behind it meanwhile: ``DropFieldIndexConcurrently`` drops a field's own
indexes ``CONCURRENTLY`` on PostgreSQL.

Django's PostgreSQL operations are imported only when the database is
PostgreSQL: that module needs psycopg, which a SQLite-only install has not.
"""

from __future__ import annotations

from typing import Any

from django.db.migrations import AddIndex, AlterField
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


class DropFieldIndexConcurrently(AlterField):
    """``AlterField`` to a field without ``db_index``; on PostgreSQL its own indexes are
    dropped ``CONCURRENTLY``.

    A field's own indexes are those ``AlterField`` would drop: the indexes of its
    column alone that are neither unique nor among the model's ``Meta.indexes``
    (on PostgreSQL a ``CharField`` has two, the second for ``LIKE``). Their names
    are the schema editor's own making, so they are read from the database.
    Reversed, ``AlterField`` builds them again, with a plain ``CREATE INDEX``.
    Any other change of the field is refused (``ValueError``): on PostgreSQL this
    alters no column.
    """

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any,
                          to_state: Any) -> None:
        model = from_state.apps.get_model(app_label, self.model_name)
        old = model._meta.get_field(self.name)
        *_, old_args, old_kwargs = old.deconstruct()
        *_, new_args, new_kwargs = self.field.deconstruct()
        if not old_kwargs.pop("db_index", False) or (old_args, old_kwargs) != (new_args,
                                                                              new_kwargs):
            raise ValueError(f"DropFieldIndexConcurrently drops the db_index of "
                             f"{self.model_name}.{self.name} and changes nothing else; "
                             f"use AlterField for {old_kwargs} -> {new_kwargs}.")
        if not _on_postgresql(schema_editor):
            super().database_forwards(app_label, schema_editor, from_state, to_state)
            return
        column = old.column
        declared = {index.name for index in model._meta.indexes}
        connection = schema_editor.connection
        with connection.cursor() as cursor:
            found = connection.introspection.get_constraints(cursor, model._meta.db_table)
        for name, info in sorted(found.items()):
            if (info["index"] and info["columns"] == [column] and not info["unique"]
                    and not info["primary_key"] and name not in declared):
                schema_editor.execute(
                    f"DROP INDEX CONCURRENTLY IF EXISTS {schema_editor.quote_name(name)}")

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any,
                           to_state: Any) -> None:
        # AlterField's own backwards is its forwards between the states reversed.
        super().database_forwards(app_label, schema_editor, from_state, to_state)

    def describe(self) -> str:
        return f"Drop the own indexes of {self.model_name}.{self.name}"


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


class RemovePostgresIndexConcurrently(AddPostgresIndexConcurrently):
    """Drop, ``CONCURRENTLY``, an index that ``AddPostgresIndexConcurrently`` made; built
    again when the migration is reversed. Other databases skip it."""

    def database_forwards(self, app_label: str, schema_editor: Any, from_state: Any,
                          to_state: Any) -> None:
        super().database_backwards(app_label, schema_editor, to_state, from_state)

    def database_backwards(self, app_label: str, schema_editor: Any, from_state: Any,
                           to_state: Any) -> None:
        super().database_forwards(app_label, schema_editor, to_state, from_state)

    def describe(self) -> str:
        return f"Drop index {self.index.name} on {self.model_name} (PostgreSQL only)"


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
