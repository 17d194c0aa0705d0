"""Each event carries its run's scope, so a reviewer's event list reads one index range.

Before, a reviewer's list walked every tenant's events newest first and looked
up each one's run: for a tenant with 0.5% of a million pauses' 5M events, 86 ms
for the first page and about a second to count it (``bench/bench_scale.py``).

Non-atomic: the copy is made a batch of ids at a time, each batch in its own
transaction, and the indexes are built ``CONCURRENTLY`` on PostgreSQL, so turns
keep storing events while it migrates. Events stored by code that still runs
the old version during the copy keep an empty scope only if they are newer
than the copy's last batch: the copy reads the highest id when it starts, so
run this migration before starting the new workers (``README``, "Upgrading").
"""

from django.db import migrations, models, transaction
from django.db.models import Max, OuterRef, Subquery

from symfonic_django.operations import AddIndexConcurrently

BATCH = 10_000


def copy_scope(apps, schema_editor):
    TurnEvent = apps.get_model("symfonic_django", "TurnEvent")
    Run = apps.get_model("symfonic_django", "Run")
    scope = Subquery(Run.objects.filter(pk=OuterRef("run_id")).values("scope_key")[:1])
    last = TurnEvent.objects.aggregate(last=Max("pk"))["last"] or 0
    for start in range(0, last + 1, BATCH):
        with transaction.atomic():
            TurnEvent.objects.filter(pk__gte=start, pk__lt=start + BATCH).update(scope_key=scope)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("symfonic_django", "0014_search_text_statistics"),
    ]

    operations = [
        migrations.AddField(
            model_name="turnevent",
            name="scope_key",
            field=models.CharField(default="", editable=False, max_length=200),
        ),
        migrations.RunPython(copy_scope, migrations.RunPython.noop, elidable=True),
        AddIndexConcurrently(
            model_name="turnevent",
            index=models.Index(fields=["scope_key", "-id"], name="symfonic_event_scope_idx"),
        ),
        AddIndexConcurrently(
            model_name="turnevent",
            index=models.Index(fields=["scope_key", "type", "-id"],
                               name="symfonic_event_scopetype_idx"),
        ),
    ]
