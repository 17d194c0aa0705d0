"""The continuation's answers, checked against the thread, as the graph's resume (strict resume).

The continuation runs once every pause of the paused turn is resolved. It
resumes with ``Command(resume={interrupt_id: answer, ...})`` under strict
resume, after checking the answers against the thread's pending interrupts,
which LangGraph itself does not (checked on langgraph 1.2.24): an unknown or
already used interrupt id, a finished thread, and a ``HITLResponse`` whose
decisions do not match the pending action requests are refused with
``ResumeRefused`` before the graph is touched, and the turn ends
``turn.failed`` with code ``resume_refused`` and a message that starts with
the refusal's reason (``refusal_message``). The pauses' answers were already
checked against their prompts when they were given (``pauses.validate_answer``);
the check here is against the thread, which is what the graph will read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asgiref.sync import sync_to_async
from langchain_core.runnables import RunnableConfig
from langgraph.pregel import Pregel
from langgraph.types import Interrupt, StateSnapshot

from ... import hitl
from ...exceptions import InvalidAnswer, ResumeRefused
from ...models import Pause, PauseKind
from ...pauses import TIMEOUT_ANSWER
from .prompts import pause_request

__all__ = ["STRICT_RESUME", "refusal_message", "resume_map", "resume_value"]

#: LangGraph's strict resume: a resume naming an interrupt that is not pending raises
#: ``UnknownInterruptError`` instead of being ignored (or landing on the node's next
#: interrupt). Its only switch is this internal config key
#: (``langgraph._internal._constants.CONFIG_KEY_STRICT_RESUME``; the public one is in the
#: Server SDK): the one private name this package uses, spelled out rather than imported
#: from a private module, and pinned by a test against LangGraph's own constant.
STRICT_RESUME = "__pregel_strict_resume"

#: What an approval that expired (``ON_EXPIRE="resume"``) tells the graph of each action.
TIMEOUT_MESSAGE = "The approval timed out."


async def resume_map(graph: Pregel[Any, Any, Any, Any], config: RunnableConfig,
                     state: StateSnapshot, answers: dict[str, Any],
                     args_schemas: Mapping[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The resume map, by interrupt id, or ``ResumeRefused`` (nothing is touched)."""
    pending = {interrupt.id: interrupt for interrupt in state.interrupts}
    if not pending and not state.next:
        raise ResumeRefused("The graph's thread has finished: it is waiting for no answer.",
                            reason="thread_finished")
    keys = await sync_to_async(_interrupt_ids)(list(answers))
    resume: dict[str, Any] = {}
    for pause_id, answer in answers.items():
        interrupt_id = keys.get(pause_id, "")
        interrupt = pending.get(interrupt_id)
        if interrupt is None:
            if interrupt_id and await _was_asked(graph, config, interrupt_id):
                raise ResumeRefused(
                    f"Interrupt {interrupt_id} (pause {pause_id}) was answered already, "
                    "or abandoned: the graph is no longer waiting for it.",
                    reason="used_interrupt")
            raise ResumeRefused(
                f"Pause {pause_id} answers no interrupt this graph's thread ever asked "
                f"({interrupt_id or 'no interrupt id'}).", reason="unknown_interrupt")
        resume[interrupt_id] = resume_value(interrupt, answer, args_schemas)
    if not resume:
        raise ResumeRefused("The continuation carries no answer.", reason="unknown_interrupt")
    return resume


async def _was_asked(graph: Pregel[Any, Any, Any, Any], config: RunnableConfig,
                     interrupt_id: str) -> bool:
    """Whether the thread ever asked ``interrupt_id``, in any of its checkpoints."""
    async for snapshot in graph.aget_state_history(config):
        if any(interrupt.id == interrupt_id for interrupt in snapshot.interrupts):
            return True
    return False


def _interrupt_ids(pause_ids: list[str]) -> dict[str, str]:
    """Each pause's interrupt id (its idempotency key), by pause id."""
    return {str(pk): key for pk, key in
            Pause.objects.filter(pk__in=pause_ids).values_list("pk", "idempotency_key")}


def resume_value(interrupt: Interrupt, answer: Any,
                 args_schemas: Mapping[str, dict[str, Any]] | None = None) -> Any:
    """What the graph is resumed with for ``interrupt``, from its pause's ``answer``.

    An approval's ``HITLResponse`` is checked against the interrupt's own
    request (number and allowed types of decisions, edits against
    ``args_schemas`` as ``pause_request`` applies them) and raises
    ``ResumeRefused`` (``decisions_mismatch``) if it does not fit. An approval
    that expired (``ON_EXPIRE="resume"``) rejects every action, or responds
    where only that is allowed; a question gets the app's timeout answer as it is.
    """
    request = pause_request(interrupt, args_schemas)
    if request.kind == PauseKind.QUESTION:
        return answer
    if answer == TIMEOUT_ANSWER:
        answer = _timed_out(request.prompt)
    try:
        decisions: list[dict[str, Any]] = hitl.validate_response(request.prompt,
                                                                answer)["decisions"]
    except InvalidAnswer as exc:
        raise ResumeRefused(
            f"The answer does not fit the approval the graph is waiting for: {exc.detail}",
            reason="decisions_mismatch") from exc
    if request.shape == "tool_approval":
        return decisions[0]
    if request.shape == "agent_inbox":
        responses = [_human_response(d) for d in decisions]
        return responses if isinstance(interrupt.value, list) else responses[0]
    return {"decisions": decisions}


def _timed_out(prompt: dict[str, Any]) -> dict[str, Any]:
    decisions = []
    for request in prompt["action_requests"]:
        allowed = hitl.review_config(prompt, request["name"]).get("allowed_decisions", [])
        kind = next((k for k in ("reject", "respond") if k in allowed), None)
        if kind is None:
            raise ResumeRefused(
                f"The approval of {request['name']!r} expired, and it allows neither reject "
                "nor respond, so the graph has no way to be told.", reason="decisions_mismatch")
        decisions.append({"type": kind, "message": TIMEOUT_MESSAGE})
    return {"decisions": decisions}


def _human_response(decision: dict[str, Any]) -> dict[str, Any]:
    """A ``HITLResponse`` decision as Agent Inbox's ``HumanResponse``."""
    kind = decision["type"]
    if kind == "edit":
        action = decision["edited_action"]
        return {"type": "edit", "args": {"action": action["name"], "args": action["args"]}}
    if kind == "respond":
        return {"type": "response", "args": decision["message"]}
    return {"type": "accept" if kind == "approve" else "ignore", "args": None}



def refusal_message(refusal: ResumeRefused) -> str:
    """The ``turn.failed`` (and ``run.error``) message of a refused resume: its reason first.

    ``"<reason>: <detail>"``, the reason one of ``ResumeRefused.REASONS``, so a
    client reads it as ``message.partition(": ")[0]``. The reason goes in the
    message because ``turn.failed``'s data is pinned to ``code`` and ``message``
    (docs/design.md section 6), and ``run.error`` copies them.
    """
    return f"{refusal.reason}: {refusal.detail}"
