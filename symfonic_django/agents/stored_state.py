"""A paused run's framework state, stored with the run and taken once.

Pydantic AI resumes from a message history, the OpenAI Agents SDK from a
``RunState`` string; both run the approved tools of whatever state they are
handed, as often as they are handed it. The adapters keep that state here
(``AgentState``, one row per paused run):

- ``save_state`` stores it inside the run's fence, before the turn asks its
  pauses: a worker that lost its lease stores nothing, and a turn that runs
  again finds the state it stopped with (``saved_state``) instead of asking the
  model again.
- ``consume_state`` hands it to the continuation, once: under the row's lock and
  the continuation's claim, it marks the row taken by the continuation run.
  Another run that comes for it (a second continuation of the same pauses, a
  replayed answer) is refused with ``StateConsumed`` and changes nothing; a run
  the paused run's pauses did not make (a continuation row written by hand, with
  answers of its own) is refused with ``LineageRefused`` before it sees the state. The
  same continuation run claimed anew (a retry, a redelivery after its worker
  died) takes it again: what its first attempt did is in the fenced tools'
  records, which replay instead of running again (``recorded``).
- ``check`` runs inside the same transaction, before the row is marked: an
  answer that does not fit the state is refused with the state still unused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.utils import timezone

from ..exceptions import InteractionConfigurationError, LineageRefused, StateConsumed
from ..jsontext import unstorable
from ..models import AgentState, Pause
from ..turns import current_turn, fenced

__all__ = ["MAX_STATE_CHARS", "consume_state", "save_state", "saved_state"]

#: The largest state stored (characters): a message history past it is refused, not
#: stored half (a state that big is a conversation that should be trimmed first).
MAX_STATE_CHARS = 4_000_000


def save_state(framework: str, state: str) -> None:
    """Store this turn's run's ``state``, fenced. Sync: call it on the turn's database
    thread. Refuses text that cannot be stored, and a state another run has taken."""
    _check_storable(framework, state)
    turn = current_turn()
    with fenced():
        row = AgentState.objects.select_for_update().filter(run_id=turn.run.pk).first()
        if row is not None and row.consumed_by_id is not None:
            raise StateConsumed(f"run {turn.run_id}'s {framework} state was taken by "
                                f"continuation {row.consumed_by_id}; it is not stored again")
        AgentState.objects.update_or_create(
            run_id=turn.run.pk, defaults={"framework": framework, "state": state})


def saved_state(framework: str) -> str | None:
    """The state this turn's run stored when it paused before (a turn running again), or
    ``None``. Sync."""
    turn = current_turn()
    row = AgentState.objects.filter(run_id=turn.run.pk).first()
    if row is None:
        return None
    _check_framework(row, framework)
    return row.state


def consume_state(framework: str, paused_run_id: Any,
                  check: Callable[[str], Any] | None = None) -> Any:
    """Take the paused run's state for this turn's continuation run; return ``check(state)``
    (or the state). Sync. Refuses with ``StateConsumed`` when another run took it,
    ``InteractionConfigurationError`` when there is none; ``check`` refusing leaves the
    state untaken."""
    turn = current_turn()
    with fenced():
        row = AgentState.objects.select_for_update().filter(run_id=paused_run_id).first()
        if row is None:
            raise InteractionConfigurationError(
                f"run {paused_run_id} paused with no stored {framework} state: it was not "
                "paused by this agent")
        _check_framework(row, framework)
        _check_lineage(paused_run_id, turn.run.pk)
        if row.consumed_by_id not in (None, turn.run.pk):
            raise StateConsumed(f"run {paused_run_id}'s state was resumed by continuation "
                                f"{row.consumed_by_id}; it is not resumed again")
        checked = check(row.state) if check is not None else row.state
        if row.consumed_by_id is None:
            row.consumed_by_id = turn.run.pk
            row.consumed_at = timezone.now()
            row.save(update_fields=["consumed_by", "consumed_at"])
    return checked


def _check_lineage(paused_run_id: Any, run_id: Any) -> None:
    """Refuse a run its paused run's pauses did not make: the state goes only to the
    continuation their answers queued (each pause names it), never to a run row written
    another way, whatever answers it carries."""
    if not Pause.objects.filter(run_id=paused_run_id, continuation_id=run_id).exists():
        raise LineageRefused(
            f"run {run_id} is not the continuation the answers of run {paused_run_id}'s "
            "pauses made, so it is not handed that run's state")


def _check_framework(row: AgentState, framework: str) -> None:
    if row.framework != framework:
        raise InteractionConfigurationError(
            f"run {row.run_id} paused with a {row.framework} state, and a {framework} agent "
            "was asked to resume it: register the agent that paused it")


def _check_storable(framework: str, state: str) -> None:
    problem = (f"is {len(state):,} characters, over {MAX_STATE_CHARS:,}"
               if len(state) > MAX_STATE_CHARS else
               f"contains {unstorable(state)}" if unstorable(state) else "")
    if problem:
        raise InteractionConfigurationError(
            f"the {framework} state of run {current_turn().run_id} {problem}, and cannot be "
            "stored, so the turn cannot pause")
