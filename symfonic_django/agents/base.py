"""The agent protocol the runner drives.

An agent is any object with two async-iterator methods yielding typed events
(``symfonic_django.events``). Inside either, ``await request_pause(...)``
pauses the turn for a person: the turn ends ``turn.paused`` when the iterator
finishes, and the continuation is handed the answers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol, runtime_checkable

from ..events import Event


@runtime_checkable
class Agent(Protocol):
    def start_typed(self, context: Any, input: Any) -> AsyncIterator[Event]:
        """Run a new turn. ``context`` is the ``TurnContext``; ``input`` the run's input."""
        ...

    def continue_recovered_typed(
        self, continuation: Any, *, prepared_plan: Any = None, event_guard: Any = None
    ) -> AsyncIterator[Event]:
        """Continue after the turn's pauses were resolved; ``continuation.answers`` has them."""
        ...
