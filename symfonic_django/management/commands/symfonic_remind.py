from typing import Any

from django.core.management.base import BaseCommand

from symfonic_django.notifications import send_reminders


class Command(BaseCommand):
    help = ("Remind the reviewers of pending pauses nearing their expiry, then escalate them "
            "(NOTIFY's REMIND_BEFORE, ESCALATE_BEFORE, ESCALATE_TO); each pause once.")

    def handle(self, *args: Any, **options: Any) -> None:
        sweep = send_reminders()
        self.stdout.write(f"reminded {sweep.reminded} pause(s), escalated {sweep.escalated}")
