"""The app's tables, as of its first release.

Earlier checkouts had 25 migrations; they were squashed into this one before the
first release (README, "Upgrading from an earlier checkout"). A table's columns
are in the order those left them, so a database migrated by either holds the
same tables; the pause's last columns are added once the run table, which they
refer to, exists.

On PostgreSQL the list and filter indexes after the tables are built
``CONCURRENTLY`` (``symfonic_django.operations``), and the pause search has a
trigram index (``pg_trgm``), which is not in the model state; so the migration
is non-atomic: run it alone, not inside a transaction of your own.
"""

import uuid

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.db import migrations, models

from symfonic_django.operations import (
    AddIndexConcurrently,
    AddPostgresIndexConcurrently,
    CreateExtension,
)

#: The search text's statistics sample for PostgreSQL's planner: at the default (100
#: values) a term matching 0.1% of a million pauses was estimated at 1%, and the
#: planner walked the newest-first index testing each row instead of reading the
#: trigram index (``docs/decisions.md``). The next ``ANALYZE`` takes it.
STATISTICS = 1000


def set_statistics(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    PauseSearch = apps.get_model("symfonic_django", "PauseSearch")
    quote = schema_editor.quote_name
    schema_editor.execute(f"ALTER TABLE {quote(PauseSearch._meta.db_table)} "
                          f"ALTER COLUMN {quote('text')} SET STATISTICS {STATISTICS}")


class Migration(migrations.Migration):

    initial = True
    atomic = False

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='Pause',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('scope_key', models.CharField(max_length=200, verbose_name='scope key')),
                ('kind', models.CharField(choices=[('approval', 'Approval'), ('question', 'Question')], max_length=16, verbose_name='kind')),
                ('prompt', models.JSONField()),
                ('action_digest', models.CharField(blank=True, default='', max_length=64)),
                ('answer_schema', models.JSONField(blank=True, null=True)),
                ('pin_hash', models.CharField(blank=True, default='', max_length=64)),
                ('session_id', models.CharField(blank=True, default='', max_length=200)),
                ('thread_id', models.CharField(blank=True, default='', max_length=200)),
                ('checkpoint_id', models.CharField(blank=True, max_length=200, null=True)),
                ('idempotency_key', models.CharField(blank=True, default='', max_length=200)),
                ('bound_run_id', models.CharField(max_length=64)),
                ('bound_root_run_id', models.CharField(max_length=64)),
                ('status', models.CharField(choices=[('pending', 'Pending'), ('answered', 'Answered'), ('expired', 'Expired'), ('cancelled', 'Cancelled')], default='pending', max_length=16, verbose_name='status')),
                ('expires_at', models.DateTimeField()),
                ('answer', models.JSONField(blank=True, null=True)),
                ('answered_via', models.CharField(blank=True, choices=[('admin', 'Admin'), ('api', 'API'), ('token', 'Token'), ('python', 'Python'), ('system', 'System')], max_length=16)),
                ('answered_at', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('answered_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['-created_at'],
                'permissions': [('answer_pause', 'Can answer (approve, reject, respond to) pauses')],
                'verbose_name': 'pause',
                'verbose_name_plural': 'pauses',
                'indexes': [models.Index(fields=['scope_key', 'status', '-created_at'], name='symfonic_pause_scope_idx'), models.Index(condition=models.Q(('status', 'pending')), fields=['expires_at'], name='symfonic_pause_due_idx'), models.Index(fields=['status', '-created_at'], name='symfonic_pause_status_idx'), models.Index(fields=['-created_at'], name='symfonic_pause_recent_idx'), models.Index(fields=['scope_key', '-created_at'], name='symfonic_pause_scoperec_idx')],
                'constraints': [models.CheckConstraint(condition=models.Q(('status__in', ['pending', 'answered', 'expired', 'cancelled'])), name='symfonic_pause_status_valid')],
            },
        ),
        migrations.CreateModel(
            name='Run',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('agent', models.CharField(max_length=100, verbose_name='agent')),
                ('scope_key', models.CharField(max_length=200, verbose_name='scope key')),
                ('session_id', models.CharField(blank=True, default='', max_length=200, verbose_name='session id')),
                ('thread_id', models.CharField(blank=True, default='', max_length=200, verbose_name='thread id')),
                ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('paused', 'Paused'), ('completed', 'Completed'), ('failed', 'Failed')], default='queued', max_length=16, verbose_name='status')),
                ('input', models.JSONField(blank=True, default=dict)),
                ('output', models.JSONField(blank=True, null=True)),
                ('error', models.JSONField(blank=True, null=True)),
                ('attempts', models.PositiveIntegerField(default=1, verbose_name='attempts')),
                ('worker', models.CharField(blank=True, default='', max_length=200, verbose_name='worker')),
                ('lease_until', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('parent', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='children', to='symfonic_django.run')),
                ('resumed_from', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='symfonic_django.pause')),
                ('root', models.ForeignKey(null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='symfonic_django.run')),
                ('epoch', models.PositiveIntegerField(default=0, verbose_name='epoch')),
                ('resend_after', models.DateTimeField(blank=True, null=True)),
                ('sends', models.PositiveIntegerField(default=0)),
                ('sent_at', models.DateTimeField(blank=True, null=True)),
                ('started_by', models.ForeignKey(blank=True, db_index=False, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['-created_at'],
                'permissions': [('retry_run', 'Can retry failed runs'), ('start_run', 'Can start agent runs')],
                'verbose_name': 'run',
                'verbose_name_plural': 'runs',
                'indexes': [models.Index(condition=models.Q(('status', 'running')), fields=['lease_until'], name='symfonic_run_lease_idx'), models.Index(fields=['scope_key', '-created_at'], name='symfonic_run_scope_idx'), models.Index(condition=models.Q(('status', 'queued')), fields=['resend_after'], name='symfonic_run_resend_idx'), models.Index(condition=models.Q(('status__in', ['completed', 'failed'])), fields=['finished_at'], name='symfonic_run_finished_idx')],
                'constraints': [models.CheckConstraint(condition=models.Q(('status__in', ['queued', 'running', 'paused', 'completed', 'failed'])), name='symfonic_run_status_valid')],
            },
        ),
        migrations.AddField(
            model_name='pause',
            name='continuation',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='resumed_pauses', to='symfonic_django.run'),
        ),
        migrations.AddField(
            model_name='pause',
            name='root_run',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='symfonic_django.run'),
        ),
        migrations.AddField(
            model_name='pause',
            name='run',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='pauses', to='symfonic_django.run'),
        ),
        migrations.AddField(
            model_name='pause',
            name='approvals_needed',
            field=models.PositiveSmallIntegerField(default=1),
        ),
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
        migrations.AddConstraint(
            model_name='pause',
            constraint=models.UniqueConstraint(condition=models.Q(('idempotency_key', ''), _negated=True), fields=('root_run', 'idempotency_key'), name='symfonic_pause_idempotency_per_root'),
        ),
        migrations.CreateModel(
            name='Decision',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('actor_label', models.CharField(blank=True, default='', max_length=200)),
                ('via', models.CharField(choices=[('admin', 'Admin'), ('api', 'API'), ('token', 'Token'), ('python', 'Python'), ('system', 'System')], max_length=16, verbose_name='via')),
                ('action', models.CharField(choices=[('answer', 'Answered'), ('approve', 'Approved'), ('edit', 'Edited and approved'), ('reject', 'Rejected'), ('respond', 'Responded'), ('expire', 'Expired'), ('cancel', 'Cancelled'), ('claim', 'Claimed'), ('release', 'Released'), ('remind', 'Reminded'), ('escalate', 'Escalated')], max_length=16, verbose_name='action')),
                ('answer', models.JSONField(blank=True, null=True)),
                ('comment', models.TextField(blank=True, default='', verbose_name='comment')),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('actor', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('pause', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='decisions', to='symfonic_django.pause')),
                ('scope_key', models.CharField(default='', editable=False, max_length=200)),
            ],
            options={
                'ordering': ['created_at'],
                'verbose_name': 'decision',
                'verbose_name_plural': 'decisions',
            },
        ),
        migrations.CreateModel(
            name='IdempotentResponse',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('caller', models.CharField(max_length=100)),
                ('key', models.CharField(max_length=200)),
                ('status', models.PositiveSmallIntegerField(blank=True, null=True)),
                ('body', models.JSONField(blank=True, null=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('fingerprint', models.CharField(blank=True, default='', max_length=64)),
            ],
            options={
                'indexes': [models.Index(fields=['created_at'], name='symfonic_idem_created_idx')],
                'constraints': [models.UniqueConstraint(fields=('caller', 'key'), name='symfonic_idempotency_key')],
            },
        ),
        migrations.CreateModel(
            name='TurnEvent',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('seq', models.PositiveIntegerField(verbose_name='seq')),
                ('type', models.CharField(max_length=40, verbose_name='type')),
                ('data', models.JSONField(default=dict)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('run', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='events', to='symfonic_django.run')),
                ('scope_key', models.CharField(default='', editable=False, max_length=200)),
            ],
            options={
                'ordering': ['run', 'seq'],
                'verbose_name': 'turn event',
                'verbose_name_plural': 'turn events',
                'constraints': [models.UniqueConstraint(fields=('run', 'seq'), name='symfonic_event_run_seq')],
            },
        ),
        migrations.CreateModel(
            name='RunRetry',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('actor_label', models.CharField(blank=True, default='', max_length=200)),
                ('via', models.CharField(choices=[('admin', 'Admin'), ('api', 'API'), ('token', 'Token'), ('python', 'Python'), ('system', 'System')], max_length=16, verbose_name='via')),
                ('attempt', models.PositiveIntegerField()),
                ('previous_error', models.JSONField(blank=True, null=True)),
                ('comment', models.TextField(blank=True, default='', verbose_name='comment')),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('actor', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='retries', to='symfonic_django.run')),
            ],
            options={
                'ordering': ['created_at'],
            },
        ),
        migrations.CreateModel(
            name='GraphCheckpoint',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('thread_id', models.TextField()),
                ('checkpoint_ns', models.TextField(blank=True, default='')),
                ('checkpoint_id', models.TextField()),
                ('parent_checkpoint_id', models.TextField(blank=True, default='')),
                ('run_id', models.TextField(blank=True, default='')),
                ('checkpoint_type', models.TextField()),
                ('checkpoint', models.BinaryField()),
                ('metadata', models.JSONField(blank=True, default=dict)),
            ],
            options={
                'indexes': [models.Index(fields=['run_id'], name='symfonic_graph_ckpt_run_idx')],
                'constraints': [models.UniqueConstraint(fields=('thread_id', 'checkpoint_ns', 'checkpoint_id'), name='symfonic_graph_checkpoint_key')],
            },
        ),
        migrations.CreateModel(
            name='GraphCheckpointWrite',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('thread_id', models.TextField()),
                ('checkpoint_ns', models.TextField(blank=True, default='')),
                ('checkpoint_id', models.TextField()),
                ('task_id', models.TextField()),
                ('task_path', models.TextField(blank=True, default='')),
                ('idx', models.IntegerField()),
                ('channel', models.TextField()),
                ('value_type', models.TextField()),
                ('value', models.BinaryField()),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('thread_id', 'checkpoint_ns', 'checkpoint_id', 'task_id', 'idx'), name='symfonic_graph_write_key')],
            },
        ),
        migrations.CreateModel(
            name='ToolResult',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('tool_call_id', models.CharField(max_length=200)),
                ('name', models.CharField(max_length=200)),
                ('interrupt_ids', models.JSONField(blank=True, default=list)),
                ('result', models.JSONField(blank=True, null=True)),
                ('completed_at', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('root_run', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='symfonic_django.run')),
                ('run', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='symfonic_django.run')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('root_run', 'tool_call_id'), name='symfonic_tool_result_call')],
            },
        ),
        migrations.CreateModel(
            name='NotificationDelivery',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('channel', models.CharField(choices=[('email', 'Email'), ('webhook', 'Webhook')], max_length=16, verbose_name='channel')),
                ('target', models.CharField(max_length=254, verbose_name='target')),
                ('event_type', models.CharField(max_length=40, verbose_name='event type')),
                ('payload', models.JSONField()),
                ('scope_key', models.CharField(max_length=200, verbose_name='scope key')),
                ('status', models.CharField(choices=[('pending', 'Pending'), ('delivered', 'Delivered'), ('failed', 'Failed')], default='pending', max_length=16, verbose_name='status')),
                ('attempts', models.PositiveIntegerField(default=0, verbose_name='attempts')),
                ('max_attempts', models.PositiveIntegerField(verbose_name='max attempts')),
                ('last_error', models.TextField(blank=True, default='', verbose_name='last error')),
                ('next_attempt_at', models.DateTimeField(blank=True, null=True)),
                ('delivered_at', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('pause', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='symfonic_django.pause')),
                ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='symfonic_django.run')),
            ],
            options={
                'verbose_name_plural': 'notification deliveries',
                'permissions': [('redeliver_notification', 'Can redeliver notifications')],
                'verbose_name': 'notification delivery',
                'indexes': [models.Index(fields=['-created_at'], name='symfonic_delivery_recent_idx'), models.Index(fields=['scope_key', '-created_at'], name='symfonic_delivery_scope_idx'), models.Index(fields=['status', '-created_at'], name='symfonic_delivery_status_idx'), models.Index(condition=models.Q(('status', 'pending')), fields=['next_attempt_at'], name='symfonic_delivery_due_idx')],
                'constraints': [models.CheckConstraint(condition=models.Q(('status__in', ['pending', 'delivered', 'failed'])), name='symfonic_delivery_status_valid')],
            },
        ),
        migrations.CreateModel(
            name='DeliveryAttempt',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('number', models.PositiveIntegerField()),
                ('started_at', models.DateTimeField()),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('ok', models.BooleanField(default=False)),
                ('response_status', models.PositiveSmallIntegerField(blank=True, null=True)),
                ('error', models.TextField(blank=True, default='')),
                ('delivery', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='attempt_rows', to='symfonic_django.notificationdelivery')),
            ],
            options={
                'ordering': ['delivery', 'number'],
                'constraints': [models.UniqueConstraint(fields=('delivery', 'number'), name='symfonic_delivery_attempt_number')],
            },
        ),
        migrations.CreateModel(
            name='Redelivery',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('actor_label', models.CharField(blank=True, default='', max_length=200)),
                ('via', models.CharField(choices=[('admin', 'Admin'), ('api', 'API'), ('token', 'Token'), ('python', 'Python'), ('system', 'System')], max_length=16, verbose_name='via')),
                ('comment', models.TextField(blank=True, default='', verbose_name='comment')),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('previous_status', models.CharField(choices=[('pending', 'Pending'), ('delivered', 'Delivered'), ('failed', 'Failed')], max_length=16)),
                ('attempts_before', models.PositiveIntegerField()),
                ('actor', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('delivery', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='redeliveries', to='symfonic_django.notificationdelivery')),
            ],
            options={
                'ordering': ['created_at'],
                'abstract': False,
                'constraints': [models.CheckConstraint(condition=models.Q(('previous_status__in', ['pending', 'delivered', 'failed'])), name='symfonic_redelivery_status_valid')],
            },
        ),
        migrations.CreateModel(
            name='PauseSearch',
            fields=[
                ('pause', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='search', serialize=False, to='symfonic_django.pause')),
                ('text', models.TextField(editable=False)),
            ],
        ),
        # The list and filter indexes, built CONCURRENTLY on PostgreSQL.
        AddIndexConcurrently(
            model_name='pause',
            index=models.Index(fields=['scope_key', 'kind', '-created_at'], name='symfonic_pause_scopekind_idx'),
        ),
        AddIndexConcurrently(
            model_name='pause',
            index=models.Index(condition=models.Q(('claimed_by__isnull', False), ('status', 'pending')), fields=['claimed_by', 'created_at'], name='symfonic_pause_claimed_idx'),
        ),
        AddIndexConcurrently(
            model_name='run',
            index=models.Index(fields=['-created_at'], name='symfonic_run_recent_idx'),
        ),
        AddIndexConcurrently(
            model_name='run',
            index=models.Index(fields=['status', '-created_at'], name='symfonic_run_status_idx'),
        ),
        AddIndexConcurrently(
            model_name='run',
            index=models.Index(fields=['session_id'], name='symfonic_run_session_idx'),
        ),
        AddIndexConcurrently(
            model_name='run',
            index=models.Index(fields=['thread_id'], name='symfonic_run_thread_idx'),
        ),
        AddIndexConcurrently(
            model_name='run',
            index=models.Index(fields=['agent', '-created_at'], name='symfonic_run_agent_idx'),
        ),
        AddIndexConcurrently(
            model_name='run',
            index=models.Index(fields=['scope_key', 'status', '-created_at'], name='symfonic_run_scopestatus_idx'),
        ),
        AddIndexConcurrently(
            model_name='run',
            index=models.Index(fields=['scope_key', 'agent', '-created_at'], name='symfonic_run_scopeagent_idx'),
        ),
        AddIndexConcurrently(
            model_name='decision',
            index=models.Index(fields=['action', '-id'], name='symfonic_decision_action_idx'),
        ),
        AddIndexConcurrently(
            model_name='decision',
            index=models.Index(fields=['via', '-id'], name='symfonic_decision_via_idx'),
        ),
        AddIndexConcurrently(
            model_name='decision',
            index=models.Index(fields=['scope_key', '-id'], name='symfonic_decision_scope_idx'),
        ),
        AddIndexConcurrently(
            model_name='decision',
            index=models.Index(fields=['scope_key', 'action', '-id'], name='symfonic_decision_scopeact_idx'),
        ),
        AddIndexConcurrently(
            model_name='decision',
            index=models.Index(fields=['scope_key', 'via', '-id'], name='symfonic_decision_scopevia_idx'),
        ),
        AddIndexConcurrently(
            model_name='turnevent',
            index=models.Index(fields=['type', '-id'], name='symfonic_event_type_idx'),
        ),
        AddIndexConcurrently(
            model_name='turnevent',
            index=models.Index(fields=['scope_key', '-id'], name='symfonic_event_scope_idx'),
        ),
        AddIndexConcurrently(
            model_name='turnevent',
            index=models.Index(fields=['scope_key', 'type', '-id'], name='symfonic_event_scopetype_idx'),
        ),
        # The admin's pause search matches ``text LIKE '%term%'`` (both case-folded).
        CreateExtension("pg_trgm"),
        AddPostgresIndexConcurrently(
            "pausesearch",
            GinIndex(fields=["text"], opclasses=["gin_trgm_ops"],
                     name="symfonic_search_text_idx"),
        ),
        migrations.RunPython(set_statistics, migrations.RunPython.noop, elidable=False),
    ]
