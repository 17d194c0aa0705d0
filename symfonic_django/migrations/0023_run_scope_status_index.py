"""A reviewer's run list filtered by status reads its tenant's runs of that status alone.

Without it, PostgreSQL counted a reviewer's queued runs through the partial
index of every tenant's queued runs, reading each row to check its scope: at
1,000,000 pauses (200,000 runs) the count read 1,982 runs to keep 195, in
6.2 ms where it is 0.2 ms with this index, and it grew with every tenant's
backlog (``bench/bench_scale.py``). Pauses have had the same index from
the first migration. Built ``CONCURRENTLY`` on PostgreSQL (non-atomic), so
runs keep being started and settled while it is built.
"""

from django.db import migrations, models

from symfonic_django.operations import AddIndexConcurrently


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("symfonic_django", "0022_verbose_names"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="run",
            index=models.Index(fields=["scope_key", "status", "-created_at"],
                               name="symfonic_run_scopestatus_idx"),
        ),
    ]
