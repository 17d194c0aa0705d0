from typing import Any

from django.core.management.base import BaseCommand

from symfonic_django.runs import reap_stale_runs, resend_overdue_runs


class Command(BaseCommand):
    help = ("Fail running runs whose worker stopped renewing its lease (lease_expired), and "
            "send again queued runs whose message is overdue (it was lost).")

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(f"reaped {reap_stale_runs()} run(s)")
        self.stdout.write(f"sent again {resend_overdue_runs()} overdue run(s)")
