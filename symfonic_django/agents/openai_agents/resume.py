"""The continuation's answers, checked against the stored ``RunState`` and applied once.

The SDK itself accepts, silently (checked on openai-agents 0.24.0):

- a decision for an item that is not pending (another call id, or an item taken
  from a state restored with another ``Agent`` object): the run resumes and
  hands back the same interruptions, nothing run and nothing said;
- an approve then a reject of one item: the last decision wins;
- a resume with no decision: the same interruptions, again;
- a resume of a completed state: the model is asked again.

``decide`` runs inside ``stored_state.consume_state``'s ``check``, in the
transaction that marks the state taken, before it is marked. It restores the
state with the turn's own agent and applies the decisions to the items **that
state** holds (``state.get_interruptions()``), one decision per item, taken from
the one pause asked about exactly those calls. So a decision for an item of
another agent object, or two decisions for one item, cannot be written; and
what does not fit is refused with ``ResumeRefused`` (the turn ends ``turn.failed``
with code ``resume_refused``, its message starting with the reason) while the
state stays untaken and no row changes:

- ``thread_finished``: the state waits for no decision (it completed);
- ``unknown_interrupt``: the continuation carries no answer, or answers a pause
  that did not ask about the state's pending calls;
- ``decisions_mismatch``: the answer's actions are not the state's calls (in
  name, arguments or number), or a decision is one the SDK cannot carry (edit).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agents import Agent, RunState, ToolApprovalItem
from asgiref.sync import async_to_sync

from ...agent_protocol import EXPIRED, AnsweredPause, ResumedTurn, ReviewedAction
from ...exceptions import InvalidAnswer, ResumeRefused
from ...models import Pause
from .prompts import call_args, pause_key

__all__ = ["Decided", "TIMEOUT_MESSAGE", "decide", "refusal_message"]

#: What the model is told of each call of an approval that expired (``ON_EXPIRE="resume"``).
TIMEOUT_MESSAGE = "The approval timed out."


@dataclass(frozen=True)
class Decided:
    """A restored state with a decision on each of its pending calls."""

    state: RunState[Any, Agent[Any]]
    #: The call ids that will not run (rejected, responded, expired): their outputs are
    #: the reviewer's words, streamed as ``tool.completed`` with status "error".
    refused: frozenset[str]


def decide(agent: Agent[Any], state_text: str, continuation: ResumedTurn) -> Decided:
    """The stored state restored with ``agent``, the continuation's decisions applied.

    Sync (``consume_state``'s ``check``): the SDK's async restore runs through
    ``async_to_sync``, on the turn's event loop. Raises ``ResumeRefused``.
    """
    state: RunState[Any, Agent[Any]] = async_to_sync(RunState.from_string)(agent, state_text)
    items = state.get_interruptions()
    if not items:
        raise ResumeRefused("The run's stored state has finished: it waits for no decision, "
                            "and resuming it would ask the model again.",
                            reason="thread_finished")
    pause = _answered_pause(continuation, pause_key([str(i.call_id) for i in items]))
    actions = _actions_of(pause, items)
    refused = set()
    for item, action in zip(items, actions, strict=True):
        if action.approved:
            state.approve(item)
        else:
            refused.add(str(item.call_id))
            state.reject(item, rejection_message=_message(action))
    return Decided(state=state, refused=frozenset(refused))


def _answered_pause(continuation: ResumedTurn, key: str) -> AnsweredPause:
    """The one answered pause that asked about the state's pending calls (keyed by them)."""
    answered = continuation.pauses
    if not answered:
        raise ResumeRefused("The continuation carries no decision: the SDK would hand back the "
                            "same interruptions.", reason="unknown_interrupt")
    keys = dict(Pause.objects.filter(pk__in=list(answered)).values_list("pk", "idempotency_key"))
    stray = sorted(str(pk) for pk, given in keys.items() if given != key)
    stray += sorted(str(pk) for pk in continuation.answers if str(pk) not in answered)
    if stray:
        raise ResumeRefused(
            f"Pause(s) {', '.join(stray)} did not ask about the calls the stored state is "
            "waiting for: their decisions would be applied to no pending item.",
            reason="unknown_interrupt")
    [pause] = answered.values()  # one key, one pause per root run and key
    return pause


def _actions_of(pause: AnsweredPause, items: Sequence[ToolApprovalItem]) -> list[ReviewedAction]:
    """The pause's actions, each checked against the pending item it decides."""
    try:
        actions = list(pause.actions)
    except InvalidAnswer as exc:
        raise ResumeRefused(f"The answer does not fit its approval: {exc.detail}",
                            reason="decisions_mismatch") from exc
    proposed = [(a.name, a.proposed_args) for a in actions]
    pending = [(str(i.tool_name), call_args(i)) for i in items]
    if proposed != pending:
        raise ResumeRefused(
            f"Pause {pause.pause_id} proposed {proposed}, and the stored state waits for "
            f"{pending}: the decisions are not applied to other calls.",
            reason="decisions_mismatch")
    edited = [a.name for a in actions if a.edited]
    if edited:
        raise ResumeRefused(
            f"An edit of {edited} cannot be carried out: the SDK runs an approved call only "
            "with the arguments it was proposed with.", reason="decisions_mismatch")
    return actions


def _message(action: ReviewedAction) -> str | None:
    """What the model reads in place of the call's result; ``None`` for the SDK's default."""
    if action.decision == EXPIRED:
        return TIMEOUT_MESSAGE
    return action.message or None


def refusal_message(refusal: ResumeRefused) -> str:
    """``"<reason>: <detail>"``: the ``turn.failed`` message, read as LangGraph's is."""
    return f"{refusal.reason}: {refusal.detail}"
