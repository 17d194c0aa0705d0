"""Tool calls recorded once per root run and call id, whatever the framework.

Each adapter's fenced tool (``fencing.fenced_tool`` for LangGraph,
``pydantic_ai.fenced_tool``, ``openai_agents.fenced_function_tool``) runs its
function through ``record_once``: the first call runs inside the run's fence
(``turns.fenced()``), so the function's writes and the ``ToolResult`` row commit
together, only while this worker holds the run's lease; a later call with the
same call id in the same root run returns the recorded result instead of running
again (the framework resumed a state twice, a retried turn asked the model again).

A call is the call id, the tool's name and its arguments: a call id that comes
back with another name or other arguments is another call, and replaying the first
one's result would skip it silently. It is refused (``ToolCallMismatch``) before
anything runs; so is a call id that cannot key a record (empty, over 200
characters, or holding text no database stores).
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Iterable
from typing import Any

from asgiref.sync import async_to_sync
from django.utils import timezone

from ..exceptions import InteractionConfigurationError, ToolCallMismatch
from ..jsontext import unstorable
from ..models import ToolResult
from ..turns import TurnContext, current_turn, fenced

__all__ = ["args_digest", "as_json", "completed_call", "partial_call", "record_once",
           "refuse_recorded_ids", "root_run_of"]

#: ``ToolResult.tool_call_id``'s length.
MAX_CALL_ID = 200


def record_once(name: str, call_id: str, args: Any, call: Callable[[], Any]) -> Any:
    """Run ``call`` fenced and record its result, or replay the result recorded before.

    Sync; call it on the turn's database thread. ``args`` are the call's
    arguments as the model gave them (any JSON value), kept as a digest.
    """
    recorded = completed_call(name, call_id, args)
    if recorded is not None:
        return recorded.result
    return run_and_record(name, call_id, args, call)


def completed_call(name: str, call_id: str, args: Any) -> ToolResult | None:
    """The completed record of this call in the turn's root run, or ``None``.

    Raises ``ToolCallMismatch`` when the call id is unusable, or was recorded for
    another tool or other arguments.
    """
    check_call_id(call_id)
    recorded = ToolResult.objects.filter(root_run_id=root_run_of(current_turn()),
                                         tool_call_id=call_id).first()
    if recorded is None:
        return None
    digest = args_digest(args)
    if recorded.name != name or (recorded.args_digest and recorded.args_digest != digest):
        raise ToolCallMismatch(
            f"tool call {call_id!r} was recorded for {recorded.name!r} with other arguments "
            f"and comes again as a call of {name!r}: a model's tool call ids must be unique "
            "within a run, so the second call is refused rather than answered with the "
            "first one's result")
    return recorded if recorded.is_completed else None


def refuse_recorded_ids(call_ids: Iterable[str]) -> None:
    """Refuse a step that proposes, for a person to approve, a call id this conversation has
    a record of. With other arguments it could never run (``completed_call`` would refuse
    it after the approval); with the same ones it would replay the first call's result
    and a reviewer would have approved a refund that is never made. Sync; call it before
    the step pauses, with ids the adapter has checked (``check_call_id``)."""
    ids = list(call_ids)
    recorded = sorted(ToolResult.objects.filter(
        root_run_id=root_run_of(current_turn()), tool_call_id__in=ids,
    ).values_list("tool_call_id", flat=True))
    if recorded:
        raise ToolCallMismatch(
            f"the model proposed tool call id(s) {recorded} again, which this conversation "
            "ran already: a call id names one call, so the step is refused before a person "
            "is asked to approve it")


def run_and_record(name: str, call_id: str, args: Any, call: Callable[[], Any]) -> Any:
    """Run ``call`` inside the run's fence and store its result with it (as JSON)."""
    turn = current_turn()
    with fenced():
        result = as_json(call(), name)
        ToolResult.objects.update_or_create(
            root_run_id=root_run_of(turn), tool_call_id=call_id,
            defaults={"name": name, "args_digest": args_digest(args), "result": result,
                      "run_id": turn.run.pk, "completed_at": timezone.now()})
    return result


def check_call_id(call_id: Any) -> None:
    """Refuse a call id that cannot key a record: not text, empty, too long, unstorable."""
    problem = (
        "is not text" if not isinstance(call_id, str) else
        "is empty" if not call_id else
        f"is longer than {MAX_CALL_ID} characters" if len(call_id) > MAX_CALL_ID else
        f"contains {unstorable(call_id)}" if unstorable(call_id) else "")
    if problem:
        raise ToolCallMismatch(
            f"tool call id {str(call_id)[:40]!r} {problem}: a fenced tool records its call "
            "by the model's call id, so the call is refused")


def args_digest(args: Any) -> str:
    """SHA-256 of ``args`` as canonical JSON (sorted keys): the same arguments, the same
    digest, in whatever order the model wrote them."""
    text = json.dumps(args, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def root_run_of(turn: TurnContext) -> Any:
    """The conversation's first run: the key a call is recorded under."""
    return turn.run.root_id or turn.run.pk


def partial_call(fn: Callable[..., Any], args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> Callable[[], Any]:
    """``fn(*args, **kwargs)`` as a sync call; an async ``fn`` runs through ``async_to_sync``."""
    if inspect.iscoroutinefunction(fn):
        return lambda: async_to_sync(fn)(*args, **kwargs)
    return lambda: fn(*args, **kwargs)


def as_json(value: Any, name: str) -> Any:
    """``value`` as stored and replayed (a JSON round trip); refuses what is not JSON."""
    try:
        stored = json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise InteractionConfigurationError(
            f"fenced tool {name!r} returned a {type(value).__name__}, which is not JSON "
            f"({exc}); a fenced tool's result is recorded, so it must be JSON") from exc
    problem = unstorable(stored)
    if problem:
        raise InteractionConfigurationError(
            f"fenced tool {name!r} returned text with {problem}, which cannot be stored")
    return stored
