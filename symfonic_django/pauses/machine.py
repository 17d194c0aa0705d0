"""The pause state machine's edges, and the outcome of a transition.

::

    pending --answer / approve / reject / respond--> answered
    pending --expires_at passed-->                   expired
    pending --cancel (or a sibling died)-->          cancelled

A pause leaves ``pending`` once, through ``MACHINE.move``: a conditional UPDATE
(``status = pending``) that is the single-use claim on every backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..exceptions import AlreadyAnswered
from ..models import AnsweredVia, Decision, Pause, PauseStatus, Run
from ..transitions import Edge, Machine

PENDING = PauseStatus.PENDING
#: The allowed edges: a pause leaves ``pending`` once, for one of these, and never returns.
EDGES: dict[str, Edge] = {
    "answer": Edge(PENDING, PauseStatus.ANSWERED),
    "expire": Edge(PENDING, PauseStatus.EXPIRED),
    "cancel": Edge(PENDING, PauseStatus.CANCELLED),
}
MACHINE = Machine(Pause.objects, EDGES)


def leave_all(pauses: list[Pause], edge: str, *, action: str, now: datetime,
              answer: Any = None, comment: str = "") -> list[Decision]:
    """Take ``edge`` for every one of ``pauses``, which the caller locked while pending,
    as the system: one guarded UPDATE and one ``bulk_create`` of their decisions.

    Row locks make the UPDATE move them all (SQLite serializes writers itself);
    a shortfall would mean neither held, and raises before anything commits.
    ``pauses`` are left as this transaction leaves their rows.
    """
    if not MACHINE.move_rows(pauses, edge, now=now, answer=answer,
                             answered_via=AnsweredVia.SYSTEM, answered_at=now):
        raise AlreadyAnswered()
    return Decision.objects.bulk_create(
        Decision(pause=pause, scope_key=pause.scope_key, via=AnsweredVia.SYSTEM, action=action,
                 actor_label="system", answer=answer, comment=comment, created_at=now)
        for pause in pauses)


@dataclass(frozen=True)
class Approvals:
    """Where a pause that needs several approvers stands: ``have`` of ``need``, by whom."""

    have: int
    need: int
    by: list[str]


@dataclass(frozen=True)
class Resolution:
    """The outcome of a transition: the pause as it now is, and the turn it started.

    ``approvals`` is set when an approval counted toward a quorum that it did
    not complete: the pause is still pending.
    """

    pause: Pause
    continuation: Run | None
    approvals: Approvals | None = None
