"""Fixtures of the LangGraph tests: the graphs' agents registered, and readers of what a
turn leaves behind (its pauses, its events, the thread's rows on the checkpoint saver)."""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg.conninfo import make_conninfo

from symfonic_django.checkpoint import DjangoSaver
from symfonic_django.models import GraphCheckpoint, GraphCheckpointWrite
from symfonic_django.scopes import scope_key
from symfonic_django.threads import checkpoint_thread_id

from ..turn_drivers import continue_run, events_of, pauses_of, run_turn, types_of  # noqa: F401
from .docs_project import project  # noqa: F401  (docs/langgraph.md's project: a fixture)
from .graphs import AGENTS, CALLS, FAIL_ONCE, questions_graph


@pytest.fixture(autouse=True)
def langgraph_agents(settings: Any, tenants: Any) -> None:
    settings.SYMFONIC = {**settings.SYMFONIC,
                         "AGENTS": {**settings.SYMFONIC["AGENTS"], **AGENTS}}
    CALLS.clear()
    FAIL_ONCE.clear()












def checkpoint_key(thread_id: str, scope: str = "acme") -> str:
    """The key the checkpointer holds the caller's ``thread_id`` of ``scope`` under."""
    return checkpoint_thread_id(scope_key(scope), thread_id)


def moved_on_outside_the_app(thread_id: str, graph_input: Any) -> None:
    """Another program drives acme's thread (by its checkpointer key) with new input: its
    pending interrupt is dropped."""
    graph = questions_graph().copy(update={"checkpointer": DjangoSaver()})
    # async_to_sync, as a turn runs: the saver's queries come back to this thread's
    # connection, inside the test's transaction.
    async_to_sync(graph.ainvoke)(graph_input,
                                 {"configurable": {"thread_id": checkpoint_key(thread_id)}})


def thread_rows(thread_id: str, scope: str = "acme") -> tuple[list[Any], list[Any]]:
    """Every checkpoint and pending write of a scope's thread: what "the thread is unchanged"
    compares."""
    key = checkpoint_key(thread_id, scope)
    checkpoints = list(GraphCheckpoint.objects.filter(thread_id=key).order_by(
        "checkpoint_ns", "checkpoint_id").values_list("checkpoint_ns", "checkpoint_id"))
    writes = list(GraphCheckpointWrite.objects.filter(thread_id=key).order_by(
        "checkpoint_ns", "checkpoint_id", "task_id", "idx").values_list(
            "checkpoint_id", "task_id", "idx", "channel", "value"))
    return checkpoints, [(*w[:4], bytes(w[4])) for w in writes]


# --- a checkpointer of the deployment's own: AsyncPostgresSaver on the test database ------

def database_conninfo() -> str:
    """The psycopg conninfo of the database the tests run on (the test database)."""
    given = connection.settings_dict
    parts = {"dbname": given["NAME"], "user": given["USER"], "password": given["PASSWORD"],
             "host": given["HOST"], "port": str(given["PORT"] or "")}
    return make_conninfo("", **{key: value for key, value in parts.items() if value})


def postgres_saver() -> AbstractAsyncContextManager[AsyncPostgresSaver]:
    # from_conn_string connects with autocommit=True and prepare_threshold=0, as the
    # saver's docs require of a connection given to it.
    return AsyncPostgresSaver.from_conn_string(database_conninfo())


@pytest.fixture(scope="module")
def postgres_saver_tables(django_db_setup: Any, django_db_blocker: Any) -> None:
    """The saver's tables in the test database, made once (``setup()``), as a deployment does."""
    async def setup() -> None:
        async with postgres_saver() as saver:
            await saver.setup()

    with django_db_blocker.unblock():
        if connection.vendor == "postgresql":
            asyncio.run(setup())
