"""Email and signed webhooks about pauses and runs, sent from the app's signals.

What is told, and to whom (``SYMFONIC["NOTIFY"]``, see ``conf.NOTIFY_DEFAULTS``):

- ``pause.requested``: an email to each reviewer of the pause's scope
  (``REVIEWER_EMAILS``), and a webhook to each endpoint that takes it;
- ``pause.answered``, ``pause.expired``, ``run.completed``, ``run.failed``: webhooks;
- ``pause.reminder`` (``REMIND_BEFORE`` its expiry, to the scope's reviewers) and
  ``pause.escalated`` (``ESCALATE_BEFORE`` it, to the members of the ``ESCALATE_TO``
  group): email and webhook, once per pause each, from the ``send_reminders`` sweep
  (a beat task and ``manage.py symfonic_remind``), not from a signal.

The receivers only write one ``NotificationDelivery`` row per target and send the
delivery task by name (``DELIVER_TASK``, in ``tasks.py``) once the rows commit.
A delivery is attempted by ``attempt()``, once per task run, and moves through its
own state machine (``machine``); ``redeliver`` and ``send_due`` deliver again.

A pause token is a bearer credential for answering (docs/design.md section 6, "Who
holds a token"). No notification carries one unless a setting asks
(``INCLUDE_TOKEN`` for email, an endpoint's ``INCLUDE_TOKEN``), and then
only ``pause.requested`` or ``pause.reminder`` of a pause still pending (their
emails go to the scope's reviewers); never ``pause.escalated``, whose group
need not review the scope. A token is minted at each attempt, never stored. Like
``delivery``, this is a surface that delivers events, so it sits beside it in the
layers: above the pause state machine (``pauses.token_for``), below the tasks and
the admin that call it.

The modules: ``types`` (the event types), ``settings``, ``machine`` (a delivery's
edges), ``payloads`` (what is said), ``outbox`` (who is told, the delivery rows),
``receivers``, ``sending`` (an email, a signed webhook), ``attempts``, ``redelivery``
and ``reminders`` (the reminders sweep). This package re-exports the names the app's
other modules, the tasks and the tests use.
"""

from ..exceptions import NotRedeliverable
from . import receivers  # noqa: F401  (connects the signal receivers)
from .attempts import Outcome, attempt
from .machine import EDGES
from .outbox import DELIVER_TASK, announce
from .redelivery import SEND_DUE_GRACE, redeliver, send_due
from .reminders import Sweep, send_reminders
from .settings import Endpoint, NotifySettings, notify_settings
from .types import EVENT_TYPES, PAUSE_ESCALATED, PAUSE_REMINDER, PAUSE_REQUESTED, TOKEN_EVENTS

__all__ = [
    "DELIVER_TASK", "EDGES", "EVENT_TYPES", "PAUSE_ESCALATED", "PAUSE_REMINDER",
    "PAUSE_REQUESTED", "SEND_DUE_GRACE", "TOKEN_EVENTS", "Endpoint", "NotRedeliverable",
    "NotifySettings", "Outcome", "Sweep", "announce", "attempt", "notify_settings",
    "redeliver", "send_due", "send_reminders",
]
