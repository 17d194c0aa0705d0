"""PostgreSQL-only reads for the admin lists; every other database takes the ORM's path.

Two reads that the ORM can only do by reading every row, and that the admin
pause list would otherwise pay for on every page (``bench/bench_pause_list.py``
measured both at 1,000,000 pauses):

* :func:`distinct_values`: the scope filter's choices. ``SELECT DISTINCT`` reads
  the whole table (about 200 ms); hopping through the index from one value to
  the next reads one index entry per value (about 2 ms for 50 scopes).
* :func:`planner_rows`: the count a changelist shows once there are too many
  rows to count. ``COUNT(*)`` reads them all (about 80 ms); the planner's
  estimate is a plan, no scan.

Besides these, only the LangGraph checkpoint saver's per-step statements are
written as SQL (``insert``, below; the ``checkpoint`` package says why); there
they are the one path, on every database. ``tests/test_admin.py`` proves on
PostgreSQL that each read here returns what the portable path returns.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any, Literal

from django.db import DEFAULT_DB_ALIAS, connections, router, transaction
from django.db.models import Field, Model, QuerySet


def distinct_values(model: type[Model], field_name: str) -> list[Any]:
    """The distinct non-null values of ``model``'s ``field_name``, sorted, in one query.

    The same as ``values_list(field_name, flat=True).distinct()`` ordered by
    the field, without NULL; the column must lead an index, which a recursive
    query walks one value at a time (a "loose index scan"), so the cost
    follows the number of values, not of rows.
    """
    connection = connections[router.db_for_read(model)]
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    field = model._meta.get_field(field_name)
    if not isinstance(field, Field) or field.column is None:
        raise ValueError(f"{field_name!r} is not a column of {model.__name__}.")
    column = quote(field.column)
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH RECURSIVE hop(value) AS ("
            f" (SELECT {column} FROM {table} WHERE {column} IS NOT NULL"
            f"  ORDER BY {column} LIMIT 1)"
            f" UNION ALL"
            f" SELECT (SELECT {column} FROM {table} WHERE {column} > hop.value"
            f"  ORDER BY {column} LIMIT 1) FROM hop WHERE hop.value IS NOT NULL)"
            f" SELECT value FROM hop WHERE value IS NOT NULL")
        return [value for (value,) in cursor.fetchall()]


def planner_rows(queryset: QuerySet[Any]) -> int:
    """How many rows PostgreSQL's planner expects ``queryset`` to return (``EXPLAIN``).

    An estimate from the table's statistics (as of the last ``ANALYZE``,
    scaled to the table's current size), not a count: close on a large
    table, exact on a small one just analyzed.
    """
    plan = queryset.values("pk").explain(format="json")
    if not plan:  # a queryset known to be empty (``.none()``) is never sent to be planned
        return 0
    return int(json.loads(plan)[0]["Plan"]["Plan Rows"])


# --- statements written as SQL: the saver's upsert, and per-transaction settings -------------
#
# ``insert`` is the checkpoint saver's one statement per step (``checkpoint/``'s docstring
# says why it is SQL). PostgreSQL and SQLite both run it, so it is the one path on every
# database; ``tests/checkpoint/test_insert.py`` proves on PostgreSQL that it stores what
# the ORM's ``bulk_create`` (conflicts ignored, or updated) stores.
# ``set_local_timeout`` is PostgreSQL's alone; elsewhere it does nothing.


def insert(using: str, rows: Sequence[Model], *, key: Sequence[str],
           replace: Sequence[str] = ()) -> None:
    """Insert ``rows`` (of one model) with ``INSERT ... ON CONFLICT``, one statement a batch.

    A row whose ``key`` columns match a stored row's replaces that row's
    ``replace`` columns or, with none given, is dropped. A statement is atomic
    on its own, so this takes one round trip where ``bulk_create`` takes three
    (it wraps every call in a transaction: BEGIN, INSERT, COMMIT), and skips
    the ORM's query building, which costs more than the round trip here
    (``bench/bench_checkpoint.py``). PostgreSQL and SQLite (3.24+) run the same
    statement; each value is prepared by its field's ``get_db_prep_save``, as
    Django prepares it for an insert.
    """
    model = type(rows[0])
    connection = connections[using]
    quote = connection.ops.quote_name
    fields = [
        field for field in model._meta.get_fields()
        if isinstance(field, Field) and field.concrete and not field.primary_key
    ]
    values = "(" + ", ".join(["%s"] * len(fields)) + ")"
    columns = [quote(_column(model, field.name)) for field in fields]
    on_conflict = ", ".join(quote(_column(model, name)) for name in key)
    if replace:
        replaced = [quote(_column(model, name)) for name in replace]
        action = "DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in replaced)
    else:
        action = "DO NOTHING"

    def sql(count: int) -> str:
        return (
            f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(columns)})"
            f" VALUES {', '.join([values] * count)} ON CONFLICT ({on_conflict}) {action}"
        )

    # Rows go in batches within SQLite's 999 parameters a statement; more than one
    # batch is made one transaction.
    per_statement = max(1, 999 // len(fields))
    batches = [rows[i:i + per_statement] for i in range(0, len(rows), per_statement)]
    with transaction.atomic(using=using) if len(batches) > 1 else nullcontext():
        for batch in batches:
            params = [
                field.get_db_prep_save(getattr(row, field.attname), connection)
                for row in batch for field in fields
            ]
            with connection.cursor() as cursor:
                cursor.execute(sql(len(batch)), params)


def _column(model: type[Model], name: str) -> str:
    field = model._meta.get_field(name)
    assert isinstance(field, Field) and field.column is not None
    return field.column


#: The timeouts ``set_local_timeout`` sets: bounds on a transaction's waits.
Timeout = Literal["idle_in_transaction_session_timeout", "lock_timeout"]


def set_local_timeout(timeout: Timeout, milliseconds: int,
                      using: str = DEFAULT_DB_ALIAS) -> None:
    """On PostgreSQL, set ``timeout`` for the rest of the transaction (``SET LOCAL``).

    Call it inside ``transaction.atomic()``: the setting ends with the
    transaction. On every other database it does nothing.
    """
    connection = connections[using]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            # SET takes no bind parameters; the value is an integer formatted here.
            cursor.execute(f"SET LOCAL {timeout} = '{int(milliseconds)}ms'")


def lock_for_transaction(key: str, using: str = DEFAULT_DB_ALIAS) -> None:
    """On PostgreSQL, take the transaction-scoped advisory lock named by ``key`` (hashed
    with ``hashtext``): a second transaction asking for it waits until the first ends.

    For a check that nothing of a kind exists followed by the insert of one (no row to
    lock yet). Call it inside ``transaction.atomic()``. On SQLite, which runs one write
    transaction at a time, it does nothing.
    """
    connection = connections[using]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [key])
