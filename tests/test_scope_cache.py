"""SCOPE_CACHE_SECONDS: a worker keeps the tenant it loaded for the next turns of it."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from symfonic_django import scopes
from symfonic_django.conf import settings as symfonic_settings
from symfonic_django.models import Run, RunStatus
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run
from tests.testapp.models import Tenant

pytestmark = pytest.mark.django_db(transaction=True)


def with_cache(seconds: float) -> Any:
    return override_settings(SYMFONIC={**_symfonic(), "SCOPE_CACHE_SECONDS": seconds})


def _symfonic() -> dict[str, Any]:
    from django.conf import settings

    return dict(settings.SYMFONIC)


def tenant_queries(captured: CaptureQueriesContext) -> int:
    return sum(Tenant._meta.db_table in q["sql"] for q in captured.captured_queries)


def run_scope_agent() -> tuple[Any, int]:
    """One turn of the ``scope`` agent: what it saw, and the tenant queries it cost."""
    run = start_run("scope", {}, scope="acme", dispatch=False)
    with CaptureQueriesContext(connection) as captured:
        assert execute_run(run.pk) == RunStatus.COMPLETED
    return Run.objects.get(pk=run.pk).output, tenant_queries(captured)


def test_turns_of_a_kept_tenant_load_it_once_and_each_gets_its_own_copy(tenants):
    with with_cache(10):
        first, first_queries = run_scope_agent()
        second, second_queries = run_scope_agent()
    acme = tenants["acme"]
    assert (first_queries, second_queries) == (1, 0)
    assert first == second == {"slug": "acme", "pk": acme.pk, "mark": None}  # no leak


def test_without_the_cache_every_turn_loads_its_tenant(tenants):
    assert symfonic_settings.SCOPE_CACHE_SECONDS == 0  # the test settings' default
    assert [run_scope_agent()[1] for _ in range(2)] == [1, 1]


def test_a_kept_tenant_is_loaded_again_once_its_seconds_are_over(tenants):
    with with_cache(0.05):
        assert scopes.load_scope_for_turn("acme").name == "Acme"
        Tenant.objects.filter(slug="acme").update(name="Acme Renamed")
        assert scopes.load_scope_for_turn("acme").name == "Acme"  # kept
        time.sleep(0.1)
        assert scopes.load_scope_for_turn("acme").name == "Acme Renamed"


def test_an_unknown_tenant_is_not_kept(tenants):
    with with_cache(10):
        assert scopes.load_scope_for_turn("initech") is None
        Tenant.objects.create(slug="initech", name="Initech")
        assert scopes.load_scope_for_turn("initech").slug == "initech"


def test_changing_the_settings_forgets_every_kept_tenant(tenants):
    with with_cache(10):
        scopes.load_scope_for_turn("acme")
        assert "acme" in scopes._turn_scopes
    assert scopes._turn_scopes == {}


def test_the_cache_starts_over_rather_than_grow_past_its_bound(tenants, turn_scopes_max):
    turn_scopes_max(2)
    with with_cache(10):
        for slug in ("acme", "globex"):
            scopes.load_scope_for_turn(slug)
        assert set(scopes._turn_scopes) == {"acme", "globex"}
        Tenant.objects.create(slug="initech", name="Initech")
        scopes.load_scope_for_turn("initech")
        assert set(scopes._turn_scopes) == {"initech"}
