"""Several approvers (docs/design.md section 3): how many a pause needs, and who started a run.

Both columns are added with a constant default or NULL, which PostgreSQL 11+ does
without rewriting the table; the foreign key's check reads the run table once,
where every ``started_by`` is still NULL.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('symfonic_django', '0016_notifications'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='pause',
            name='approvals_needed',
            field=models.PositiveSmallIntegerField(default=1),
        ),
        migrations.AddField(
            model_name='run',
            name='started_by',
            field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
    ]
