"""One Django signal per transition of a pause or a run, sent once the transaction commits.

Receivers run after the change is durable, so a notification never announces
something that was rolled back; a receiver that raises is logged by Django's
``send_robust`` and never undoes the transition. Every signal is sent with
``sender`` set to the model class (``Pause`` or ``Run``) and the keyword
arguments named in its comment.

    from symfonic_django.signals import pause_requested

    @receiver(pause_requested)
    def tell_reviewers(sender, pause, **kwargs): ...
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.dispatch import Signal

log = logging.getLogger(__name__)

# --- pauses (sender=Pause) ---------------------------------------------------------

#: A turn asked a person. Arguments: ``pause`` (the new ``Pause`` row).
pause_requested = Signal()
#: A pause left ``pending`` with an answer. Arguments: ``pause`` (as the transition left
#: it), ``decision`` (the ``Decision`` audit row), ``continuation`` (the ``Run`` it queued,
#: or ``None`` while sibling pauses of the same turn are still pending, or while the turn
#: that asked is still running: it is then queued when that turn ends, and
#: ``run_claimed`` announces it).
pause_answered = Signal()
#: One more reviewer approved a pause that needs several, and it still waits for more.
#: Arguments: ``pause`` (still pending), ``approvals`` (``pauses.Approvals``: ``have``,
#: ``need``, ``by``). The approval that completes the quorum sends ``pause_answered``.
pause_approved = Signal()
#: A pause's time ran out. Arguments: ``pause``, ``continuation`` (the ``Run`` resumed with
#: the timeout answer when ``ON_EXPIRE="resume"``, else ``None``).
pause_expired = Signal()
#: A pause was cancelled, by a person or because a sibling pause died. Arguments:
#: ``pause``, ``decision`` (the ``Decision`` audit row).
pause_cancelled = Signal()

# --- runs (sender=Run) ---------------------------------------------------------------

#: A worker claimed a queued run. Arguments: ``run``, ``worker`` (its name), ``epoch``
#: (the fencing token of this claim).
run_claimed = Signal()
#: A turn ended waiting for people. Arguments: ``run``, ``pause_ids`` (list of str).
run_paused = Signal()
#: A turn ended done. Arguments: ``run``, ``output``.
run_completed = Signal()
#: A run failed. Arguments: ``run``, ``code`` (``agent_error``, ``lease_expired``,
#: ``pause_expired``, ``pause_cancelled``, ...), ``message``.
run_failed = Signal()
#: An operator sent a failed run back to the queue. Arguments: ``run``, ``actor`` (a user
#: or ``None``), ``attempt`` (the run's ``attempts`` after the retry).
run_retried = Signal()


def send_on_commit(signal: Signal, sender: type[Any], **arguments: Any) -> None:
    """Send ``signal`` once the current transaction commits (at once outside one)."""
    send_each_on_commit(signal, sender, [arguments])


def send_each_on_commit(signal: Signal, sender: type[Any],
                        each: Iterable[dict[str, Any]]) -> None:
    """Send ``signal`` once per arguments of ``each``, in order, once the current
    transaction commits: one commit hook for a batch (an expiry sweep settles hundreds
    of pauses at once), each send as robust as ``send_on_commit``'s."""
    batch = list(each)

    def send() -> None:
        for arguments in batch:
            for receiver, outcome in signal.send_robust(sender=sender, **arguments):
                if isinstance(outcome, Exception):
                    log.error("%r raised in a receiver of a symfonic_django signal", receiver,
                              exc_info=outcome)

    if batch:
        transaction.on_commit(send)
