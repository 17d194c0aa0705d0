from datetime import timedelta

from django.core.management.base import BaseCommand

from symfonic_django.runner import STALLED_AFTER, reap_stale_runs, requeue_stalled_runs


class Command(BaseCommand):
    help = ("Fail running runs whose worker stopped renewing its lease (lease_expired), and "
            "send again queued runs whose message was lost.")

    def add_arguments(self, parser):
        parser.add_argument(
            "--stalled-after", type=float, default=STALLED_AFTER.total_seconds(),
            help="seconds a run may stay queued before it is sent again (default %(default)s)")

    def handle(self, *args, stalled_after: float, **options):
        self.stdout.write(f"reaped {reap_stale_runs()} run(s)")
        requeued = requeue_stalled_runs(older_than=timedelta(seconds=stalled_after))
        self.stdout.write(f"requeued {requeued} run(s)")
