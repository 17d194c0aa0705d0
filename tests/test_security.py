"""Controls of docs/security.md that no other test file holds: CSRF on every cookie-
authenticated write, and what a token does not carry or leave behind."""

from __future__ import annotations

import base64
import json

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.urls import reverse

from symfonic_django.pauses import token_for
from tests.testapp.seed import seed_users

from .conftest import paused_run, snapshot

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice_session(tenants) -> Client:
    seed_users()
    client = Client(enforce_csrf_checks=True)
    client.force_login(get_user_model().objects.get(username="alice"))
    return client


def test_a_cookie_authenticated_api_answer_without_csrf_is_refused_and_changes_nothing(
        alice_session):
    _, pause = paused_run("refund", {"order_id": "CSRF-1", "amount": 5})
    before = snapshot(pause)
    response = alice_session.post(f"/api/symfonic/pauses/{pause.pk}/approve/", "{}",
                                  content_type="application/json")
    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"
    assert snapshot(pause) == before


def test_an_admin_answer_without_csrf_is_refused_and_changes_nothing(alice_session):
    _, pause = paused_run("refund", {"order_id": "CSRF-2", "amount": 5})
    before = snapshot(pause)
    page = reverse("admin:symfonic_django_pause_change", args=[pause.pk])
    assert alice_session.post(page, {"decision_0": "approve"}).status_code == 403
    assert snapshot(pause) == before


def test_a_token_carries_no_tenant_identifier_and_is_stored_nowhere(tenants):
    _, pause = paused_run("refund", {"order_id": "T-1", "amount": 5}, scope="acme")
    token = token_for(pause)
    payload = token.split(":")[0]
    claims = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()
    assert str(pause.pk) in json.loads(claims)  # readable, as Django's signed values are
    assert "acme" not in claims and "Acme" not in claims  # a keyed hash of the scope only
    with connection.cursor() as cursor:  # no column of any table of the app holds it
        for model in ("pause", "run", "turnevent", "decision", "idempotentresponse"):
            table = f"symfonic_django_{model}"
            cursor.execute(f"SELECT * FROM {table}")  # noqa: S608 - the app's own tables
            assert token not in json.dumps(cursor.fetchall(), default=str), table
