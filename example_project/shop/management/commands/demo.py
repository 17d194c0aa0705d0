"""``manage.py demo --smoke``: drive one refund end to end and exit 0 on success.

start -> pause -> approve (Python API) -> continuation on the worker -> completed.
Embedded (no broker set), the worker (and the beat) are threads of this process.
"""

from __future__ import annotations

import time

from django.core.management.base import BaseCommand, CommandError

from example_project.embedded import start_embedded_worker_if_needed, stop_embedded_worker
from example_project.shop.models import Refund, Tenant
from symfonic_django.models import Pause, Run, RunStatus, TurnEvent
from symfonic_django.pauses import approve
from symfonic_django.runs import start_run


def wait_for(predicate, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise CommandError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


class Command(BaseCommand):
    help = "Run the refund flow once, end to end (--smoke), and report each step."

    def add_arguments(self, parser):
        parser.add_argument("--smoke", action="store_true", required=True)
        parser.add_argument("--timeout", type=float, default=30.0)

    def handle(self, *args, timeout: float, **options):
        start_embedded_worker_if_needed()
        try:
            tenant, _ = Tenant.objects.get_or_create(slug="acme", defaults={"name": "Acme Corp"})
            run = start_run("refund", {"order_id": "SMOKE-1", "amount": 25}, scope=tenant)
            self.stdout.write(f"started run {run.pk}")
            wait_for(lambda: Run.objects.get(pk=run.pk).status in ("paused", "failed"),
                     "the turn to pause", timeout)
            pause = Pause.objects.get(run=run)
            self.stdout.write(f"paused: {pause.pk} ({pause.kind})")
            resolution = approve(pause.pk, comment="smoke test")
            cont = resolution.continuation
            self.stdout.write(f"approved; continuation {cont.pk}")
            wait_for(lambda: Run.objects.get(pk=cont.pk).status in ("completed", "failed"),
                     "the continuation to finish", timeout)
            cont.refresh_from_db()
            if cont.status != RunStatus.COMPLETED:
                raise CommandError(f"continuation ended {cont.status}: {cont.error}")
            refunds = Refund.objects.filter(run_id=cont.pk).count()
            if refunds != 1:
                raise CommandError(f"expected one refund, found {refunds}")
            types = list(TurnEvent.objects.filter(run=cont).values_list("type", flat=True))
            self.stdout.write(f"completed: {', '.join(types)}")
            self.stdout.write(self.style.SUCCESS("smoke: OK"))
        finally:
            stop_embedded_worker()
