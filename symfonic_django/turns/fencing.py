"""Fenced side effects: an effect commits only while this worker holds the turn's lease."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.db import transaction

from .. import events as ev
from .. import runs
from ..exceptions import InteractionConfigurationError
from ..runs import LeaseLost
from .context import TurnContext, current_turn

T = TypeVar("T")


class Fence:
    """The open fenced transaction: ``emit`` stores an event with the effect."""

    def __init__(self, turn: TurnContext) -> None:
        self.turn = turn
        self.events: list[ev.Event] = []

    def emit(self, event: ev.Event) -> None:
        """Store ``event`` in the fenced transaction: it commits with the effect, or not at all."""
        if event.terminal:
            raise InteractionConfigurationError("a fenced effect cannot end the turn")
        self.events.append(event)


@contextmanager
def fenced() -> Iterator[Fence]:
    """Run a side effect only while this worker still holds the turn's lease.

    Sync code inside a turn (a tool called through ``sync_to_async``)::

        with fenced() as fence:
            Refund.objects.create(...)
            fence.emit(ToolCompleted(...))

    The block and the events it emitted run in one transaction. Right before
    it commits, the run row is locked and checked: still ``running`` under this
    worker's claim (its epoch), with an unexpired lease. Otherwise it raises
    ``LeaseLost`` and nothing of the block is committed: a worker that froze
    and woke after the reaper failed its run moves no money. The lock is taken
    last, so a slow effect does not keep the heartbeat from renewing the lease.
    """
    turn = current_turn()
    turn.check_held()
    if not runs.still_held(turn.run.pk, turn.epoch):  # fail fast, before any effect
        raise LeaseLost(f"run {turn.run_id} is no longer held by claim {turn.epoch}")
    fence = Fence(turn)
    with transaction.atomic():
        runs.bound_fenced_transaction()
        yield fence
        # The lease check comes before the events: a reaped run refuses with LeaseLost
        # here, rather than with a clash of its turn.failed's seq with ours.
        runs.hold_lease(turn.run.pk, turn.epoch)
        # Numbered as they are stored, from the turn's own counter: the turn may stream
        # other events while the effect runs (a LangGraph tool runs beside the stream).
        for event in fence.events:
            turn.seq += 1
            ev.append(turn.run, turn.seq, event)
            transaction.on_commit(partial(ev.ring, turn.run.pk, turn.seq))


async def afenced(effect: Callable[..., T], /, *args: Any,
                  event: Callable[[T], ev.Event] | None = None, **kwargs: Any) -> T:
    """``fenced()`` for async agent code: run sync ``effect(*args, **kwargs)`` fenced.

    ``event``, if given, builds the event stored with the effect from its
    result (``lambda result: ToolCompleted(..., result=result)``). Database
    transactions do not span awaits in Django, so the effect is a sync
    callable run on the turn's database thread, inside one transaction.
    """
    def run_fenced() -> T:
        with fenced() as fence:
            result = effect(*args, **kwargs)
            if event is not None:
                fence.emit(event(result))
        return result

    return await sync_to_async(run_fenced)()
