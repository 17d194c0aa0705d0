"""A reviewer's decision list filtered by action or surface reads its scope's range of them.

With only ``(scope_key, -id)``, the filter walked the scope's decisions newest
first and tested each: for a tenant with 0.45% of a million decisions, past a
mass expiry's system decisions, 40-70 ms (``bench/bench_scale.py``). Built
``CONCURRENTLY`` on PostgreSQL (non-atomic), so answers keep landing meanwhile.
"""

from django.db import migrations, models

from symfonic_django.operations import AddIndexConcurrently


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("symfonic_django", "0017_approvals"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="decision",
            index=models.Index(fields=["scope_key", "action", "-id"],
                               name="symfonic_decision_scopeact_idx"),
        ),
        AddIndexConcurrently(
            model_name="decision",
            index=models.Index(fields=["scope_key", "via", "-id"],
                               name="symfonic_decision_scopevia_idx"),
        ),
    ]
