"""The live OpenAPI schema, fuzzed with schemathesis against a real server.

Schemathesis reads ``/api/symfonic/schema/`` from a daphne process serving the
example project on the test database, generates requests for every operation
(valid and invalid ones), and sends each as alice (acme) or bob (globex).
Three properties hold for every response:

- no 5xx (``not_a_server_error``): a 5xx is a bug;
- the status is one the schema declares and the body fits its schema
  (``status_code_conformance``, ``response_schema_conformance``);
- no cross-tenant read: every run or pause id in a 2xx body served to one
  reviewer belongs to that reviewer's tenant (checked against the database
  after the run, so runs and pauses created while fuzzing count too), and no
  body served to one reviewer names the other tenant's orders.

Path ids are drawn from both tenants' real runs and pauses as well as
generated, so the cross-tenant probes hit objects that exist; resume bodies
sometimes carry real tokens and run bodies real agents, so successes (202)
and lost claims (409) are fuzzed too, not only refusals. Schemathesis 4's
``object_level_authorization`` check needs a WFC auth document; an explicit
check over all responses says the same thing more directly here.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections import defaultdict
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import (
    response_schema_conformance,
    status_code_conformance,
)

from example_project.shop.management.commands.seed_demo import seed_pause, seed_users
from symfonic_django import pauses
from symfonic_django.models import Pause, Run
from symfonic_django.pauses import token_for
from symfonic_django.turns import execute_run

from ..conftest import paused_run

pytestmark = [pytest.mark.postgres, pytest.mark.services, pytest.mark.django_db(transaction=True)]

#: Generated cases per operation and generation mode (alice and bob share them).
EXAMPLES = 10
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance]
TENANT_OF = {"alice": "acme", "bob": "globex"}
ORDER_PREFIX = {"acme": "ACME-", "globex": "GLOBEX-"}
#: Answers whoever holds the pause's token; a login plays no part, so no tenant either.
TOKEN_IS_THE_CREDENTIAL = {"POST /api/symfonic/resume/"}
APPROVE = {"decisions": [{"type": "approve"}]}
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def seed_both_tenants(tenants: dict[str, Any]) -> dict[str, list[Any]]:
    """Refund approvals, a question and a finished turn in each tenant.

    Returns the ids of every pause and run, and a token of every pause.
    """
    rng = random.Random(20261129)
    for slug in ("acme", "globex"):
        for _ in range(4):
            seed_pause(tenants[slug], rng)
        paused_run("question", scope=slug)
        _, pause = paused_run("echo", scope=slug)
        resolution = pauses.answer_pause(pause.pk, APPROVE, dispatch=False)
        execute_run(resolution.continuation.pk)
    every_pause = list(Pause.objects.all())
    return {"pauses": [str(p.pk) for p in every_pause],
            "runs": [str(pk) for pk in Run.objects.values_list("pk", flat=True)],
            "tokens": [token_for(p) for p in every_pause]}


def test_generated_requests_get_no_5xx_no_schema_violation_and_no_cross_tenant_read(
        live_server_factory, tenants):
    users = seed_users()
    known = seed_both_tenants(tenants)
    # The resume throttle would answer most generated resumes with 429: lift it.
    server = live_server_factory(SYMFONIC_RESUME_RATE="100000/min")
    schema = schemathesis.openapi.from_url(f"{server.url}/api/symfonic/schema/")
    operations = [result.ok() for result in schema.get_all_operations()
                  if not result.ok().path.endswith("/schema/")]
    assert {op.label for op in operations} >= {
        "GET /api/symfonic/pauses/", "GET /api/symfonic/pauses/{id}/",
        "POST /api/symfonic/pauses/{id}/answer/", "POST /api/symfonic/pauses/{id}/approve/",
        "POST /api/symfonic/pauses/{id}/reject/", "POST /api/symfonic/resume/",
        "POST /api/symfonic/runs/", "GET /api/symfonic/runs/{id}/",
        "GET /api/symfonic/runs/{id}/events/"}

    failures: list[str] = []
    served_ids: dict[str, set[str]] = defaultdict(set)
    statuses: dict[str, set[int]] = defaultdict(set)
    foreign_orders: list[str] = []
    started = time.monotonic()

    def strategy(operation: Any, mode: Any) -> Any:
        """Generated cases, and (valid mode) cases aimed at objects that exist."""
        generated = operation.as_strategy(generation_mode=mode)
        aimed: list[Any] = []
        if "{id}" in operation.path:
            ids = known["runs"] if "/runs/" in operation.path else known["pauses"]
            aimed.append(st.sampled_from(ids).flatmap(lambda pk: operation.as_strategy(
                generation_mode=mode, path_parameters={"id": pk})))
        if mode.is_positive and operation.label == "POST /api/symfonic/resume/":
            aimed.append(st.sampled_from(known["tokens"]).flatmap(lambda token: (
                operation.as_strategy(body={"token": token, "answer": APPROVE},
                                      media_type="application/json"))))
        if mode.is_positive and operation.label == "POST /api/symfonic/runs/":
            aimed.append(st.sampled_from(["echo", "noop"]).flatmap(lambda agent: (
                operation.as_strategy(body={"agent": agent, "input": {}},
                                      media_type="application/json"))))
        return st.one_of(generated, *aimed)

    def fuzz(operation: Any, mode: Any) -> None:
        """Send ``EXAMPLES`` generated cases of ``operation`` and record what came back."""

        @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                  phases=[Phase.generate], suppress_health_check=list(HealthCheck))
        @given(case=strategy(operation, mode), who=st.sampled_from(sorted(TENANT_OF)))
        def send(case: Any, who: str) -> None:
            response = case.call(base_url=server.url, timeout=20,
                                 headers={"Authorization": f"Token {users[who]['token']}"})
            statuses[operation.label].add(response.status_code)
            try:
                case.validate_response(response, checks=CHECKS)
            except FailureGroup as exc:
                failures.append(f"{operation.label} as {who} ({mode}): {exc}")
            if operation.label in TOKEN_IS_THE_CREDENTIAL:
                return
            if 200 <= response.status_code < 300:
                served_ids[who].update(UUID.findall(response.text))
            other = "globex" if TENANT_OF[who] == "acme" else "acme"
            if ORDER_PREFIX[other] in response.text:
                foreign_orders.append(f"{operation.label} as {who}: {response.text[:300]}")

        send()

    for operation in operations:
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
            fuzz(operation, mode)

    elapsed = time.monotonic() - started
    assert not failures, "\n\n".join(failures[:5]) + f"\n\n({len(failures)} failures)"
    assert not foreign_orders, foreign_orders[:3]
    for who, ids in served_ids.items():
        tenant = TENANT_OF[who]
        leaked = sorted(
            [f"pause {pk} of {scope}" for pk, scope in Pause.objects.filter(pk__in=ids)
             .exclude(scope_key=tenant).values_list("pk", "scope_key")]
            + [f"run {pk} of {scope}" for pk, scope in Run.objects.filter(pk__in=ids)
               .exclude(scope_key=tenant).values_list("pk", "scope_key")])
        assert not leaked, f"{who} ({tenant}) was served {leaked}"
    # The run really reached the server on every operation and saw successes as well as refusals.
    assert all(statuses[op.label] for op in operations), dict(statuses)
    assert any(200 <= s < 300 for codes in statuses.values() for s in codes), dict(statuses)
    assert served_ids["alice"] and served_ids["bob"], "no reviewer was served any object"
    print(f"\nfuzzed {len(operations)} operations in {elapsed:.1f}s: "
          + json.dumps({k: sorted(v) for k, v in sorted(statuses.items())}))
