"""Indexes for the run list's search and status filter, and a reviewer's kind filter.

Non-atomic: PostgreSQL builds each ``CONCURRENTLY`` (``symfonic_django.operations``),
so the run and pause tables, large by now, take writes while they are built.
"""

from django.db import migrations, models

from symfonic_django.operations import AddIndexConcurrently


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("symfonic_django", "0008_search_and_list_indexes"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="pause",
            index=models.Index(fields=["scope_key", "kind", "-created_at"],
                               name="symfonic_pause_scopekind_idx"),
        ),
        AddIndexConcurrently(
            model_name="run",
            index=models.Index(fields=["status", "-created_at"], name="symfonic_run_status_idx"),
        ),
        AddIndexConcurrently(
            model_name="run",
            index=models.Index(fields=["session_id"], name="symfonic_run_session_idx"),
        ),
        AddIndexConcurrently(
            model_name="run",
            index=models.Index(fields=["thread_id"], name="symfonic_run_thread_idx"),
        ),
    ]
