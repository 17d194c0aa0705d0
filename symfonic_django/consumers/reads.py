"""What a watcher reads from the database: a new watcher's first events, later rows, the end.

The database is the stream: every read is of ``TurnEvent`` rows after the last
``seq`` a watcher was sent, in wire form (``delivery.wire_events``), with tokens
only for a watcher who may hold them.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from channels.db import database_sync_to_async

from ..delivery import may_hold_tokens, wire_events
from ..events import rows_after
from ..models import Run, RunStatus, TurnEvent
from ..tokens import WatchTicket
from .access import CLOSE_NOT_FOUND, watcher

#: Rows read per database round trip.
BATCH = 500

#: Statuses in which a run's stream has ended (until an operator retries a failed run).
ENDED = frozenset({RunStatus.PAUSED, RunStatus.COMPLETED, RunStatus.FAILED})


def wire_rows_after(run: Run, after: int, with_tokens: bool) -> list[dict[str, Any]]:
    """The run's first ``BATCH`` events after ``after``, in wire form."""
    return wire_events(rows_after(run.pk, after, BATCH), run, with_tokens=with_tokens)


def open_stream(run_id: uuid.UUID, user: Any, ticket: WatchTicket | None, after: int,
                ) -> tuple[Run | None, int | None, Any, bool, list[dict[str, Any]], bool]:
    """Everything a new watcher needs: the run, a refusal, the user whose access is
    rechecked (``None``: nobody to recheck), tokens or not, the first events, and
    whether the turn had already ended.

    A session watcher is ``user``; a ticket holder is the user the ticket was
    issued to, looked up afresh (or, for a spent pause's ticket, nobody: it is
    sent no token). The turn had ended by ``after`` when the run is in a final
    status and nothing is stored after ``after`` (a run an operator retried is
    queued again, and its stream goes on).
    """
    run = Run.objects.filter(pk=run_id).only(
        "id", "root_id", "scope_key", "status", "started_by_id").first()
    code, judged = watcher(run, run_id, user, ticket)
    if code is not None or run is None:
        return run, code if code is not None else CLOSE_NOT_FOUND, None, False, [], False
    with_tokens = may_hold_tokens(judged, run)
    events = wire_rows_after(run, after, with_tokens)
    return (run, None, judged.pk if judged is not None else None, with_tokens, events,
            not events and run.status in ENDED)


def ended_by(run: Run, seq: int) -> bool:
    """Whether the run's turn has ended with nothing stored after ``seq``: its terminal
    event (written in the same transaction as its final status) is at or before ``seq``."""
    return (Run.objects.filter(pk=run.pk, status__in=ENDED).exists()
            and not TurnEvent.objects.filter(run_id=run.pk, seq__gt=seq).exists())


_reads: dict[tuple[Any, ...], asyncio.Future[tuple[list[dict[str, Any]], list[str]]]] = {}


async def read_rows(run: Run, after: int, with_tokens: bool,
                    ) -> tuple[list[dict[str, Any]], list[str]]:
    """The events after ``after`` and their JSON text, read once for every watcher that asks.

    When a doorbell is lost, every watcher of the run in this process asks at
    once for the same rows; one query (and one encoding) answers them all,
    instead of one each queued on the single thread database calls share.
    """
    key = (id(asyncio.get_running_loop()), str(run.pk), after, with_tokens)
    pending = _reads.get(key)
    if pending is None:
        async def read() -> tuple[list[dict[str, Any]], list[str]]:
            events = await database_sync_to_async(wire_rows_after)(run, after, with_tokens)
            return events, [json.dumps(event) for event in events]

        pending = _reads[key] = asyncio.ensure_future(read())
        pending.add_done_callback(lambda _: _reads.pop(key, None))
    return await asyncio.shield(pending)  # one watcher leaving must not cancel the others' read
