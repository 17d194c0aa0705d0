"""The search text of existing pauses, and the indexes that keep the admin bounded.

Non-atomic, because PostgreSQL builds an index ``CONCURRENTLY`` only outside a
transaction: the pause, run and event tables are large by now, and a plain
``CREATE INDEX`` would stop every write to them (no turn could store an event,
no reviewer answer) until it was built. The backfill commits a batch at a time
for the same reason.
"""

from django.contrib.postgres.indexes import GinIndex
from django.db import migrations, models, transaction

from symfonic_django.hitl import search_text
from symfonic_django.operations import (
    AddIndexConcurrently,
    AddPostgresIndexConcurrently,
    CreateExtension,
)

BATCH = 1000


def fill_search_text(apps, schema_editor):
    Pause = apps.get_model("symfonic_django", "Pause")
    last = None
    while True:
        page = Pause.objects.order_by("pk")
        if last is not None:
            page = page.filter(pk__gt=last)
        rows = list(page.only("pk", "kind", "prompt", "session_id", "thread_id")[:BATCH])
        if not rows:
            return
        for pause in rows:
            pause.search_text = search_text(pause.kind, pause.prompt, pause.session_id,
                                            pause.thread_id)
        with transaction.atomic():
            Pause.objects.bulk_update(rows, ["search_text"])
        last = rows[-1].pk


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("symfonic_django", "0007_pause_search_text"),
    ]

    operations = [
        migrations.RunPython(fill_search_text, migrations.RunPython.noop, elidable=True),
        # The admin's pause search matches ``search_text LIKE '%term%'`` (both case-folded):
        # a trigram index answers that from the index, where a LIKE with a leading % would
        # otherwise read every row.
        CreateExtension("pg_trgm"),
        AddPostgresIndexConcurrently(
            "pause",
            GinIndex(fields=["search_text"], opclasses=["gin_trgm_ops"],
                     name="symfonic_pause_search_idx"),
        ),
        # The run list, newest first, unfiltered.
        AddIndexConcurrently(
            model_name="run",
            index=models.Index(fields=["-created_at"], name="symfonic_run_recent_idx"),
        ),
    ]
