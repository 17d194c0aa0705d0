"""A request the API cannot authenticate is told which credentials it takes.

``Authorization: Bearer ...`` used to get "Authentication credentials were not
provided.", as if the header never arrived. Now no credentials, an unsupported
scheme and a header nobody can read each get 401 ``not_authenticated`` (the
pinned code), a sentence naming `Authorization: Token <key>` and a session, and
a ``WWW-Authenticate`` challenge; and the refusal changes no row.
"""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.authentication import (
    BasicAuthentication,
    SessionAuthentication,
    TokenAuthentication,
)
from rest_framework.test import APIClient, APIRequestFactory

from symfonic_django.api.authentication import accepted_credentials
from symfonic_django.models import Decision, Run
from symfonic_django.pauses import token_for

from ..conftest import paused_run, snapshot
from .conftest import API

pytestmark = pytest.mark.django_db

APPROVE = {"decisions": [{"type": "approve"}]}
ACCEPTED = "Use `Authorization: Token <key>` or a session login."
ENDPOINTS = [
    ("get", "pauses/"), ("get", "pauses/{pause}/"), ("post", "pauses/{pause}/approve/"),
    ("post", "pauses/{pause}/answer/"), ("post", "pauses/{pause}/reject/"), ("get", "runs/"),
    ("post", "runs/"), ("get", "runs/{run}/"), ("get", "runs/{run}/events/"),
]


def client_sending(authorization: str | None) -> APIClient:
    client = APIClient()
    if authorization is not None:
        client.credentials(HTTP_AUTHORIZATION=authorization)
    return client


def refused_401(response: Any) -> str:
    body = response.json()
    assert (response.status_code, body.get("code")) == (401, "not_authenticated"), body
    assert set(body) == {"code", "detail"}
    assert response.headers["WWW-Authenticate"] == "Token"
    detail: str = body["detail"]
    return detail


@pytest.mark.parametrize("authorization, first_sentence", [
    (None, "Authentication credentials were not provided."),
    ("", "Authentication credentials were not provided."),
    ("Bearer abc.def.ghi", "The Authorization scheme 'Bearer' is not accepted here."),
    ("bearer abc", "The Authorization scheme 'bearer' is not accepted here."),
    ("Basic YWxpY2U6YWxpY2UtZGVtby1wdw==",
     "The Authorization scheme 'Basic' is not accepted here."),
    ("Bearer", "The Authorization scheme 'Bearer' is not accepted here."),
    ("<script>alert(1)</script> x", "The Authorization header is malformed."),
    ("\u00e9t\u00e9 x", "The Authorization header is malformed."),
], ids=["no-header", "empty-header", "bearer", "bearer-lowercase", "basic", "bearer-no-value",
        "markup", "not-ascii"])
@pytest.mark.parametrize("method, path", ENDPOINTS, ids=[f"{m} {p}" for m, p in ENDPOINTS])
def test_missing_or_unsupported_credentials_get_401_naming_the_accepted_ones(
        tenants, method, path, authorization, first_sentence):
    run, pause = paused_run()
    before, runs = snapshot(pause), Run.objects.count()
    url = API + path.format(pause=pause.pk, run=run.pk)
    response = getattr(client_sending(authorization), method)(
        url, {"answer": APPROVE, "agent": "echo", "input": {}}, format="json")
    assert refused_401(response) == f"{first_sentence} {ACCEPTED}"
    assert snapshot(pause) == before
    assert Run.objects.count() == runs and not Decision.objects.exists()


def test_the_refusal_never_repeats_the_credential_it_was_sent(tenants):
    response = client_sending("Bearer sk-live-very-secret").get(f"{API}pauses/")
    assert "very-secret" not in refused_401(response)
    assert b"very-secret" not in response.content


def test_a_token_header_without_a_key_is_refused_by_drf_as_not_authenticated(tenants):
    _, pause = paused_run()
    before = snapshot(pause)
    response = client_sending("Token").post(f"{API}pauses/{pause.pk}/approve/", {},
                                            format="json")
    assert "No credentials provided" in refused_401(response)
    assert snapshot(pause) == before


def test_resume_needs_no_login_and_ignores_a_scheme_it_does_not_take(tenants):
    """The token is the credential of ``resume/``; a stray header does not block it."""
    _, pause = paused_run()
    response = client_sending("Bearer abc").post(
        f"{API}resume/", {"token": token_for(pause), "answer": APPROVE}, format="json")
    assert response.status_code == 202, response.json()
    pause.refresh_from_db()
    assert pause.status == "answered" and pause.answered_by is None


@pytest.mark.parametrize("authenticators, said", [
    ([SessionAuthentication(), TokenAuthentication()],
     "`Authorization: Token <key>` or a session login"),
    ([BasicAuthentication(), TokenAuthentication(), SessionAuthentication()],
     "`Authorization: Basic <credentials>`, `Authorization: Token <key>` or a session login"),
    ([TokenAuthentication()], "`Authorization: Token <key>`"),
    ([], "the credentials this deployment accepts"),
], ids=["session-and-token", "basic-token-session", "token", "none"])
def test_the_accepted_credentials_are_read_from_the_projects_authenticators(authenticators, said):
    request = APIRequestFactory().get("/")
    assert accepted_credentials(request, authenticators) == said

