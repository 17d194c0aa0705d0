"""The websocket that streams one run: ``/ws/symfonic/runs/<run_id>/`` (docs/design.md section 6).

The database is the stream; the channel layer is the doorbell. The consumer
remembers the last ``seq`` it sent and always sends what the database holds
after it. A doorbell that carries the very next event is sent as is; any gap
(a dropped doorbell, a reconnect with ``?after=N``, a process whose layer
never hears the worker) is filled from ``TurnEvent`` rows, and a short poll
covers a layer that never rings at all. So no event is lost, duplicated or
reordered, whatever the layer does.

``stream`` holds the consumer and its timing and page bounds (``POLL_INTERVAL``,
``ACCESS_RECHECK_SECONDS``, ``PAGE_EVENTS``, ``PAGE_BYTES``: change them there),
``access`` who may watch, ``reads`` what is read, ``groups`` the doorbell's group,
``unknown`` the socket of a path no route serves.
"""

from .access import (
    CLOSE_BAD_REQUEST,
    CLOSE_FORBIDDEN,
    CLOSE_NORMAL,
    CLOSE_NOT_AUTHENTICATED,
    CLOSE_NOT_FOUND,
    CLOSE_TOO_FAR_BEHIND,
    TICKET,
    BadQuery,
    read_query,
)
from .stream import PAGE_BYTES, PAGE_EVENTS, RunStreamConsumer
from .unknown import UnknownStreamConsumer

__all__ = [
    "CLOSE_BAD_REQUEST", "CLOSE_FORBIDDEN", "CLOSE_NORMAL", "CLOSE_NOT_AUTHENTICATED",
    "CLOSE_NOT_FOUND", "CLOSE_TOO_FAR_BEHIND", "PAGE_BYTES", "PAGE_EVENTS", "TICKET",
    "BadQuery", "RunStreamConsumer", "UnknownStreamConsumer", "read_query",
]
