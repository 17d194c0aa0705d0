"""What a watcher is sent: stored events in their pinned wire form, tokens only to answerers.

A pause token is a bearer credential for answering (docs/design.md section 6,
"Who holds a token"). Events are stored without one; the surface that
delivers ``pause.requested`` (the websocket, the events API) mints a token
only for a watcher who may answer the run's pauses, judged afresh: an active
user who is the run's (still entitled) starter, through its session or its
watch ticket, or a reviewer with the answer permission in the run's scope.
Everyone else gets the event without ``token``: a user who may only read,
and the holder of a ticket from an anonymous ``resume/`` (it answered with a
token it already had; no later pause's token goes to a person nobody named).
"""

from __future__ import annotations

from typing import Any

from . import events as ev
from .models import Pause, Run, TurnEvent
from .pauses import token_for
from .scopes import is_active_user, may_answer, started_run


def may_hold_tokens(user: Any, run: Run) -> bool:
    """Whether ``user`` (``None``: nobody named), watching ``run``, is sent its pauses' tokens."""
    return is_active_user(user) and (may_answer(user, run.scope_key) or started_run(user, run))


def wire_events(rows: list[TurnEvent], run: Run, *, with_tokens: bool) -> list[dict[str, Any]]:
    """``rows`` of ``run`` in wire form; with ``with_tokens``, ``pause.requested`` has one.

    A token is minted only for a pause of the run's own scope (one bound to
    another scope could not be resumed with it anyway).
    """
    out = [ev.wire(row, run.root_run_id) for row in rows]
    asked = [m for m in out if m["type"] == ev.PauseRequested.type]
    if not asked or not with_tokens:
        return out
    found = Pause.objects.filter(pk__in=[m["data"].get("pause_id") for m in asked],
                                 scope_key=run.scope_key)
    pauses = {str(p.pk): p for p in found}
    for message in asked:
        pause = pauses.get(message["data"].get("pause_id"))
        if pause is not None:
            message["data"] = {**message["data"], "token": token_for(pause)}
    return out
