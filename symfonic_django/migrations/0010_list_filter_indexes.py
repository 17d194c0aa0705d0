"""Indexes for the admin lists' fixed filters (agent, event type, decision action and
surface), and one fewer index on the event table.

Non-atomic: PostgreSQL builds each index ``CONCURRENTLY``
(``symfonic_django.operations``). The event table's own index on ``run_id`` goes
last: the unique ``(run, seq)`` index serves every lookup by run, and each event
then writes one index fewer (the new type index takes its place). Dropping it
takes the table's lock only for the drop itself.
"""

import django.db.models.deletion
from django.db import migrations, models

from symfonic_django.operations import AddIndexConcurrently


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("symfonic_django", "0009_run_search_and_filter_indexes"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="decision",
            index=models.Index(fields=["action", "-id"], name="symfonic_decision_action_idx"),
        ),
        AddIndexConcurrently(
            model_name="decision",
            index=models.Index(fields=["via", "-id"], name="symfonic_decision_via_idx"),
        ),
        AddIndexConcurrently(
            model_name="run",
            index=models.Index(fields=["agent", "-created_at"], name="symfonic_run_agent_idx"),
        ),
        AddIndexConcurrently(
            model_name="turnevent",
            index=models.Index(fields=["type", "-id"], name="symfonic_event_type_idx"),
        ),
        migrations.AlterField(
            model_name="turnevent",
            name="run",
            field=models.ForeignKey(db_index=False,
                                    on_delete=django.db.models.deletion.CASCADE,
                                    related_name="events", to="symfonic_django.run"),
        ),
    ]
