"""The running turn as agents, ``request_pause`` and ``fenced`` see it, and how to find it."""

from __future__ import annotations

import contextvars
import os
import socket
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async

from .. import events as ev
from ..exceptions import InteractionConfigurationError
from ..models import Run, TurnEvent
from ..runs import LeaseLost


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass
class TurnContext:
    """The running turn, as agents, ``request_pause`` and ``fenced`` see it."""

    run: Run
    scope: Any
    worker: str
    epoch: int
    seq: int = 0
    lost: bool = False
    requested: list[str] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return str(self.run.pk)

    @property
    def root_run_id(self) -> str:
        return self.run.root_run_id

    def check_held(self) -> None:
        if self.lost:
            raise LeaseLost(f"run {self.run_id} lost its lease")

    async def emit(self, event: ev.Event) -> TurnEvent:
        """Store then announce one non-terminal event; returns the stored row."""
        self.check_held()
        self.seq += 1
        row = await sync_to_async(ev.append)(self.run, self.seq, event)
        # pause.requested is never rung with its data: a token may go with it, and only
        # the surface that delivers it knows whether this watcher may have one.
        message = None if event.type == ev.PauseRequested.type else ev.wire(row, self.root_run_id)
        await ev.aring(self.run.pk, self.seq, message)
        return row


active_turn: contextvars.ContextVar[TurnContext | None] = contextvars.ContextVar(
    "symfonic_turn", default=None)


def current_turn() -> TurnContext:
    """The turn this code runs in; ``InteractionConfigurationError`` outside one."""
    turn = active_turn.get()
    if turn is None:
        raise InteractionConfigurationError(
            "this was called outside an agent turn; call it from the agent's start_typed() "
            "or continue_recovered_typed() while a worker drives the turn")
    return turn
