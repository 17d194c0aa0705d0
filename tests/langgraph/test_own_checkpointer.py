"""A checkpointer of the deployment's own choice (``checkpointer=``): a saver every turn
shares, or a callable that makes one inside each turn's event loop, as
``langgraph-checkpoint-postgres``'s ``AsyncPostgresSaver`` needs (it is tied to the loop
it was made in, and each turn runs on a loop of its own)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver

from symfonic_django import pauses
from symfonic_django.agents.langgraph import LangGraphAgent, langgraph_agent
from symfonic_django.exceptions import InteractionConfigurationError
from symfonic_django.models import GraphCheckpoint, RunStatus

from .conftest import (
    checkpoint_key,
    continue_run,
    database_conninfo,
    events_of,
    pauses_of,
    postgres_saver,
    run_turn,
)
from .graphs import CALLS, questions_graph

pytestmark = pytest.mark.django_db


postgres_questions_agent = langgraph_agent(lambda scope: questions_graph(),
                                           checkpointer=postgres_saver)


@pytest.fixture(autouse=True)
def own_checkpointer_agents(langgraph_agents: None, settings: Any) -> None:
    settings.SYMFONIC = {**settings.SYMFONIC, "AGENTS": {
        **settings.SYMFONIC["AGENTS"],
        "lg_postgres_questions": f"{__name__}.postgres_questions_agent"}}


def checkpoints_on_postgres_saver(thread_id: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM checkpoints WHERE thread_id = %s", [thread_id])
        (count,) = cursor.fetchone()
    return int(count)


@pytest.mark.postgres
def test_an_async_postgres_saver_made_for_each_turn_pauses_and_resumes_the_graph(
        postgres_saver_tables):
    run = run_turn("lg_postgres_questions", {"ask": True})
    assert run.status == RunStatus.PAUSED, events_of(run)
    [first] = pauses_of(run)
    assert first.prompt == {"question": "Which order?"}
    # The graph state is on the postgres saver's tables, not the app's.
    assert checkpoints_on_postgres_saver(checkpoint_key(str(run.pk))) > 0
    assert not GraphCheckpoint.objects.exists()

    # Each continuation is a turn of its own, on an event loop of its own, with a saver
    # made in that loop: the thread is read back from PostgreSQL where the last one left it.
    second_turn = continue_run(pauses.answer_pause(first.pk, "A-1").continuation.pk)
    assert second_turn.status == RunStatus.PAUSED, events_of(second_turn)
    [second] = pauses_of(second_turn)
    assert second.prompt == {"question": "How much?"}

    last = continue_run(pauses.answer_pause(second.pk, {"amount": 5}).continuation.pk)
    assert last.status == RunStatus.COMPLETED, events_of(last)
    assert last.output == {"ask": True, "answers": ["A-1", {"amount": 5}]}
    assert CALLS["two_questions.after"] == 1


@pytest.mark.postgres
def test_the_sync_postgres_saver_is_refused_when_the_agent_is_made_naming_its_async_one(
        postgres_saver_tables):
    with PostgresSaver.from_conn_string(database_conninfo()) as saver:
        with pytest.raises(InteractionConfigurationError, match="AsyncPostgresSaver"):
            LangGraphAgent(questions_graph(), checkpointer=saver)


class SyncOnlySaver(BaseCheckpointSaver[Any]):
    """A saver that implements LangGraph's sync methods only (as ``PostgresSaver`` does)."""

    def get_tuple(self, config: Any) -> None:
        return None


def test_a_saver_without_async_methods_is_refused_when_the_agent_is_made():
    with pytest.raises(InteractionConfigurationError, match="only LangGraph's sync methods"):
        LangGraphAgent(questions_graph(), checkpointer=SyncOnlySaver())
    with pytest.raises(InteractionConfigurationError, match="only LangGraph's sync methods"):
        LangGraphAgent(questions_graph().copy(update={"checkpointer": SyncOnlySaver()}))


def not_a_context_manager() -> Any:
    return SyncOnlySaver()


def test_a_callable_that_does_not_make_an_async_context_manager_fails_the_turn(settings):
    settings.SYMFONIC = {**settings.SYMFONIC, "AGENTS": {
        **settings.SYMFONIC["AGENTS"], "lg_bad_saver": f"{__name__}.bad_saver_agent"}}
    run = run_turn("lg_bad_saver", {"ask": True})
    assert run.status == RunStatus.FAILED
    kind, data = events_of(run)[-1]
    assert kind == "turn.failed" and "async context manager" in data["message"]
    assert data["code"] == "configuration_error"


bad_saver_agent = langgraph_agent(lambda scope: questions_graph(),
                                  checkpointer=not_a_context_manager)
