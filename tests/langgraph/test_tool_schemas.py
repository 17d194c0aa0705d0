"""A LangGraph agent's approvals take their tools' own argument schemas.

``HumanInTheLoopMiddleware`` sends no ``args_schema``; the adapter gives each
approval action the schema of its tool (``tool.tool_call_schema``), written in
the review form's terms (``hitl.plain_schema``), unless the deployment's
``args_schemas=`` names the action. And the middleware's made-up description
("Tool execution requires approval ...") becomes the call in words.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable
from typing import Annotated, Any, Literal

import jsonschema
import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import Interrupt
from pydantic import BaseModel, Field
from rest_framework.test import APIClient

from symfonic_django import hitl
from symfonic_django.agents.langgraph import (
    DEFAULT_DESCRIPTION_PREFIX,
    LangGraphAgent,
    langgraph_agent,
    pause_request,
    tool_args_schemas,
)
from symfonic_django.checkpoint import DjangoSaver
from symfonic_django.models import Decision, Pause, Run, RunStatus
from tests.testapp.seed import seed_users

from ..admin_pages import login, page
from ..conftest import snapshot
from .conftest import continue_run, events_of, pauses_of, run_turn
from .graphs import CALLS, ScriptedChatModel, refunds_input

pytestmark = pytest.mark.django_db

ID = "0" * 32


# --- the issue's agent: grant_credits, its pydantic model saying credits >= 0 -------------

@tool
def grant_credits(user_id: int, credits: Annotated[int, Field(ge=0, le=1000)],
                  note: str | None = None, channel: Literal["mail", "sms"] = "mail") -> str:
    """Grant credits to a user."""
    CALLS["grant_credits"] += 1
    return f"granted {credits} to {user_id}"


class CreditsDesk(ScriptedChatModel):
    """Calls ``grant_credits`` with the user's JSON message as its arguments, then is done."""

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return AIMessage("Done.", id=f"ai-done-{len(messages)}")
        args = json.loads(next(m for m in messages if isinstance(m, HumanMessage)).text)
        return AIMessage("Granting.", id=f"ai-ask-{len(messages)}", tool_calls=[
            {"name": "grant_credits", "args": args, "id": "call-1", "type": "tool_call"}])


credits_agent = langgraph_agent(
    lambda scope: create_agent(CreditsDesk(), tools=[grant_credits], middleware=[
        HumanInTheLoopMiddleware({"grant_credits": True})]),
    checkpointer=DjangoSaver(), input=refunds_input)

CREDITS_SCHEMA = {
    "type": "object", "title": "grant_credits", "description": "Grant credits to a user.",
    "properties": {
        "user_id": {"type": "integer", "title": "User Id"},
        "credits": {"type": "integer", "minimum": 0, "maximum": 1000, "title": "Credits"},
        "note": {"type": ["string", "null"], "title": "Note"},
        "channel": {"type": "string", "enum": ["mail", "sms"], "title": "Channel"},
    },
    "required": ["user_id", "credits"],
}


@pytest.fixture
def users(settings: Any, tenants: Any) -> dict[str, Any]:
    settings.SYMFONIC = {**settings.SYMFONIC, "AGENTS": {
        **settings.SYMFONIC["AGENTS"], "credits": "tests.langgraph.test_tool_schemas.credits_agent"}}
    return seed_users()


def test_a_tools_pydantic_model_becomes_the_approvals_form(users):
    # The model passes note=None explicitly: the tool takes it, so the schema does too.
    run = run_turn("credits", {"user_id": 42, "credits": 10, "note": None})
    [pause] = pauses_of(run)
    [request] = pause.prompt["action_requests"]
    # (In the args' order, which PostgreSQL's jsonb sets for the run's input.)
    assert request["description"] == hitl.call_text("grant_credits", request["args"])
    assert {"user_id=42", "credits=10", "note=null"} <= set(
        request["description"].removeprefix("grant_credits(").removesuffix(")").split(", "))
    assert pause.prompt["review_configs"][0]["args_schema"] == CREDITS_SCHEMA

    body = login("alice").get(page(pause)).content.decode()
    for name, attributes in (("user_id", ['type="number"']),
                             ("credits", ['type="number"', 'min="0"', 'max="1000"']),
                             ("note", ['type="text"'])):
        [tag] = [t for t in body.split("<input")[1:] if f'name="args_0.{name}"' in t]
        assert all(attribute in tag for attribute in attributes), tag
    assert '<select name="args_0.channel"' in body
    assert '<textarea name="args_0"' not in body


def test_credits_minus_5_is_refused_and_never_fails_the_turn(users):
    """The issue's finding: -5 was accepted, and the turn then failed on the database's
    check constraint. Now it is refused where it is given, with nothing changed."""
    run = run_turn("credits", {"user_id": 42, "credits": 10})
    [pause] = pauses_of(run)
    before = snapshot(pause)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {users['alice']['token']}")
    response = api.post(f"/api/symfonic/pauses/{pause.pk}/answer/", {"answer": {"decisions": [
        {"type": "edit", "edited_action": {"name": "grant_credits",
                                           "args": {"user_id": 42, "credits": -5}}}]}},
        format="json")
    assert (response.status_code, response.json()["code"]) == (400, "invalid_answer")
    assert "credits" in response.json()["detail"]
    response = login("alice").post(page(pause), {
        "decision_0": "edit", "args_0.user_id": "42", "args_0.credits": "-5"})
    assert response.status_code == 200 and not response.context["form"].is_valid()
    assert snapshot(pause) == before and not Decision.objects.filter(pause=pause).exists()
    assert Run.objects.get(pk=run.pk).status == RunStatus.PAUSED

    response = login("alice").post(page(pause), {
        "decision_0": "edit", "args_0.user_id": "42", "args_0.credits": "5", "args_0.note": "",
        "args_0.channel": '"sms"'})
    assert response.status_code == 302
    done = continue_run(Pause.objects.get(pk=pause.pk).continuation_id)
    assert done.status == RunStatus.COMPLETED
    [result] = [d["result"] for kind, d in events_of(done) if kind == "tool.completed"]
    assert "granted 5 to 42" in str(result) and CALLS["grant_credits"] == 1
    answer = Pause.objects.get(pk=pause.pk).answer  # the empty note was left out
    assert answer["decisions"][0]["edited_action"]["args"] == {
        "user_id": 42, "credits": 5, "channel": "sms"}


# --- the schema, written for the form, checks what the tool's does ---------------------------

class Color(BaseModel):
    name: Literal["red", "blue"]


class Address(BaseModel):
    city: Annotated[str, Field(min_length=1)]


class Node(BaseModel):
    label: str
    children: list[Node] = []


class Shipment(BaseModel):
    address: Address
    backup: Address | None = None
    parcels: list[int] = []


def test_plain_schema_inlines_definitions_and_writes_optional_as_nullable():
    original = Shipment.model_json_schema()
    plain = hitl.plain_schema(original)
    assert "$defs" not in plain and "default" not in json.dumps(plain)
    assert plain["properties"]["address"] == {
        "type": "object", "title": "Address", "properties": {
            "city": {"type": "string", "minLength": 1, "title": "City"}}, "required": ["city"]}
    assert "anyOf" in plain["properties"]["backup"]  # an optional object: the JSON editor


class Tree(BaseModel):
    root: Node


def test_a_recursive_model_is_left_as_it_is():
    original = Tree.model_json_schema()
    assert "$defs" in original and hitl.plain_schema(original) == original


@pytest.mark.parametrize("value", [
    {"address": {"city": "Lyon"}}, {"address": {"city": ""}}, {"address": {}},
    {"address": {"city": "Lyon"}, "backup": None}, {"address": {"city": "Lyon"}, "backup": 3},
    {"address": {"city": "Lyon"}, "parcels": [1, "x"]},
])
def test_the_plain_schema_accepts_exactly_what_the_original_accepts(value):
    original = Shipment.model_json_schema()
    verdicts = [jsonschema.Draft202012Validator(schema).is_valid(value)
                for schema in (original, hitl.plain_schema(original))]
    assert verdicts[0] == verdicts[1]


def test_an_optional_enum_takes_null_among_its_values():
    schema = {"type": "object", "properties": {"color": {
        "anyOf": [{"enum": ["red", "blue"], "type": "string"}, {"type": "null"}],
        "default": None, "title": "Color"}}}
    assert hitl.plain_schema(schema)["properties"]["color"] == {
        "enum": ["red", "blue", None], "type": ["string", "null"], "title": "Color"}


# --- which tools, and whose schema wins ------------------------------------------------------

@tool
def ship(order_id: str) -> str:
    """Ship an order."""
    return order_id


@tool("ship")
def ship_differently(order_id: int) -> str:
    """Another tool of the same name."""
    return str(order_id)


def tools_graph(*nodes: list[Any]) -> Any:
    builder = StateGraph(MessagesState)
    previous = START
    for number, tools in enumerate(nodes):
        builder.add_node(f"tools_{number}", ToolNode(tools))
        builder.add_edge(previous, f"tools_{number}")
        previous = f"tools_{number}"
    return builder.compile(checkpointer=DjangoSaver())


def test_the_tools_of_subgraphs_count_and_an_ambiguous_name_does_not():
    inner = tools_graph([grant_credits])
    builder = StateGraph(MessagesState)
    builder.add_node("inner", inner)
    builder.add_node("tools", ToolNode([ship]))
    builder.add_edge(START, "inner")
    builder.add_edge("inner", "tools")
    assert set(tool_args_schemas(builder.compile())) == {"grant_credits", "ship"}
    assert set(tool_args_schemas(tools_graph([ship], [ship_differently, grant_credits]))) == {
        "grant_credits"}


def test_the_deployments_args_schemas_win_over_the_tools_own():
    own = {"type": "object", "properties": {"order_id": {"type": "string", "maxLength": 3}}}
    agent = LangGraphAgent(tools_graph([ship, grant_credits]), args_schemas={"ship": own})
    assert agent.args_schemas == {"ship": own, "grant_credits": CREDITS_SCHEMA}


# --- descriptions ----------------------------------------------------------------------------

def test_the_default_prefix_is_the_middlewares():
    parameters = inspect.signature(HumanInTheLoopMiddleware.__init__).parameters
    assert parameters["description_prefix"].default == DEFAULT_DESCRIPTION_PREFIX


@pytest.mark.parametrize("description, shown", [
    (f"{DEFAULT_DESCRIPTION_PREFIX}\n\nTool: ship\nArgs: {{'order_id': 'A-1'}}",
     "ship(order_id=A-1)"),
    ("Please check.\n\nTool: ship\nArgs: {'order_id': 'A-1'}", "Please check: ship(order_id=A-1)"),
    ("Ship A-1 to Lyon", "Ship A-1 to Lyon"),  # the deployment's own words stay
])
def test_the_middlewares_made_up_description_becomes_the_call(description, shown):
    value = {"action_requests": [{"name": "ship", "args": {"order_id": "A-1"},
                                  "description": description}],
             "review_configs": [{"action_name": "ship", "allowed_decisions": ["approve"]}]}
    request = pause_request(Interrupt(value, ID))
    assert request.prompt["action_requests"][0]["description"] == shown
    per_call = pause_request(Interrupt({"type": "tool_approval", "tool_call_id": "c1",
                                        "name": "ship", "args": {"order_id": "A-1"},
                                        "description": description}, ID))
    assert per_call.prompt["action_requests"][0]["description"] == shown


@pytest.mark.parametrize("args", [{"user_id": 42, "credits": -5}, {"user_id": "42", "credits": 1}])
def test_a_proposal_outside_its_tools_schema_is_never_shown_for_approval(users, args):
    """Held to the tool's schema like a reviewer's edit, strictly: pydantic would take "42"
    for an integer, JSON Schema does not."""
    run = run_turn("credits", args)
    assert run.status == RunStatus.FAILED and not pauses_of(run)
    [failed] = [d for kind, d in events_of(run) if kind == "turn.failed"]
    assert failed["code"] == "invalid_proposal" and "grant_credits" in failed["message"]
    assert CALLS["grant_credits"] == 0


def test_a_tool_whose_schema_pydantic_cannot_write_is_left_out_and_the_rest_kept(caplog):
    @tool(args_schema=type("Strange", (BaseModel,), {
        "__annotations__": {"callback": Callable[[], None]}}))
    def strange(callback: Any) -> str:
        """A tool with an argument no JSON Schema describes."""
        return "no"

    with caplog.at_level(logging.WARNING):
        assert set(tool_args_schemas(tools_graph([strange, ship]))) == {"ship"}
    assert "'strange'" in caplog.text


def test_a_tool_whose_schema_is_not_json_schema_is_left_out(caplog):
    @tool(args_schema={"type": "object", "properties": {"n": {"type": "integer",
                                                              "minimum": "zero"}}})
    def broken(n: int) -> str:
        """A tool whose JSON Schema is not valid."""
        return str(n)

    with caplog.at_level(logging.WARNING):
        assert set(tool_args_schemas(tools_graph([broken, ship]))) == {"ship"}
    assert "The argument schema of tool 'broken' is not a valid JSON Schema" in caplog.text
