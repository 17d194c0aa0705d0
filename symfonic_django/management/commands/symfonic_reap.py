from django.core.management.base import BaseCommand

from symfonic_django.runner import reap_stale_runs


class Command(BaseCommand):
    help = "Fail running runs whose worker stopped renewing its lease (lease_expired)."

    def handle(self, *args, **options):
        self.stdout.write(f"reaped {reap_stale_runs()} run(s)")
