"""An approval whose action has no ``args_schema``: nothing checks what a reviewer edits
it to. The review page says so beside the JSON editor, and ``request_pause`` logs it,
once per agent and process."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from symfonic_django import turns
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run
from tests.testapp.models import Tenant
from tests.testapp.seed import seed_users

from .admin_pages import login, page, ship_pause

pytestmark = pytest.mark.django_db

WARNING = "Nothing checks these arguments"


@pytest.fixture
def users(tenants: dict[str, Tenant]) -> dict[str, Any]:
    return seed_users()


def test_an_action_without_a_schema_gets_the_json_editor_and_the_warning(users):
    body = login("alice").get(page(ship_pause(schema=None))).content.decode()
    assert '<textarea name="args_0"' in body
    assert WARNING in body


def test_an_action_whose_schema_the_form_cannot_draw_gets_the_json_editor_without_it(users):
    schema = {"type": "object", "properties": {"parcels": {"type": "array"}}}
    body = login("alice").get(page(ship_pause(schema=schema, args={"parcels": [1]}))).content
    assert '<textarea name="args_0"' in body.decode() and "Argument schema" in body.decode()
    assert WARNING not in body.decode()


def test_request_pause_warns_once_per_agent_of_an_approval_without_a_schema(
        tenants, caplog, monkeypatch):
    monkeypatch.setattr(turns.pausing, "_warned_unchecked", set())
    with caplog.at_level(logging.WARNING, logger="symfonic_django.turns"):
        for agent in ("siblings", "siblings", "echo"):  # echo's approval has a schema
            assert execute_run(start_run(agent, {}, scope="acme", dispatch=False).pk) == "paused"
    warned = [r.getMessage() for r in caplog.records
              if "without an args_schema" in r.getMessage()]
    assert warned == [warned[0]] and "'siblings'" in warned[0] and "approve tool0 " in warned[0]
