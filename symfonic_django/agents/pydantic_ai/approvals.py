"""The paused run's state, and the answers as Pydantic AI's ``DeferredToolResults``.

**The state** a pause stores (``agents.stored_state``, framework
``"pydantic-ai"``) is one JSON object (``dump_state``): the run's message
history (``ModelMessagesTypeAdapter``), the approvals it waits for (id, tool,
the model's arguments, in order), the pause's key and its prompt. A turn that
runs again asks the same pause from it without asking the model again.

**The answers** are checked against that state inside ``consume_state``'s
``check`` (``resumption``), so a refusal leaves the state untaken and every row
as it was; the continuation's turn then fails ``resume_refused``
(``ResumeRefused``), its reason first in the message:

- ``unknown_interrupt``: the continuation's pauses are not the one pause this
  state asked (its idempotency key);
- ``decisions_mismatch``: the pause's actions are not the state's approvals
  (number, tool, arguments), or an edit is not one the tool's own validator
  accepts, or the tool allows no edit (not found among the agent's tools, or
  with a custom ``args_validator`` function). Pydantic AI would skip such an
  ``override_args`` without an error, the model told of a validation failure
  and the history keeping the original arguments.

Every pending call is answered by construction: one decision per action, one
action per approval. The decisions map to Pydantic AI's: ``approve`` to
``ToolApproved()``, ``edit`` to ``ToolApproved(override_args=...)``, ``reject``
and ``respond`` to ``ToolDenied`` with the reviewer's words (what the model
reads), and an approval that expired unanswered (``ON_EXPIRE="resume"``) to
``ToolDenied`` saying so. Who answered is in the app's audit, whatever Pydantic
AI keeps.

**During the resumed run**, ``ApprovedCallsGuard`` fails the turn if an approved
call's arguments fail Pydantic AI's own validation anyway (a validation hook of
the run, a validator whose verdict changed): the tool would be skipped silently.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.toolsets import ToolsetTool

from ...agent_protocol import EXPIRED, AnsweredPause, ReviewedAction
from ...exceptions import InvalidAnswer, ResumeRefused
from ...models import Pause
from .prompts import call_args, pause_key
from .tools import may_edit

__all__ = ["FRAMEWORK", "ApprovedCallsGuard", "PausedState", "Resumption", "dump_state",
           "load_state", "resumption"]

#: The framework name the state is stored under.
FRAMEWORK = "pydantic-ai"
#: What the model reads of a call whose approval expired unanswered.
TIMEOUT_MESSAGE = "The approval timed out."
#: What the model reads of a call rejected without a word.
REJECTED_MESSAGE = "The reviewer rejected this call."


@dataclass(frozen=True)
class PausedState:
    """A paused run's stored state, read back."""

    key: str
    messages: list[ModelMessage]
    approvals: list[dict[str, Any]]
    prompt: dict[str, Any]


@dataclass(frozen=True)
class Resumption:
    """What the continuation resumes with: the history, the results, the approved ids."""

    messages: list[ModelMessage]
    results: DeferredToolResults
    approved: frozenset[str]
    #: The reviewers' edits, by call id.
    edits: dict[str, dict[str, Any]]


def dump_state(messages: list[ModelMessage], requests: DeferredToolRequests,
               prompt: dict[str, Any]) -> str:
    """The state a pause on ``requests`` stores (module docstring)."""
    approvals = [{"id": call.tool_call_id, "name": call.tool_name, "args": call_args(call)}
                 for call in requests.approvals]
    return json.dumps({
        "key": pause_key([call.tool_call_id for call in requests.approvals]),
        "messages": ModelMessagesTypeAdapter.dump_python(messages, mode="json"),
        "approvals": approvals,
        "prompt": prompt,
    })


def load_state(text: str) -> PausedState:
    data = json.loads(text)
    return PausedState(key=data["key"],
                       messages=ModelMessagesTypeAdapter.validate_python(data["messages"]),
                       approvals=data["approvals"], prompt=data["prompt"])


def resumption(text: str, pauses: Mapping[str, AnsweredPause],
               tools: Mapping[str, ToolsetTool[Any]]) -> Resumption:
    """The answers of ``pauses`` as the results the state's run resumes with, or
    ``ResumeRefused`` (module docstring). Sync: it reads the pauses' keys."""
    state = load_state(text)
    actions = _actions_of(_asked_pause(state, pauses))
    if [(a.name, a.proposed_args) for a in actions] != [
            (call["name"], call["args"]) for call in state.approvals]:
        raise ResumeRefused("The pause's actions are not the calls the run waits for.",
                            reason="decisions_mismatch")
    approvals = {call["id"]: _decision(call, action, tools)
                 for call, action in zip(state.approvals, actions, strict=True)}
    edits = {i: d.override_args for i, d in approvals.items()
             if isinstance(d, ToolApproved) and d.override_args is not None}
    return Resumption(
        messages=state.messages, results=DeferredToolResults(approvals=dict(approvals)),
        approved=frozenset(i for i, d in approvals.items() if isinstance(d, ToolApproved)),
        edits=edits)


def _asked_pause(state: PausedState, pauses: Mapping[str, AnsweredPause]) -> AnsweredPause:
    """The one pause of the continuation, if it is the one this state asked (its key)."""
    keys = {str(pk): key for pk, key in
            Pause.objects.filter(pk__in=list(pauses)).values_list("pk", "idempotency_key")}
    asked = [pause for pk, pause in pauses.items() if keys.get(str(pk)) == state.key]
    if len(pauses) != 1 or len(asked) != 1:
        raise ResumeRefused(
            f"The continuation's pauses ({', '.join(pauses) or 'none'}) are not the one pause "
            "this run's Pydantic AI state waits for.", reason="unknown_interrupt")
    return asked[0]


def _actions_of(pause: AnsweredPause) -> tuple[ReviewedAction, ...]:
    """The pause's actions and decisions, its answer checked against its prompt again."""
    try:
        return pause.actions
    except InvalidAnswer as exc:
        raise ResumeRefused(f"The pause's answer does not fit it: {exc.detail}",
                            reason="decisions_mismatch") from exc


def _decision(call: dict[str, Any], action: ReviewedAction,
              tools: Mapping[str, ToolsetTool[Any]]) -> ToolApproved | ToolDenied:
    if action.decision == "approve":
        return ToolApproved()
    if action.decision == "edit":
        edited = action.approved_args or {}
        _check_edit(call, edited, tools.get(call["name"]))
        return ToolApproved(override_args=edited)
    if action.decision == EXPIRED:
        return ToolDenied(TIMEOUT_MESSAGE)
    return ToolDenied(action.message or REJECTED_MESSAGE)


def _check_edit(call: dict[str, Any], edited: dict[str, Any],
                tool: ToolsetTool[Any] | None) -> None:
    """Refuse an edit the tool's own validator would not take (Pydantic AI would skip it)."""
    if tool is None or not may_edit(tool):
        raise ResumeRefused(
            f"Call {call['id']} of {call['name']!r} was edited, and the tool allows no edit here: "
            "it is not among the agent's tools, or its arguments are checked by a custom "
            "args_validator that needs the run.", reason="decisions_mismatch")
    try:
        tool.args_validator.validate_python(edited)
    except ValidationError as exc:
        raise ResumeRefused(
            f"The edit of call {call['id']} of {call['name']!r} is refused by the tool's own "
            f"validator: {_errors(exc)}", reason="decisions_mismatch") from None


def _errors(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}"
                     for e in exc.errors())


@dataclass
class ApprovedCallsGuard(AbstractCapability[Any]):
    """Fails the resumed run when an approved call's arguments fail validation in it.

    Pydantic AI would tell the model of the failure and never run the tool: an
    approval lost without a word. The turn fails ``resume_refused`` instead.
    """

    approved: frozenset[str] = frozenset()

    async def on_tool_validate_error(self, ctx: Any, *, call: Any, tool_def: Any, args: Any,
                                     error: ValidationError | ModelRetry) -> Any:
        if call.tool_call_id in self.approved:
            raise ResumeRefused(
                f"The approved call {call.tool_call_id} of {call.tool_name!r} failed the "
                f"tool's validation in the resumed run ({error}); it is not skipped silently.",
                reason="decisions_mismatch")
        raise error
