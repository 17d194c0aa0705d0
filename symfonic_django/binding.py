"""Which run is pausing: the run identity context and ``current_run_binding``.

The turn driver (``turns.py``) sets a ``RunIdentity`` in a context variable for the length of a
turn. ``current_run_binding()`` copies the two id strings out of it — and
nothing else — into a ``PauseBinding`` with the deployment's own metadata
(rules B1–B6 of docs/design.md section 5).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .exceptions import InteractionConfigurationError


class RunIdentity:
    """The ids of the active turn. Held only by the run context (weakref-able)."""

    __slots__ = ("run_id", "root_run_id", "__weakref__")

    def __init__(self, run_id: str, root_run_id: str | None = None) -> None:
        self.run_id = str(run_id)
        self.root_run_id = str(root_run_id) if root_run_id else None

    def __repr__(self) -> str:
        return f"RunIdentity(run_id={self.run_id!r}, root_run_id={self.root_run_id!r})"


_current: contextvars.ContextVar[RunIdentity | None] = contextvars.ContextVar(
    "symfonic_run_identity", default=None
)


@contextmanager
def run_context(identity: RunIdentity) -> Iterator[RunIdentity]:
    """Make ``identity`` the active run inside the block."""
    token = _current.set(identity)
    try:
        yield identity
    finally:
        _current.reset(token)


@dataclass(frozen=True, slots=True)
class PauseBinding:
    """A pause's tie to its run: two id strings plus deployment-owned fields."""

    pin: Any
    scope: Any
    run_id: str
    root_run_id: str
    session_id: str
    thread_id: str
    checkpoint_id: str | None


def current_run_binding(
    *,
    pin: Any = None,
    scope: Any = None,
    session_id: str = "",
    thread_id: str = "",
    checkpoint_id: str | None = None,
) -> PauseBinding:
    """Bind a pause to the active run, with the caller's own metadata.

    Call it from inside the ``binding`` callable given to ``request_pause``,
    which is invoked while the turn runs. ``run_id`` is that turn's id and
    ``root_run_id`` its root, or the run itself for a top-level turn. The run
    ids cannot be passed in, so they can never be overridden. The binding
    proves nothing: a run nobody issued is refused at resume, not here.

    Raises ``InteractionConfigurationError`` when no run is active.
    """
    identity = _current.get()
    if identity is None or not identity.run_id:
        raise InteractionConfigurationError(
            "current_run_binding() was called but no run is active in this "
            "context, so there is no run to bind the pause to; call it from "
            "the binding callable, which the pause stage invokes during a turn"
        )
    run_id = identity.run_id
    root_run_id = identity.root_run_id or run_id
    del identity  # keep no reference to the identity object (rule B3)
    return PauseBinding(
        pin=pin,
        scope=scope,
        run_id=run_id,
        root_run_id=root_run_id,
        session_id=session_id,
        thread_id=thread_id,
        checkpoint_id=checkpoint_id,
    )
