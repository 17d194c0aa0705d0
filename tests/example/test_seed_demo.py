"""``seed_demo`` (pinned in docs/design.md section 6) and what ``make demo`` seeds beside it."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from symfonic_django.models import Pause

pytestmark = pytest.mark.django_db(transaction=True)


def seed(*args: str) -> dict:
    out = StringIO()
    call_command("seed_demo", "--json", *args, stdout=out)
    return json.loads(out.getvalue())


def test_the_pinned_default_is_three_refunds_in_acme_and_one_in_globex():
    result = seed()
    assert set(result) == {"users", "pauses"}
    assert set(result["users"]) == {"admin", "alice", "bob"}
    assert [p["tenant"] for p in result["pauses"]] == ["acme"] * 3 + ["globex"]
    assert all(set(p) == {"id", "token", "tenant", "run_id"} for p in result["pauses"])
    assert {p.kind for p in Pause.objects.all()} == {"approval"}
    assert all(p.approvals_needed == 1 for p in Pause.objects.all())


def test_the_showcase_adds_a_question_a_refund_that_needs_two_approvers_and_a_slow_one(
        settings):
    settings.SYMFONIC = {**settings.SYMFONIC, "APPROVAL_POLICY":
                         "example_project.shop.approvals.two_approvers_over_500"}
    result = seed("--pauses", "1", "--showcase")
    assert len(result["pauses"]) == 5
    question, big, slow = (Pause.objects.get(pk=p["id"]) for p in result["pauses"][2:])
    assert (slow.run.agent, slow.scope_key, slow.approvals_needed) == ("slow_refund", "acme", 1)
    assert (question.kind, question.scope_key) == ("question", "acme")
    assert question.prompt["question"].startswith("Which carrier should ship")
    assert (big.kind, big.approvals_needed) == ("approval", 2)
    assert big.prompt["action_requests"][0]["args"]["amount"] == 750
