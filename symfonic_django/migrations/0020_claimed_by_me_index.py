"""The inbox's "claimed by me" tab reads a partial index of the pending pauses someone claimed.

Only claimed pending pauses are in it, so it is small however many pauses there
are, and a claim or an answer updates it. Built ``CONCURRENTLY`` on PostgreSQL
(non-atomic), so pauses keep being asked and answered while it is built.
"""

from django.db import migrations, models
from django.db.models import Q

from symfonic_django.operations import AddIndexConcurrently


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("symfonic_django", "0019_claims_and_reminders"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="pause",
            index=models.Index(fields=["claimed_by", "created_at"],
                               name="symfonic_pause_claimed_idx",
                               condition=Q(status="pending", claimed_by__isnull=False)),
        ),
    ]
