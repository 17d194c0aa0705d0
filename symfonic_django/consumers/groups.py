"""Joining and leaving a run's channel-layer group: the doorbell, never the stream.

A layer that fails or hangs costs a watcher only its doorbell: the stream polls
the database (``stream.RunStreamConsumer.poll``) and joins again once rows move.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import Any

from ..events import LAYER_TIMEOUT

log = logging.getLogger(__name__)

#: Group operations (join, leave) in flight at once per event loop. channels_redis takes a
#: connection from redis-py's asyncio pool for each, and that pool raises
#: ``MaxConnectionsError`` rather than wait once 100 (its default) are in use: 300 sockets
#: closing at once left up to 280 members in the group. Taking turns keeps a burst well
#: inside the pool, beside the layer's own receive and the doorbells it sends.
GROUP_OPERATIONS = 20
#: Attempts at leaving a group (a quarter, then half a second apart): a failure (a Redis
#: restart) must not leave a member behind when a second try would have removed it.
LEAVE_ATTEMPTS = 3

_group_turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary())


def group_turn() -> asyncio.Semaphore:
    """The running loop's turn at a group operation (``GROUP_OPERATIONS`` at once)."""
    loop = asyncio.get_running_loop()
    turn = _group_turns.get(loop)
    if turn is None:
        turn = _group_turns[loop] = asyncio.Semaphore(GROUP_OPERATIONS)
    return turn


async def join(layer: Any, group: str, channel: str) -> None:
    """Add ``channel`` to ``group``; a layer that fails or hangs costs only the doorbell.

    Right after a Redis restart a pooled connection can fail or hang; the
    watcher then reads the rows by polling, and joins again once they move.
    """
    try:
        async with group_turn():
            await asyncio.wait_for(layer.group_add(group, channel), LAYER_TIMEOUT)
    except Exception:
        log.warning("could not join %s; polling the database instead", group, exc_info=True)


async def leave(layer: Any, group: str, channel: str) -> None:
    """Take ``channel`` out of ``group``, taking turns with the other sockets of this process.

    A member left behind costs every later doorbell of the run a message to a
    channel nobody reads (until ``group_expiry``, a day by default), so a failed
    attempt is tried again, a little later each time.
    """
    for attempt in range(1, LEAVE_ATTEMPTS + 1):
        try:
            async with group_turn():
                await asyncio.wait_for(layer.group_discard(group, channel), LAYER_TIMEOUT)
            return
        except Exception:
            if attempt == LEAVE_ATTEMPTS:  # the group forgets it after group_expiry
                log.warning("could not leave %s", group, exc_info=True)
                return
            await asyncio.sleep(0.25 * attempt)
