"""The agent protocol the turn driver (``turns.py``) drives, and what an agent is handed.

An agent is any object with two async-generator methods yielding typed events
(``symfonic_django.events``). Inside either, ``await request_pause(...)``
pauses the turn for a person: the turn ends ``turn.paused`` when the generator
finishes, and the continuation is handed the answers. Side effects that must
happen at most once go through ``fenced()`` / ``afenced()``.

A resumed turn reads what people did through its continuation:
``continuation.actions`` (each proposed action, its proposed arguments, the
decision and the arguments it may run with) and ``continuation.pauses`` (each
pause as asked and as it ended). ``docs/agents.md`` describes every attribute.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol, runtime_checkable

from . import hitl
from .events import Event
from .models import Run

#: The decision on an action of an approval pause that expired unanswered and resumed the
#: turn (``ON_EXPIRE="resume"``); the others are the ``HITLResponse`` decision types.
EXPIRED = "expired"


@dataclass(frozen=True)
class ReviewedAction:
    """One action an approval pause proposed, and what was decided on it.

    ``decision`` is the reviewer's: ``"approve"``, ``"edit"``, ``"reject"`` or
    ``"respond"``; or ``"expired"`` when nobody answered in time and the pause
    resumed the turn. ``approved_args`` are the arguments the action may run
    with: the proposal as shown on ``approve``, the reviewer's edit on
    ``edit``, and ``None`` on every other decision (the action must not run).
    ``message`` is the reviewer's words with ``reject`` or ``respond`` (``""``
    when none were given).
    """

    pause_id: str
    name: str
    proposed_args: dict[str, Any]
    decision: str
    approved_args: dict[str, Any] | None
    message: str = ""

    @property
    def approved(self) -> bool:
        """The action may run, with ``approved_args`` (approved as proposed, or edited)."""
        return self.approved_args is not None

    @property
    def edited(self) -> bool:
        """The reviewer changed the arguments before approving."""
        return self.decision == "edit"


@dataclass(frozen=True)
class AnsweredPause:
    """A pause that stopped the turn: what the agent asked, and how it ended.

    ``kind`` is ``"approval"`` or ``"question"``; ``prompt`` is the pause's
    prompt as stored (an approval's ``HITLRequest``, normalized); ``answer`` the
    answer as given (a ``HITLResponse``, the question's value, or
    ``{"timeout": True}`` when it expired). ``expired`` is true when nobody
    answered in time (``ON_EXPIRE="resume"``).
    """

    pause_id: str
    kind: str
    prompt: Any
    answer: Any
    expired: bool = False

    @cached_property
    def actions(self) -> tuple[ReviewedAction, ...]:
        """An approval's actions in the order proposed, each with its decision; a question
        has none. The answer is checked against the prompt again as it is read
        (``InvalidAnswer`` if it does not fit): one that never went through the pause
        (written into a run's input by hand) runs nothing."""
        if self.kind != "approval":
            return ()
        requests = self.prompt["action_requests"]
        decisions = ([{"type": EXPIRED}] * len(requests) if self.expired
                     else hitl.validate_response(self.prompt, self.answer)["decisions"])
        actions = []
        for request, decision in zip(requests, decisions, strict=True):
            proposed = dict(request.get("args") or {})
            kind = decision["type"]
            approved = (dict(proposed) if kind == "approve" else
                        dict(decision["edited_action"]["args"]) if kind == "edit" else None)
            actions.append(ReviewedAction(
                pause_id=self.pause_id, name=request["name"], proposed_args=proposed,
                decision=kind, approved_args=approved, message=decision.get("message", "")))
        return tuple(actions)


class _TurnOfARun(Protocol):
    """What every turn's agent is handed: its run, and the run's scope."""

    @property
    def run(self) -> Run: ...

    @property
    def scope(self) -> Any: ...


class NewTurn(_TurnOfARun, Protocol):
    """``start_typed``'s ``context``: the new turn (``turns.TurnContext`` implements it)."""

    @property
    def run_id(self) -> str: ...

    @property
    def root_run_id(self) -> str: ...


class ResumedTurn(_TurnOfARun, Protocol):
    """``continue_recovered_typed``'s ``continuation``: the resumed turn, the pauses that
    stopped it and their answers (``turns.Continuation`` implements it)."""

    @property
    def paused_run_id(self) -> str: ...

    @property
    def answers(self) -> dict[str, Any]: ...

    @property
    def answer(self) -> Any: ...

    @property
    def pauses(self) -> dict[str, AnsweredPause]: ...

    @property
    def pause(self) -> AnsweredPause: ...

    @property
    def actions(self) -> list[ReviewedAction]: ...


@runtime_checkable
class Agent(Protocol):
    def start_typed(self, context: NewTurn, input: Any) -> AsyncGenerator[Event, None]:
        """Run a new turn. ``input`` is the run's input."""
        ...

    def continue_recovered_typed(
        self, continuation: ResumedTurn, *, prepared_plan: Any = None, event_guard: Any = None
    ) -> AsyncGenerator[Event, None]:
        """Continue after the turn's pauses were resolved; ``continuation.answers`` has them."""
        ...
