"""What a resumed turn is handed: the pauses that stopped it, as asked and as answered."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..agent_protocol import AnsweredPause, ReviewedAction
from ..models import Pause, PauseStatus, Run, is_uuid


@dataclass
class Continuation:
    """What a resumed turn is handed: the pauses that stopped it, and their answers.

    ``answers`` maps each pause id to its answer as given; ``pauses`` maps the
    same ids, in the order they were asked, to the pause as asked and as it
    ended (``AnsweredPause``); ``actions`` lists every proposed action of those
    pauses with its decision and the arguments it may run with.
    """

    run: Run
    paused_run_id: str
    answers: dict[str, Any]
    scope: Any
    pauses: dict[str, AnsweredPause] = field(default_factory=dict)

    @property
    def answer(self) -> Any:
        """The single answer, for the common one-pause case."""
        if len(self.answers) != 1:
            raise ValueError("this continuation carries several answers; read .answers")
        return next(iter(self.answers.values()))

    @property
    def pause(self) -> AnsweredPause:
        """The single pause, for the common one-pause case."""
        if len(self.pauses) != 1:
            raise ValueError("this continuation carries several pauses; read .pauses")
        return next(iter(self.pauses.values()))

    @property
    def actions(self) -> list[ReviewedAction]:
        """Every action the approval pauses proposed, with what was decided on it."""
        return [action for pause in self.pauses.values() for action in pause.actions]


def answered_pauses(run: Run, answers: dict[str, Any]) -> dict[str, AnsweredPause]:
    """The paused run's pauses that ``answers`` names, oldest first, as asked and as they
    ended. A name that is no pause of the paused run has no entry."""
    if run.parent_id is None:
        return {}
    rows = (Pause.objects.filter(run_id=run.parent_id,
                                 pk__in=[key for key in answers if is_uuid(str(key))])
            .order_by("created_at").values_list("pk", "kind", "prompt", "status"))
    return {str(pk): AnsweredPause(str(pk), kind, prompt, answers[str(pk)],
                                   expired=status == PauseStatus.EXPIRED)
            for pk, kind, prompt, status in rows}


def continuation_of(run: Run, scope: Any) -> Continuation:
    """The continuation of ``run``: its answers, and the pauses they answer, read once."""
    answers = run.input.get("answers", {}) if isinstance(run.input, dict) else {}
    return Continuation(run=run, paused_run_id=str(run.parent_id), answers=answers, scope=scope,
                        pauses=answered_pauses(run, answers))
