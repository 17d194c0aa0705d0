"""Checked by mypy in ``make test`` (never run): the public names reach type checkers typed.

``symfonic_django`` loads its public API lazily; the ``TYPE_CHECKING`` imports
beside the loader are what a type checker reads. If one of them went
missing, these names would be ``Any`` and ``assert_type`` would fail.
"""

from __future__ import annotations

from typing import Any, assert_type

import symfonic_django
from symfonic_django.agents import ResumedTurn
from symfonic_django.models import Pause, Run
from symfonic_django.turns import Fence


async def public_names_are_typed() -> None:
    assert_type(symfonic_django.start_run("refund", {}, scope="acme"), Run)
    assert_type(symfonic_django.retry("00000000-0000-0000-0000-000000000000"), Run)
    assert_type(await symfonic_django.request_pause(kind="question", prompt="?"), Pause)
    with symfonic_django.fenced() as fence:
        assert_type(fence, Fence)


def the_protocols_objects_are_typed(continuation: ResumedTurn) -> None:
    turn = symfonic_django.current_turn()
    assert_type(turn.run_id, str)
    assert_type(turn.root_run_id, str)
    assert_type(symfonic_django.mint_watch_ticket(turn.run, user=None), str)
    for action in continuation.actions:
        assert_type(action, symfonic_django.ReviewedAction)
        assert_type(action.approved_args, dict[str, Any] | None)
        assert_type(action.proposed_args, dict[str, Any])
    assert_type(continuation.pause, symfonic_django.AnsweredPause)
    assert_type(continuation.pauses, dict[str, symfonic_django.AnsweredPause])
