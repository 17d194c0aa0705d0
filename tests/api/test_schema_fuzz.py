"""The live OpenAPI schema, fuzzed with schemathesis against a real server.

Schemathesis reads ``/api/symfonic/schema/`` from a daphne process serving the
example project on the test database, generates requests for every operation
(valid and invalid ones), and sends each as one of two users of different tenants.
It runs once as alice (acme) and bob (globex), who may answer, and once as
carol (acme) and dave (globex), staff with the view permissions only. Four
properties hold for every response:

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
check over all responses says the same thing more directly here. Generation is
per operation, not stateful: the schema declares no OpenAPI links, so
``as_state_machine()`` would have no transitions; the aimed cases (real ids and
tokens) stand in for them. ``SYMFONIC_FUZZ_EXAMPLES`` raises the cases per
operation and mode (10 by default).
"""

from __future__ import annotations

import json
import random
import re
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import pytest
import schemathesis
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import (
    response_schema_conformance,
    status_code_conformance,
)

from symfonic_django import pauses
from symfonic_django.models import Pause, Run
from symfonic_django.pauses import token_for
from symfonic_django.turns import execute_run
from tests.testapp.models import Membership
from tests.testapp.seed import seed_pause, seed_users

from ..conftest import paused_run
from ..fuzz import examples

pytestmark = [pytest.mark.postgres, pytest.mark.services, pytest.mark.django_db(transaction=True)]

#: Generated cases per operation and generation mode (the users of a run share them).
EXAMPLES = examples(10)
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


@dataclass
class Findings:
    """What a fuzz run saw, per operation and per user."""

    failures: list[str] = field(default_factory=list)
    served_ids: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    statuses: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))
    foreign_orders: list[str] = field(default_factory=list)
    #: Responses with a ``"token"`` key anywhere in their JSON, per user.
    token_keys: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    cases: int = 0


def has_token_key(value: Any) -> bool:
    """Whether a ``"token"`` key appears anywhere in a JSON value."""
    if isinstance(value, dict):
        return "token" in value or any(has_token_key(v) for v in value.values())
    if isinstance(value, list):
        return any(has_token_key(v) for v in value)
    return False


def api_operations(server_url: str) -> list[Any]:
    schema = schemathesis.openapi.from_url(f"{server_url}/api/symfonic/schema/")
    operations = [result.ok() for result in schema.get_all_operations()
                  if not result.ok().path.endswith("/schema/")]
    assert {op.label for op in operations} >= {
        "GET /api/symfonic/pauses/", "GET /api/symfonic/pauses/{id}/",
        "POST /api/symfonic/pauses/{id}/answer/", "POST /api/symfonic/pauses/{id}/approve/",
        "POST /api/symfonic/pauses/{id}/reject/", "POST /api/symfonic/resume/",
        "POST /api/symfonic/runs/", "GET /api/symfonic/runs/{id}/",
        "GET /api/symfonic/runs/{id}/events/"}
    return operations


def case_strategy(operation: Any, mode: Any, known: dict[str, list[Any]]) -> Any:
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


def fuzz_as(server_url: str, operations: list[Any], known: dict[str, list[Any]],
            api_tokens: dict[str, str], tenant_of: dict[str, str]) -> Findings:
    """Send ``EXAMPLES`` generated cases of every operation in both generation modes,
    each as one of ``api_tokens``' users, and record what came back."""
    seen = Findings()

    def fuzz(operation: Any, mode: Any) -> None:
        @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                  phases=[Phase.generate], suppress_health_check=list(HealthCheck))
        @given(case=case_strategy(operation, mode, known), who=st.sampled_from(sorted(api_tokens)))
        def send(case: Any, who: str) -> None:
            response = case.call(base_url=server_url, timeout=20,
                                 headers={"Authorization": f"Token {api_tokens[who]}"})
            seen.cases += 1
            seen.statuses[operation.label].add(response.status_code)
            try:
                case.validate_response(response, checks=CHECKS)
            except FailureGroup as exc:
                seen.failures.append(f"{operation.label} as {who} ({mode}): {exc}")
            try:
                body = response.json()
            except ValueError:
                body = None
            if has_token_key(body):
                seen.token_keys[who].append(f"{operation.label}: {response.text[:300]}")
            if operation.label in TOKEN_IS_THE_CREDENTIAL:
                return
            if 200 <= response.status_code < 300:
                seen.served_ids[who].update(UUID.findall(response.text))
            other = "globex" if tenant_of[who] == "acme" else "acme"
            if ORDER_PREFIX[other] in response.text:
                seen.foreign_orders.append(f"{operation.label} as {who}: {response.text[:300]}")

        send()

    for operation in operations:
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
            fuzz(operation, mode)
    return seen


def assert_clean(seen: Findings, tenant_of: dict[str, str]) -> None:
    """No 5xx, no schema violation, no cross-tenant read (by body text or by id)."""
    assert not seen.failures, "\n\n".join(seen.failures[:5]) + f"\n\n({len(seen.failures)} failures)"
    assert not seen.foreign_orders, seen.foreign_orders[:3]
    for who, ids in seen.served_ids.items():
        tenant = tenant_of[who]
        leaked = sorted(
            [f"pause {pk} of {scope}" for pk, scope in Pause.objects.filter(pk__in=ids)
             .exclude(scope_key=tenant).values_list("pk", "scope_key")]
            + [f"run {pk} of {scope}" for pk, scope in Run.objects.filter(pk__in=ids)
               .exclude(scope_key=tenant).values_list("pk", "scope_key")])
        assert not leaked, f"{who} ({tenant}) was served {leaked}"


def test_generated_requests_get_no_5xx_no_schema_violation_and_no_cross_tenant_read(
        live_server_factory: Any, tenants: dict[str, Any]) -> None:
    users = seed_users()
    known = seed_both_tenants(tenants)
    # The resume throttle would answer most generated resumes with 429: lift it.
    server = live_server_factory(SYMFONIC_RESUME_RATE="100000/min")
    operations = api_operations(server.url)
    started = time.monotonic()
    seen = fuzz_as(server.url, operations, known,
                   {who: users[who]["token"] for who in TENANT_OF}, TENANT_OF)
    elapsed = time.monotonic() - started
    assert_clean(seen, TENANT_OF)
    # The run really reached the server on every operation and saw successes as well as refusals.
    assert all(seen.statuses[op.label] for op in operations), dict(seen.statuses)
    assert any(200 <= s < 300 for codes in seen.statuses.values() for s in codes), dict(seen.statuses)
    assert seen.served_ids["alice"] and seen.served_ids["bob"], "no reviewer was served any object"
    # Answerers are given tokens, so the view-only run's "no token" is not vacuous.
    assert any(seen.token_keys.values()), "no answerer was given a token"
    print(f"\nfuzzed {len(operations)} operations, {seen.cases} cases in {elapsed:.1f}s: "
          + json.dumps({k: sorted(v) for k, v in sorted(seen.statuses.items())}))


def view_only_user(username: str, tenant: Any) -> str:
    """A staff member of ``tenant`` with the view permissions only; returns an API token."""
    user = get_user_model().objects.create_user(username, password=f"{username}-pw",
                                                is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(
        content_type__app_label="symfonic_django", codename__startswith="view_"))
    Membership.objects.create(user=user, tenant=tenant)
    return str(Token.objects.create(user=user).key)


def test_view_only_reviewers_of_each_tenant_get_no_5xx_no_foreign_object_and_no_token(
        live_server_factory: Any, tenants: dict[str, Any]) -> None:
    """carol (acme) and dave (globex) may look at their tenant's pauses and runs but
    answer nothing: no response to them carries a ``"token"`` key, anywhere."""
    seed_users()
    known = seed_both_tenants(tenants)
    viewers = {"carol": "acme", "dave": "globex"}
    api_tokens = {who: view_only_user(who, tenants[slug]) for who, slug in viewers.items()}
    server = live_server_factory(SYMFONIC_RESUME_RATE="100000/min")
    operations = api_operations(server.url)
    started = time.monotonic()
    seen = fuzz_as(server.url, operations, known, api_tokens, viewers)
    elapsed = time.monotonic() - started
    assert_clean(seen, viewers)
    assert not any(seen.token_keys.values()), dict(seen.token_keys)
    # They were shown their own tenant's objects (so the token check had bodies to look at).
    assert seen.served_ids["carol"] and seen.served_ids["dave"], dict(seen.statuses)
    assert any(200 <= s < 300 for s in seen.statuses["GET /api/symfonic/runs/{id}/events/"])
    print(f"\nfuzzed {len(operations)} operations as view-only users, {seen.cases} cases in "
          f"{elapsed:.1f}s: " + json.dumps({k: sorted(v) for k, v in sorted(seen.statuses.items())}))
