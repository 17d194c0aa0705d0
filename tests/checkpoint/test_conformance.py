"""LangGraph's checkpoint conformance suite against the Django saver, on this leg's database.

``langgraph-checkpoint-conformance`` runs every test of a capability the saver
implements and reports counts rather than raising: this test fails on any
failed conformance test, and pins how many ran, so a suite that shrinks (a
capability no longer detected, a test that stopped running) fails too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from asgiref.sync import async_to_sync
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.report import CapabilityReport

from symfonic_django.checkpoint import DjangoSaver

# The saver's async methods run its sync ones in Django's sync thread; the suite
# is driven from this test's thread (async_to_sync), so they share its connection.
pytestmark = pytest.mark.django_db

#: Tests per capability in langgraph-checkpoint-conformance 0.0.2: the 58 base
#: tests, then the three optional suites.
EXPECTED_PASSES = {
    "put": 17,
    "put_writes": 10,
    "get_tuple": 10,
    "list": 16,
    "delete_thread": 5,
    "delete_for_runs": 7,
    "copy_thread": 8,
    "prune": 8,
}


def run_conformance() -> CapabilityReport:
    @checkpointer_test(name="DjangoSaver")
    async def django_saver() -> AsyncIterator[DjangoSaver]:
        yield DjangoSaver()  # a fresh saver for each capability's suite

    report: CapabilityReport = async_to_sync(validate)(django_saver)
    report.print_report()
    return report


def test_the_django_saver_passes_every_conformance_test_of_every_capability():
    report = run_conformance()

    failures = {name: result.failures for name, result in report.results.items() if result.failures}
    assert failures == {}
    assert {name: result.tests_passed for name, result in report.results.items()} == EXPECTED_PASSES
    assert sum(EXPECTED_PASSES[name] for name in ("put", "put_writes", "get_tuple", "list",
                                                  "delete_thread")) == 58
    assert report.conformance_level() == "FULL"
