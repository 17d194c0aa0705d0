"""Review claims and reminders: who is reviewing a pause until when, and when its reminder
and its escalation went out; the audit's four new actions (claim, release, remind,
escalate: choices only, no database change).

Every column is nullable without a default, which PostgreSQL adds instantly, without
rewriting or scanning the table. The foreign key's check then reads the pause table
once (every ``claimed_by`` is still NULL), blocking writes to pauses for that scan.
No index is added: ``symfonic_pause_due_idx`` (pending pauses by expiry) serves the
reminder sweep, and nothing lists pauses by claimant.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('symfonic_django', '0018_decision_scope_filter_indexes'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='pause',
            name='claimed_by',
            field=models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='pause',
            name='claimed_until',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='pause',
            name='escalated_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='pause',
            name='reminded_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name='decision',
            name='action',
            field=models.CharField(choices=[('answer', 'Answered'), ('approve', 'Approved'), ('edit', 'Edited and approved'), ('reject', 'Rejected'), ('respond', 'Responded'), ('expire', 'Expired'), ('cancel', 'Cancelled'), ('claim', 'Claimed'), ('release', 'Released'), ('remind', 'Reminded'), ('escalate', 'Escalated')], max_length=16),
        ),
    ]
