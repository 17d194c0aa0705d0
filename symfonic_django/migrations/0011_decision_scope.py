"""Each decision carries its pause's scope, so a reviewer's decision list reads one index.

Non-atomic: the copy is made a batch of ids at a time, each batch in its own
transaction, and the index is built ``CONCURRENTLY`` on PostgreSQL, so the
decision table keeps taking answers while it migrates.
"""

from django.db import migrations, models, transaction
from django.db.models import Max, OuterRef, Subquery

from symfonic_django.operations import AddIndexConcurrently

BATCH = 10_000


def copy_scope(apps, schema_editor):
    Decision = apps.get_model("symfonic_django", "Decision")
    Pause = apps.get_model("symfonic_django", "Pause")
    scope = Subquery(Pause.objects.filter(pk=OuterRef("pause_id")).values("scope_key")[:1])
    last = Decision.objects.aggregate(last=Max("pk"))["last"] or 0
    for start in range(0, last + 1, BATCH):
        with transaction.atomic():
            Decision.objects.filter(pk__gte=start, pk__lt=start + BATCH).update(scope_key=scope)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("symfonic_django", "0010_list_filter_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="decision",
            name="scope_key",
            field=models.CharField(default="", editable=False, max_length=200),
        ),
        migrations.RunPython(copy_scope, migrations.RunPython.noop, elidable=True),
        AddIndexConcurrently(
            model_name="decision",
            index=models.Index(fields=["scope_key", "-id"], name="symfonic_decision_scope_idx"),
        ),
    ]
