"""A finer sample of the pause search text for PostgreSQL's planner.

A search (``search_text LIKE '%term%'``) is estimated from the column's
statistics. At PostgreSQL's default sample (100 values) a term that matches
0.1% of a million pauses was estimated at 1%, so the planner walked the
newest-first index and tested each row against the term: 114,000 rows and
0.4-4 s for a page, where the trigram index reads the 1,100 matching rows in
about 10 ms. With 1,000 values the estimate was within 10% and the planner read
the trigram index (``bench/bench_scale.py``, issue 11). The next ``ANALYZE``
(autovacuum runs it) takes the new sample. Other databases have no such setting.
"""

from django.db import migrations

TABLE = "symfonic_django_pause"
STATISTICS = 1000


def set_statistics(target):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        schema_editor.execute(
            f"ALTER TABLE {schema_editor.quote_name(TABLE)} "
            f"ALTER COLUMN {schema_editor.quote_name('search_text')} SET STATISTICS {target}")

    return run


class Migration(migrations.Migration):

    dependencies = [
        ("symfonic_django", "0013_tool_results"),
    ]

    operations = [
        # -1 is PostgreSQL's "the server's default_statistics_target".
        migrations.RunPython(set_statistics(STATISTICS), set_statistics(-1), elidable=False),
    ]
