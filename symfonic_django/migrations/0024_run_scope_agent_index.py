"""A reviewer's run list filtered by agent reads its tenant's runs of that agent alone;
the run's own index of ``scope_key`` goes.

Without the new index, PostgreSQL read a reviewer's runs of a rare agent by
crossing every run of the tenant with every run of that agent: with one agent
in ten at 1,000,000 pauses (200,000 runs), 20,000 and 18,000 index entries to
keep 20, in 5 ms for the count and 6 ms for the page, growing with both
(``bench/bench_scale.py``). The ``scope_key`` column's own two indexes (one
for ``=``, one for ``LIKE``, which nothing asks) served no lookup that the
indexes it leads do not; each run writes all its indexes again at every
status it takes, so the runs have one index fewer than before.

Non-atomic: on PostgreSQL the index is built ``CONCURRENTLY``, then the old
ones are dropped ``CONCURRENTLY``, so runs keep being started and settled.
"""

from django.db import migrations, models

from symfonic_django.operations import AddIndexConcurrently, DropFieldIndexConcurrently


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("symfonic_django", "0023_run_scope_status_index"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="run",
            index=models.Index(fields=["scope_key", "agent", "-created_at"],
                               name="symfonic_run_scopeagent_idx"),
        ),
        DropFieldIndexConcurrently(
            model_name="run",
            name="scope_key",
            field=models.CharField(max_length=200, verbose_name="scope key"),
        ),
    ]
