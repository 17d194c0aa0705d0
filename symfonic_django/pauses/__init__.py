"""The pause state machine: every write of ``Pause.status`` happens in this package.

::

    pending --answer / approve / reject / respond--> answered
    pending --expires_at passed-->                   expired
    pending --cancel (or a sibling died)-->          cancelled

A pause leaves ``pending`` once, in one short ``transaction.atomic()`` that
locks the paused run's row, then the pause's, through a conditional UPDATE
that is the single-use claim on every backend (row locks serialize siblings
on PostgreSQL; SQLite serializes writers itself). Expiry and answers race
through that same guard. A refusal raises before any write. When the last
pending pause of a paused run leaves ``pending``, ``settle`` asks the run
state machine (``runs``) to queue the continuation, or to fail the run.

The modules, from the bottom up: ``machine`` (the edges, ``Resolution``),
``creating``, ``guards`` (who may act on a pause, and the refusals),
``quorum`` (several approvers), ``settling``, ``answering``, ``expiry``,
``claims`` (review claims) and ``reminders`` (reminders and escalations).
This package re-exports their public names: ``from symfonic_django.pauses import
answer_pause``.
"""

from .answering import answer_pause, approve, cancel, reject, respond, validate_answer
from .claims import claim, release
from .creating import MAX_APPROVERS, approvals_needed, claims_for, create_pause, token_for
from .expiry import (
    EXPIRY_BATCH,
    SWEEP_SECONDS,
    TIMEOUT_ANSWER,
    expire,
    expire_all_due,
    expire_due,
)
from .machine import EDGES, MACHINE, PENDING, Approvals, Resolution
from .quorum import RUNNING_DECISIONS, lets_run, offered_decisions, same_decisions
from .reminders import Comment, mark_escalated, mark_reminded
from .settling import settle

__all__ = [
    "EDGES", "EXPIRY_BATCH", "MACHINE", "MAX_APPROVERS", "PENDING", "RUNNING_DECISIONS",
    "SWEEP_SECONDS", "TIMEOUT_ANSWER", "Approvals", "Comment", "Resolution", "answer_pause",
    "approvals_needed", "approve", "cancel", "claim", "claims_for", "create_pause", "expire",
    "expire_all_due", "expire_due", "lets_run", "mark_escalated", "mark_reminded",
    "offered_decisions", "reject", "release", "respond", "same_decisions", "settle",
    "token_for", "validate_answer",
]
