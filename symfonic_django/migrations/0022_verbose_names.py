"""The reviewer-facing names of the models and their fields, marked for translation.

Only labels change (the admin's titles, column headers, filters and read-only
fields): no SQL on any database (``sqlmigrate`` prints an empty transaction).
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('symfonic_django', '0021_pause_search'),
    ]

    operations = [
        migrations.AlterModelOptions(
            name='decision',
            options={'ordering': ['created_at'], 'verbose_name': 'decision', 'verbose_name_plural': 'decisions'},
        ),
        migrations.AlterModelOptions(
            name='notificationdelivery',
            options={'permissions': [('redeliver_notification', 'Can redeliver notifications')], 'verbose_name': 'notification delivery', 'verbose_name_plural': 'notification deliveries'},
        ),
        migrations.AlterModelOptions(
            name='pause',
            options={'ordering': ['-created_at'], 'permissions': [('answer_pause', 'Can answer (approve, reject, respond to) pauses')], 'verbose_name': 'pause', 'verbose_name_plural': 'pauses'},
        ),
        migrations.AlterModelOptions(
            name='run',
            options={'ordering': ['-created_at'], 'permissions': [('retry_run', 'Can retry failed runs'), ('start_run', 'Can start agent runs')], 'verbose_name': 'run', 'verbose_name_plural': 'runs'},
        ),
        migrations.AlterModelOptions(
            name='turnevent',
            options={'ordering': ['run', 'seq'], 'verbose_name': 'turn event', 'verbose_name_plural': 'turn events'},
        ),
        migrations.AlterField(
            model_name='decision',
            name='action',
            field=models.CharField(choices=[('answer', 'Answered'), ('approve', 'Approved'), ('edit', 'Edited and approved'), ('reject', 'Rejected'), ('respond', 'Responded'), ('expire', 'Expired'), ('cancel', 'Cancelled'), ('claim', 'Claimed'), ('release', 'Released'), ('remind', 'Reminded'), ('escalate', 'Escalated')], max_length=16, verbose_name='action'),
        ),
        migrations.AlterField(
            model_name='decision',
            name='comment',
            field=models.TextField(blank=True, default='', verbose_name='comment'),
        ),
        migrations.AlterField(
            model_name='decision',
            name='via',
            field=models.CharField(choices=[('admin', 'Admin'), ('api', 'API'), ('token', 'Token'), ('python', 'Python'), ('system', 'System')], max_length=16, verbose_name='via'),
        ),
        migrations.AlterField(
            model_name='notificationdelivery',
            name='attempts',
            field=models.PositiveIntegerField(default=0, verbose_name='attempts'),
        ),
        migrations.AlterField(
            model_name='notificationdelivery',
            name='channel',
            field=models.CharField(choices=[('email', 'Email'), ('webhook', 'Webhook')], max_length=16, verbose_name='channel'),
        ),
        migrations.AlterField(
            model_name='notificationdelivery',
            name='event_type',
            field=models.CharField(max_length=40, verbose_name='event type'),
        ),
        migrations.AlterField(
            model_name='notificationdelivery',
            name='last_error',
            field=models.TextField(blank=True, default='', verbose_name='last error'),
        ),
        migrations.AlterField(
            model_name='notificationdelivery',
            name='max_attempts',
            field=models.PositiveIntegerField(verbose_name='max attempts'),
        ),
        migrations.AlterField(
            model_name='notificationdelivery',
            name='scope_key',
            field=models.CharField(max_length=200, verbose_name='scope key'),
        ),
        migrations.AlterField(
            model_name='notificationdelivery',
            name='status',
            field=models.CharField(choices=[('pending', 'Pending'), ('delivered', 'Delivered'), ('failed', 'Failed')], default='pending', max_length=16, verbose_name='status'),
        ),
        migrations.AlterField(
            model_name='notificationdelivery',
            name='target',
            field=models.CharField(max_length=254, verbose_name='target'),
        ),
        migrations.AlterField(
            model_name='pause',
            name='kind',
            field=models.CharField(choices=[('approval', 'Approval'), ('question', 'Question')], max_length=16, verbose_name='kind'),
        ),
        migrations.AlterField(
            model_name='pause',
            name='scope_key',
            field=models.CharField(max_length=200, verbose_name='scope key'),
        ),
        migrations.AlterField(
            model_name='pause',
            name='status',
            field=models.CharField(choices=[('pending', 'Pending'), ('answered', 'Answered'), ('expired', 'Expired'), ('cancelled', 'Cancelled')], default='pending', max_length=16, verbose_name='status'),
        ),
        migrations.AlterField(
            model_name='redelivery',
            name='comment',
            field=models.TextField(blank=True, default='', verbose_name='comment'),
        ),
        migrations.AlterField(
            model_name='redelivery',
            name='via',
            field=models.CharField(choices=[('admin', 'Admin'), ('api', 'API'), ('token', 'Token'), ('python', 'Python'), ('system', 'System')], max_length=16, verbose_name='via'),
        ),
        migrations.AlterField(
            model_name='run',
            name='agent',
            field=models.CharField(max_length=100, verbose_name='agent'),
        ),
        migrations.AlterField(
            model_name='run',
            name='attempts',
            field=models.PositiveIntegerField(default=1, verbose_name='attempts'),
        ),
        migrations.AlterField(
            model_name='run',
            name='epoch',
            field=models.PositiveIntegerField(default=0, verbose_name='epoch'),
        ),
        migrations.AlterField(
            model_name='run',
            name='scope_key',
            field=models.CharField(db_index=True, max_length=200, verbose_name='scope key'),
        ),
        migrations.AlterField(
            model_name='run',
            name='session_id',
            field=models.CharField(blank=True, default='', max_length=200, verbose_name='session id'),
        ),
        migrations.AlterField(
            model_name='run',
            name='status',
            field=models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('paused', 'Paused'), ('completed', 'Completed'), ('failed', 'Failed')], default='queued', max_length=16, verbose_name='status'),
        ),
        migrations.AlterField(
            model_name='run',
            name='thread_id',
            field=models.CharField(blank=True, default='', max_length=200, verbose_name='thread id'),
        ),
        migrations.AlterField(
            model_name='run',
            name='worker',
            field=models.CharField(blank=True, default='', max_length=200, verbose_name='worker'),
        ),
        migrations.AlterField(
            model_name='runretry',
            name='comment',
            field=models.TextField(blank=True, default='', verbose_name='comment'),
        ),
        migrations.AlterField(
            model_name='runretry',
            name='via',
            field=models.CharField(choices=[('admin', 'Admin'), ('api', 'API'), ('token', 'Token'), ('python', 'Python'), ('system', 'System')], max_length=16, verbose_name='via'),
        ),
        migrations.AlterField(
            model_name='turnevent',
            name='seq',
            field=models.PositiveIntegerField(verbose_name='seq'),
        ),
        migrations.AlterField(
            model_name='turnevent',
            name='type',
            field=models.CharField(max_length=40, verbose_name='type'),
        ),
    ]
