"""The hot paths' plans, pinned (issue 11): every query reads the big tables through an index.

This loads ``bench/scale_data.py``'s dataset into the test database at
``PAUSES`` pauses (a twentieth of the benchmark's 1,000,000, with the same
skew: one tenant holds 10% of everything, one run a fifth as many events as
there are pauses), runs every hot path the benchmark times through the app's
own code, and asks PostgreSQL for the plan of each query it made. A sequential
scan of a pause, run, event or decision table is a query that grows with the
table; each is listed with its plan. ``ALLOWED`` names those that may, and why.
``bench/bench_scale.py`` shows the same plans at 1,000,000 pauses.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction

from bench import scale_data

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

PAUSES = 50_000
BIG_TABLES = frozenset({"symfonic_django_pause", "symfonic_django_pausesearch",
                        "symfonic_django_run", "symfonic_django_turnevent",
                        "symfonic_django_decision"})
#: Hot paths allowed to read a big table whole, with the reason.
ALLOWED: dict[str, str] = {}
#: Hot paths whose count must read their tenant's runs of one status or agent through
#: the index that holds both, not a wider index it then filters: the path, the index,
#: and the column the count filters on. A reviewer's queued runs were counted through
#: every tenant's queued runs, and grew with their backlog (migration 0023); their runs
#: of a rare agent, by crossing all the tenant's runs with all that agent's (0024). At
#: 1,000,000 pauses the page reads the index too; at this size the partial index of
#: every queued run is small enough that the planner rightly reads it for the page, so
#: only the count is pinned here (``bench/bench_scale.py`` prints both plans).
NARROWED: dict[str, tuple[str, str]] = {
    "admin run/ filter status__exact=queued (reviewer)": ("symfonic_run_scopestatus_idx",
                                                          "status"),
    "admin run/ filter agent__exact=shipping (reviewer)": ("symfonic_run_scopeagent_idx",
                                                           "agent"),
}


def is_run_count_by(sql: str, column: str) -> bool:
    return "COUNT(*)" in sql and f'"symfonic_django_run"."{column}" = ' in sql


def plan_with_indexes_preferred(sql: str, params: Any) -> dict[str, Any]:
    """The plan with ``enable_seqscan`` off.

    At this size a pause list's run table holds 10,000 rows, and PostgreSQL
    rightly reads so small a table whole rather than through an index; at
    1,000,000 pauses it takes the index (``bench/bench_scale.py`` prints those
    plans). Turning sequential scans off only makes them dear, never
    impossible: a query with an index to use uses it, and one with none still
    shows its Seq Scan. So this finds the queries no index serves.
    """
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        return scale_data.explain(sql, params)


def sequential_scans(plan: dict[str, Any]) -> list[str]:
    return [node["Relation Name"] for node in scale_data.plan_nodes(plan)
            if node["Node Type"] == "Seq Scan" and node.get("Relation Name") in BIG_TABLES]


def used_indexes(plan: dict[str, Any]) -> set[str]:
    return {node["Index Name"] for node in scale_data.plan_nodes(plan) if "Index Name" in node}


def test_every_hot_path_reads_the_big_tables_through_an_index() -> None:
    scopes = scale_data.create_tenants()
    people = scale_data.create_people()
    scale_data.load(connection, PAUSES, people=people, scopes=scopes)
    paths = scale_data.hot_paths(people, PAUSES)
    assert len(paths) > 40  # every list, filter, search and deep page, and the workers' paths
    found: list[str] = []
    narrowed = dict.fromkeys(NARROWED, 0)
    for path in paths:
        if path.prepare is not None:
            path.prepare()
        log = scale_data.QueryLog()
        with connection.execute_wrapper(log):
            path.call()
        if path.cleanup is not None:
            path.cleanup()
        assert log.queries, f"{path.name} made no query"
        for query in filter(scale_data.explainable, log.queries):
            plan = plan_with_indexes_preferred(query[0], query[1])
            if sequential_scans(plan) and path.name not in ALLOWED:
                found.append(f"{path.name}: {scale_data.plan_shape(plan)}\n    {query[0][:300]}")
            index, column = NARROWED.get(path.name, ("", ""))
            if index and is_run_count_by(query[0], column):
                narrowed[path.name] += 1
                if index not in used_indexes(plan):
                    found.append(f"{path.name} does not count through {index}: "
                                 f"{scale_data.plan_shape(plan)}\n    {query[0][:300]}")
    assert not found, "\n".join(found)
    assert all(narrowed.values()), f"a narrowed path made no count: {narrowed}"
