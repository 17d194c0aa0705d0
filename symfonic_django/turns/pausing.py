"""Pausing the running turn for a person: ``request_pause``."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from asgiref.sync import sync_to_async

from .. import events as ev
from .. import hitl, pauses
from ..binding import PauseBinding, current_run_binding
from ..exceptions import InteractionConfigurationError
from ..models import Pause, PauseKind
from .context import current_turn

log = logging.getLogger(__name__)


async def request_pause(
    *, kind: str, prompt: Any, answer_schema: Any = None, ttl: float | timedelta | None = None,
    idempotency_key: str | None = None, binding: Callable[[], PauseBinding] | None = None,
) -> Pause:
    """Pause the running turn for a person; returns the pause with ``.token`` set.

    Call it inside an agent turn. ``binding`` is a zero-argument callable
    returning a ``PauseBinding`` (default: ``current_run_binding()``); it is
    invoked here, while the turn runs. Re-running a step with the same
    ``idempotency_key`` returns the same pause (answered or not); a turn that
    gets back a pause of its own run ends paused on it, as when it asked first.
    An approval with an action that has no ``args_schema`` is logged as a warning,
    once per agent and process: nothing checks what a reviewer edits it to.
    """
    turn = current_turn()
    turn.check_held()
    bound = (binding or current_run_binding)()
    if not isinstance(bound, PauseBinding):
        raise InteractionConfigurationError(
            f"the binding callable must return a PauseBinding, got {type(bound).__name__}")
    pause, created = await sync_to_async(pauses.create_pause)(
        run=turn.run, binding=bound, kind=kind, prompt=prompt, answer_schema=answer_schema,
        ttl=ttl, idempotency_key=idempotency_key)
    pause.token = pauses.token_for(pause)  # type: ignore[attr-defined]
    if pause.run_id == turn.run.pk and str(pause.pk) not in turn.requested:
        # Its own pause, new or asked again (a retried turn re-running its step): the
        # turn ends paused on it, and settling it then sees whether it was answered.
        turn.requested.append(str(pause.pk))
    if created:
        await turn.emit(ev.PauseRequested(
            pause_id=str(pause.pk), kind=pause.kind, prompt=pause.prompt,
            expires_at=pause.expires_at.isoformat().replace("+00:00", "Z")))
    _warn_if_unchecked(turn.run.agent, pause)
    return pause


#: The agents already warned of an approval without ``args_schema``, in this process.
_warned_unchecked: set[str] = set()


def _warn_if_unchecked(agent: str, pause: Pause) -> None:
    """Log, once per agent and process, an approval whose actions have no ``args_schema``:
    nothing checks what a reviewer edits them to (nor what the agent proposed)."""
    if pause.kind != PauseKind.APPROVAL or agent in _warned_unchecked:
        return
    names = [request["name"] for request in pause.prompt["action_requests"]
             if "args_schema" not in hitl.review_config(pause.prompt, request["name"])]
    if names:
        _warned_unchecked.add(agent)
        log.warning(
            "agent %r asked to approve %s without an args_schema: nothing checks the "
            "arguments a reviewer edits them to, and the review page shows a JSON editor "
            "with a warning. Give each action's review config an args_schema (a LangGraph "
            "agent: args_schemas=, or a tool with typed arguments). Logged once per agent.",
            agent, ", ".join(dict.fromkeys(names)))
