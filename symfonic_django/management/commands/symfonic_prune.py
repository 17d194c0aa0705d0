from argparse import BooleanOptionalAction
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser

from symfonic_django.retention import prune


class Command(BaseCommand):
    help = ("Delete idempotency records older than IDEMPOTENCY_RETENTION and, when "
            "EVENT_RETENTION is set, the events of runs that finished longer ago than that, "
            "and the LangGraph checkpoints of threads whose every run did.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--events", action=BooleanOptionalAction, default=None,
            help="prune events of finished runs and checkpoints of their idle graph threads "
                 "(--events needs EVENT_RETENTION) or keep both (--no-events); default: prune "
                 "them when EVENT_RETENTION is set")
        parser.add_argument(
            "--dry-run", action="store_true",
            help="count what would be deleted, delete nothing")
        parser.add_argument(
            "--batch", type=int, default=5000,
            help="rows deleted per statement (default %(default)s)")

    def handle(self, *args: Any, events: bool | None, dry_run: bool, batch: int,
               **options: Any) -> None:
        if batch < 1:
            raise CommandError("--batch must be at least 1")
        try:
            result = prune(events=events, batch=batch, dry_run=dry_run)
        except ImproperlyConfigured as exc:
            raise CommandError(str(exc)) from exc
        verb = "would delete" if dry_run else "deleted"
        self.stdout.write(f"{verb} {result.idempotency_records} idempotency record(s)")
        if result.events is None:
            why = "--no-events" if events is False else "EVENT_RETENTION is not set"
            self.stdout.write(f"kept every event ({why})")
        else:
            self.stdout.write(f"{verb} {result.events} event(s) of finished runs")
        # Only when there are some: a deployment without LangGraph sees nothing about them.
        if result.checkpoints:
            self.stdout.write(f"{verb} {result.checkpoints} checkpoint row(s) of idle graph "
                              "threads")
