"""A continuation carrying answers no surface checked, as the pauses' own continuation.

The framework adapters check the answers again against the state they resume
(``consume_state``'s ``check``), for answers written by hand or replayed. Their tests
put such answers on a continuation the pauses name, as the answer path names the one
it queues, so that the adapter's own check is what refuses them (a continuation row
the pauses do not name is refused before, ``lineage_refused``).
"""

from __future__ import annotations

from typing import Any

from symfonic_django.models import Pause, Run
from symfonic_django.runs import queue_continuation


def continuation_by_hand(run: Run, pause: Pause, answers: dict[str, Any]) -> Run:
    """Queue ``run``'s continuation with ``answers`` as they are, named by its pauses."""
    continuation = queue_continuation(run, resumed_from=pause, dispatch=False, answers=answers)
    Pause.objects.filter(run=run).update(continuation=continuation)
    return continuation
