"""Drives one agent turn: its context, its events, the lease heartbeat, fenced effects.

``execute_run`` is what a worker runs for a queued run: ``runs.claim`` it,
stream the agent's events (each one stored before it is announced), and end
the turn with exactly one terminal event through ``runs.end``. A turn that
paused is settled in the same transaction as its end (``pauses.settle``), so
pauses answered while it was still running continue it at once.

The turn runs in ``async_to_sync``: database calls made through
``sync_to_async`` come back to the calling thread, with its connection and
transaction. Side effects that must not happen once the run's lease is lost
run inside ``fenced()`` (or ``afenced()`` from async code).

``driving`` holds the turn's run and end, ``context`` the ``TurnContext`` agents see,
``resumed`` the ``Continuation`` a resumed turn is handed, ``pausing``
``request_pause``, ``fencing`` ``fenced()`` and ``afenced()``.
"""

from ..runs import LeaseLost
from .context import TurnContext, current_turn, worker_name
from .driving import CONFIGURATION_ERROR, agent_for_run, execute_run, stream_turn
from .fencing import Fence, afenced, fenced
from .pausing import request_pause
from .resumed import Continuation

__all__ = ["CONFIGURATION_ERROR", "Continuation", "Fence", "LeaseLost", "TurnContext",
           "afenced", "agent_for_run", "current_turn", "execute_run", "fenced",
           "request_pause", "stream_turn", "worker_name"]
