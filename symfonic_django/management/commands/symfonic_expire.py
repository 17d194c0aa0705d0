from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from symfonic_django.pauses import EXPIRY_BATCH, SWEEP_SECONDS, expire_all_due


class Command(BaseCommand):
    help = ("Expire pending pauses whose time is up, a batch at a time until none is left "
            "(ON_EXPIRE decides what their runs do).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--seconds", type=float, default=SWEEP_SECONDS,
                            help="stop taking batches after this long (default %(default)s)")
        parser.add_argument("--batch", type=int, default=EXPIRY_BATCH,
                            help="pauses expired per transaction (default %(default)s)")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch"] < 1 or not options["seconds"] >= 0:
            raise CommandError("--batch must be 1 or more and --seconds 0 or more.")
        expired = expire_all_due(seconds=options["seconds"], batch=options["batch"])
        self.stdout.write(f"expired {expired} pause(s)")
