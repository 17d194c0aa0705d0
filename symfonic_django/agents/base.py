"""The agent protocol the turn driver (``turns.py``) drives.

An agent is any object with two async-generator methods yielding typed events
(``symfonic_django.events``). Inside either, ``await request_pause(...)``
pauses the turn for a person: the turn ends ``turn.paused`` when the generator
finishes, and the continuation is handed the answers. Side effects that must
happen at most once go through ``fenced()`` / ``afenced()``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, Protocol, runtime_checkable

from ..events import Event
from ..models import Run


class TurnContext(Protocol):
    """What a new turn's agent is handed (``turns.TurnContext`` is the implementation)."""

    @property
    def run(self) -> Run: ...

    @property
    def scope(self) -> Any: ...

    @property
    def run_id(self) -> str: ...

    @property
    def root_run_id(self) -> str: ...


class Continuation(Protocol):
    """What a resumed turn's agent is handed (``turns.Continuation`` is the implementation)."""

    @property
    def run(self) -> Run: ...

    @property
    def paused_run_id(self) -> str: ...

    @property
    def answers(self) -> dict[str, Any]: ...

    @property
    def scope(self) -> Any: ...

    @property
    def answer(self) -> Any: ...


@runtime_checkable
class Agent(Protocol):
    def start_typed(self, context: TurnContext, input: Any) -> AsyncGenerator[Event, None]:
        """Run a new turn. ``input`` is the run's input."""
        ...

    def continue_recovered_typed(
        self, continuation: Continuation, *, prepared_plan: Any = None, event_guard: Any = None
    ) -> AsyncGenerator[Event, None]:
        """Continue after the turn's pauses were resolved; ``continuation.answers`` has them."""
        ...
