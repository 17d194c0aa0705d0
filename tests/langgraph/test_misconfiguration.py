"""A graph the app cannot pause on is refused as a configuration error: one without a
checkpointer (its interrupts would be kept nowhere) or with static breakpoints
(``interrupt_before`` / ``interrupt_after`` stop it with nothing a person could answer).

A compiled graph is refused when its agent is made, before any run; a graph that a
factory builds for each turn (or a breakpoint inside a subgraph) can only be seen when
the turn runs, which then ends ``turn.failed`` with code ``configuration_error``."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.graph import END, START, StateGraph

from symfonic_django.agents.langgraph import LangGraphAgent, langgraph_agent
from symfonic_django.checkpoint import DjangoSaver
from symfonic_django.exceptions import InteractionConfigurationError
from symfonic_django.models import GraphCheckpoint, RunStatus

from .conftest import events_of, run_turn
from .graphs import CALLS

pytestmark = pytest.mark.django_db


def step(state: dict[str, Any]) -> dict[str, Any]:
    CALLS["step"] += 1
    return {}


def two_steps(**compile_args: Any) -> Any:
    builder: StateGraph[Any] = StateGraph(dict)
    builder.add_node("first", step)
    builder.add_node("second", step)
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", END)
    return builder.compile(**compile_args)


def with_a_stopping_subgraph() -> Any:
    builder: StateGraph[Any] = StateGraph(dict)
    builder.add_node("inner", two_steps(interrupt_before=["second"]))
    builder.add_edge(START, "inner")
    builder.add_edge("inner", END)
    return builder.compile()


@pytest.mark.parametrize("make", [
    lambda: langgraph_agent(two_steps()),
    lambda: langgraph_agent(two_steps(), input_schema={"type": "object"}),
    lambda: LangGraphAgent(two_steps()),
], ids=["langgraph_agent", "with_an_input_schema", "LangGraphAgent"])
def test_a_compiled_graph_without_a_checkpointer_is_refused_when_its_agent_is_made(make):
    with pytest.raises(InteractionConfigurationError, match="needs a checkpointer"):
        make()


@pytest.mark.parametrize("compile_args", [
    {"interrupt_before": ["second"]},
    {"interrupt_after": ["first"]},
    {"interrupt_before": "*"},
])
def test_a_compiled_graph_with_static_breakpoints_is_refused_when_its_agent_is_made(
        compile_args):
    with pytest.raises(InteractionConfigurationError, match="static breakpoints"):
        langgraph_agent(two_steps(**compile_args), checkpointer=DjangoSaver())
    with pytest.raises(InteractionConfigurationError, match="static breakpoints"):
        langgraph_agent(two_steps(checkpointer=DjangoSaver(), **compile_args))


def test_a_compiled_graph_with_a_checkpointer_and_no_breakpoints_is_one_agent_for_every_turn():
    agents = langgraph_agent(two_steps(), checkpointer=DjangoSaver())
    assert agents("acme") is agents("globex")


no_checkpointer_agent = langgraph_agent(lambda scope: two_steps())
breakpoint_agent = langgraph_agent(lambda scope: two_steps(interrupt_after=["first"]),
                                   checkpointer=DjangoSaver())
subgraph_breakpoint_agent = langgraph_agent(lambda scope: with_a_stopping_subgraph(),
                                            checkpointer=DjangoSaver())


@pytest.fixture(autouse=True)
def misconfigured_agents(langgraph_agents: None, settings: Any) -> None:
    settings.SYMFONIC = {**settings.SYMFONIC, "AGENTS": {
        **settings.SYMFONIC["AGENTS"],
        "lg_no_checkpointer": f"{__name__}.no_checkpointer_agent",
        "lg_breakpoint": f"{__name__}.breakpoint_agent",
        "lg_subgraph_breakpoint": f"{__name__}.subgraph_breakpoint_agent"}}


@pytest.mark.parametrize("agent, words", [
    ("lg_no_checkpointer", "needs a checkpointer"),
    ("lg_breakpoint", "static breakpoints"),
])
def test_a_graph_a_factory_builds_misconfigured_fails_its_turn_as_a_configuration_error(
        agent, words):
    run = run_turn(agent, {})
    assert run.status == RunStatus.FAILED
    kind, data = events_of(run)[-1]
    assert kind == "turn.failed" and words in data["message"]
    assert not CALLS["step"] and not GraphCheckpoint.objects.exists()  # the graph never ran
    assert data["code"] == "configuration_error"


def test_a_breakpoint_inside_a_subgraph_fails_the_turn_where_it_stops(tenants):
    run = run_turn("lg_subgraph_breakpoint", {})
    assert run.status == RunStatus.FAILED
    kind, data = events_of(run)[-1]
    assert kind == "turn.failed" and "static breakpoints" in data["message"]
    assert data["code"] == "configuration_error"
