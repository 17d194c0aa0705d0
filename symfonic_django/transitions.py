"""The state machines' one way of writing a status: tables of edges and one guarded move.

A run, a pause and a notification delivery each declare the moves of their row's
``status`` as a table of named edges (``Edge``: ``runs.EDGES``, ``pauses.EDGES``,
``notifications.EDGES``) and take them only through ``Machine.move``: one
conditional UPDATE::

    UPDATE ... SET status = <target>, updated_at = <now>, ...
     WHERE pk IN (<ids>) AND status IN (<sources>) [AND <guard>]

so of two writers racing over a row exactly one moves it, on every backend, and
the count of rows it moved tells the caller whether it won. Nothing else in the
package writes a ``status`` (``tests/test_runs.py`` parses the package to hold it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from django.db.models import Manager, Model, Q

M = TypeVar("M", bound=Model)


@dataclass(frozen=True, init=False)
class Edge:
    """An allowed move of a status: from any of ``sources`` (one, or several) to ``target``."""

    sources: frozenset[str]
    target: str

    def __init__(self, sources: str | Iterable[str], target: str) -> None:
        object.__setattr__(self, "sources",
                           frozenset({sources} if isinstance(sources, str) else sources))
        object.__setattr__(self, "target", target)


@dataclass(frozen=True)
class Machine(Generic[M]):
    """The allowed edges of one model's ``status``, by name, and the move along them."""

    objects: Manager[M]
    edges: Mapping[str, Edge]

    def move(self, ids: Iterable[Any], edge: str, *, now: datetime, guard: Q | None = None,
             **changes: Any) -> int:
        """Take ``edge`` for those of the rows ``ids`` at one of its sources (and matching
        ``guard``), writing ``changes`` and ``updated_at=now`` with the status; returns how
        many moved.

        The one place a status is written.
        """
        step = self.edges[edge]
        matching = self.objects.filter(pk__in=list(ids), status__in=sorted(step.sources))
        if guard is not None:
            matching = matching.filter(guard)
        return matching.update(status=step.target, updated_at=now, **changes)

    def move_rows(self, rows: Sequence[M], edge: str, *, now: datetime, guard: Q | None = None,
                  **changes: Any) -> bool:
        """``move`` for ``rows`` the caller holds: whether every one of them moved. Only
        then are they left as the UPDATE left their rows (the status, ``updated_at`` and
        ``changes``), without reading them back; ``changes`` must be values, not expressions.
        """
        if self.move([row.pk for row in rows], edge, now=now, guard=guard,
                     **changes) != len(rows):
            return False
        for row in rows:
            for name, value in {"status": self.edges[edge].target, "updated_at": now,
                                **changes}.items():
                setattr(row, name, value)
        return True
