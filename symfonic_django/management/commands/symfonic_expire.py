from typing import Any

from django.core.management.base import BaseCommand

from symfonic_django.pauses import expire_due


class Command(BaseCommand):
    help = "Expire pending pauses whose time is up (ON_EXPIRE decides what their runs do)."

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(f"expired {expire_due()} pause(s)")
