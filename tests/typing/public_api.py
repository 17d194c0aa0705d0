"""Checked by mypy in ``make test`` (never run): the public names reach type checkers typed.

``symfonic_django`` loads its public API lazily; the ``TYPE_CHECKING`` imports
beside the loader are what a type checker reads. If one of them went
missing, these names would be ``Any`` and ``assert_type`` would fail.
"""

from __future__ import annotations

from typing import assert_type

import symfonic_django
from symfonic_django.models import Pause, Run
from symfonic_django.turns import Fence


async def public_names_are_typed() -> None:
    assert_type(symfonic_django.start_run("refund", {}, scope="acme"), Run)
    assert_type(symfonic_django.retry("00000000-0000-0000-0000-000000000000"), Run)
    assert_type(await symfonic_django.request_pause(kind="question", prompt="?"), Pause)
    with symfonic_django.fenced() as fence:
        assert_type(fence, Fence)
