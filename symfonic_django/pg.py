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
written as SQL (``checkpoint.py`` says why); there they are the one path, on
every database. ``tests/test_admin.py`` proves on PostgreSQL that each read
here returns what the portable path returns.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import connections, router
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
