"""The search text of a pause moves to a row of its own, ``PauseSearch``, written once.

As a column of the pause, its trigram index was written again at every step a
pause takes: PostgreSQL stores an updated row as a new version with new
entries in every index of the table, and a pause's trigram entries are a
hundred or so. At a million pauses that was about 0.2 ms of every answer,
claim, reminder and expiry, the largest part of the expiry sweep
(``bench/bench_scale.py``, issue 11). ``PauseSearch`` rows are never updated.

Non-atomic: the copy commits a batch at a time and the index is built
``CONCURRENTLY`` on PostgreSQL. It drops the pause's ``search_text`` column,
which the previous version writes when it asks for a pause: stop the previous
version's servers and workers before running it (README, "Upgrading").
"""

import django.db.models.deletion
from django.contrib.postgres.indexes import GinIndex
from django.db import migrations, models, transaction

from symfonic_django.operations import (
    AddPostgresIndexConcurrently,
    RemovePostgresIndexConcurrently,
)

BATCH = 2000
#: As 0014 set for the column it replaces: a term matching 0.1% of a million pauses
#: was estimated at 1% from PostgreSQL's default sample, and the planner then walked
#: the newest-first index instead of reading the trigram index.
STATISTICS = 1000


def batches(queryset, field):
    """``(pk, field)`` of every row of ``queryset``, a batch at a time by primary key."""
    last = None
    while True:
        page = queryset.order_by("pk")
        if last is not None:
            page = page.filter(pk__gt=last)
        rows = list(page.values_list("pk", field)[:BATCH])
        if not rows:
            return
        yield rows
        last = rows[-1][0]


def copy_to_search(apps, schema_editor):
    Pause = apps.get_model("symfonic_django", "Pause")
    PauseSearch = apps.get_model("symfonic_django", "PauseSearch")
    for rows in batches(Pause.objects.all(), "search_text"):
        with transaction.atomic():
            PauseSearch.objects.bulk_create(
                [PauseSearch(pause_id=pk, text=text) for pk, text in rows],
                ignore_conflicts=True)


def copy_from_search(apps, schema_editor):
    Pause = apps.get_model("symfonic_django", "Pause")
    PauseSearch = apps.get_model("symfonic_django", "PauseSearch")
    for rows in batches(PauseSearch.objects.all(), "text"):
        with transaction.atomic():
            Pause.objects.bulk_update([Pause(pk=pk, search_text=text) for pk, text in rows],
                                      ["search_text"])


def set_statistics(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    PauseSearch = apps.get_model("symfonic_django", "PauseSearch")
    quote = schema_editor.quote_name
    schema_editor.execute(f"ALTER TABLE {quote(PauseSearch._meta.db_table)} "
                          f"ALTER COLUMN {quote('text')} SET STATISTICS {STATISTICS}")


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("symfonic_django", "0020_claimed_by_me_index"),
    ]

    operations = [
        migrations.CreateModel(
            name="PauseSearch",
            fields=[
                ("pause", models.OneToOneField(
                    on_delete=django.db.models.deletion.CASCADE, primary_key=True,
                    related_name="search", serialize=False, to="symfonic_django.pause")),
                ("text", models.TextField(editable=False)),
            ],
        ),
        migrations.RunPython(copy_to_search, copy_from_search, elidable=True),
        migrations.RunPython(set_statistics, migrations.RunPython.noop, elidable=False),
        # The admin's pause search matches ``text LIKE '%term%'`` (both case-folded).
        AddPostgresIndexConcurrently(
            "pausesearch",
            GinIndex(fields=["text"], opclasses=["gin_trgm_ops"],
                     name="symfonic_search_text_idx"),
        ),
        RemovePostgresIndexConcurrently(
            "pause",
            GinIndex(fields=["search_text"], opclasses=["gin_trgm_ops"],
                     name="symfonic_pause_search_idx"),
        ),
        migrations.RemoveField(model_name="pause", name="search_text"),
    ]
