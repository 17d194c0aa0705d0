"""Hypothesis fuzzers of the app's inputs (issue 10, item 7).

Each fuzzer runs a small number of examples by default so the whole folder
stays fast on every test leg; ``SYMFONIC_FUZZ_EXAMPLES=<n>`` runs ``n``
examples per property instead, for a longer hunt.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings


def examples(default: int) -> int:
    """How many examples a property runs: ``default``, or ``SYMFONIC_FUZZ_EXAMPLES``."""
    return int(os.environ.get("SYMFONIC_FUZZ_EXAMPLES") or default)


def fuzz_settings(default: int) -> settings:
    """Hypothesis settings for a fuzzer run inside a test that already holds the database.

    No example database (runs are reproducible from the seed Hypothesis prints),
    no deadline (a first query can be slow), and the function-scoped fixture check
    off: the property is an inner function, the fixtures belong to the outer test.
    """
    return settings(max_examples=examples(default), deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow, HealthCheck.data_too_large])
