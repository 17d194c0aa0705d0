"""A ``thread_id`` is the caller's name for a conversation inside its own scope: two
tenants that use the same one never share a checkpoint, a "thread is paused" refusal, or
a message, on the app's saver or on a checkpointer of the deployment's own.

Replays the finding: alice (acme) used thread T with ``refund_graph``; a globex reviewer
then started ``refund_graph`` on T, continued acme's checkpoints, and alice's next run on
T was refused ``thread_paused`` naming globex's run and pause."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.db import connection
from langgraph.checkpoint.memory import InMemorySaver
from rest_framework.test import APIClient

from symfonic_django import pauses
from symfonic_django.agents.langgraph import langgraph_agent
from symfonic_django.checkpoint import DjangoSaver
from symfonic_django.models import GraphCheckpoint, GraphCheckpointWrite, Pause, Run, RunStatus
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run
from tests.testapp.models import Refund
from tests.testapp.seed import seed_users

from ..conftest import snapshot
from .conftest import (
    checkpoint_key,
    continue_run,
    events_of,
    pauses_of,
    postgres_saver,
    run_turn,
    thread_rows,
)
from .graphs import questions_graph

pytestmark = pytest.mark.django_db

API = "/api/symfonic/"
THREAD = "T"


@pytest.fixture
def clients(tenants: Any) -> dict[str, APIClient]:
    """alice (acme) and bob (globex), each with start, view and answer in their own tenant."""
    made = {}
    for name, user in seed_users().items():
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {user['token']}")
        made[name] = client
    return made


def start_over_the_api(client: APIClient, order_id: str, amount: float) -> Run:
    """``POST runs/`` of ``refund_graph`` on THREAD, then its turn, as a worker runs it."""
    response = client.post(f"{API}runs/", {
        "agent": "refund_graph", "thread_id": THREAD,
        "input": {"refunds": [{"order_id": order_id, "amount": amount}]}}, format="json")
    assert response.status_code == 202, response.json()
    run_id = response.json()["run_id"]
    execute_run(run_id)
    return Run.objects.get(pk=run_id)


def conversation(scope: str) -> str:
    """Everything the graph's state holds of the scope's THREAD, as the model would read it."""
    saved = DjangoSaver().get_tuple({"configurable": {"thread_id": checkpoint_key(THREAD,
                                                                                   scope)}})
    assert saved is not None
    return json.dumps([m.text for m in saved.checkpoint["channel_values"]["messages"]])


def writers(scope: str) -> set[str]:
    """The scopes of the runs that wrote the checkpoints stored under the scope's THREAD."""
    run_ids = set(GraphCheckpoint.objects.filter(thread_id=checkpoint_key(THREAD, scope))
                  .values_list("run_id", flat=True))
    runs = dict(Run.objects.filter(pk__in=run_ids).values_list("pk", "scope_key"))
    assert {str(pk) for pk in runs} == run_ids  # every row names a run of the app's
    return set(runs.values())


def everything_said(run: Run) -> str:
    return json.dumps(events_of(run))


def test_two_tenants_on_one_thread_id_share_no_checkpoint_message_or_refusal(clients):
    alice_first = start_over_the_api(clients["alice"], "A-1", 10)
    assert alice_first.status == RunStatus.PAUSED
    [alice_pause] = pauses_of(alice_first)

    # bob (globex) starts the same agent on the same thread id: a conversation of his own.
    bob_run = start_over_the_api(clients["bob"], "G-7", 70)
    assert bob_run.status == RunStatus.PAUSED, events_of(bob_run)
    [bob_pause] = pauses_of(bob_run)
    assert [a["args"]["order_id"] for a in bob_pause.prompt["action_requests"]] == ["G-7"]
    assert (bob_pause.thread_id, bob_run.thread_id) == (THREAD, THREAD)  # the caller's name
    assert "A-1" not in everything_said(bob_run) and "G-7" not in everything_said(alice_first)
    assert "A-1" not in conversation("globex") and "G-7" not in conversation("acme")
    assert writers("acme") == {"acme"} and writers("globex") == {"globex"}
    # No checkpointer row is keyed by the caller's name alone.
    assert not GraphCheckpoint.objects.filter(thread_id=THREAD).exists()
    assert not GraphCheckpointWrite.objects.filter(thread_id=THREAD).exists()

    # alice's next run on T waits for her own pause, and is refused naming hers alone.
    before = (snapshot(alice_pause), snapshot(bob_pause), thread_rows(THREAD, "acme"),
              thread_rows(THREAD, "globex"), Refund.objects.count())
    refused = start_over_the_api(clients["alice"], "A-2", 20)
    assert refused.status == RunStatus.FAILED
    assert refused.error["code"] == "thread_paused"
    assert str(alice_pause.pk) in refused.error["message"]
    assert str(alice_first.pk) in refused.error["message"]
    for foreign in (bob_run.pk, bob_pause.pk):
        assert str(foreign) not in everything_said(refused)
    assert not Pause.objects.filter(run=refused).exists()
    assert (snapshot(alice_pause), snapshot(bob_pause), thread_rows(THREAD, "acme"),
            thread_rows(THREAD, "globex"), Refund.objects.count()) == before

    # alice approves; her thread resumes from her own checkpoint, and records her refund.
    response = clients["alice"].post(f"{API}pauses/{alice_pause.pk}/answer/",
                                     {"answer": {"decisions": [{"type": "approve"}]}},
                                     format="json")
    assert response.status_code == 202, response.json()
    done = continue_run(response.json()["run_id"])
    assert done.status == RunStatus.COMPLETED, events_of(done)
    assert sorted(Refund.objects.values_list("order_id", flat=True)) == ["A-1"]

    # bob's pause still waits on globex's thread, and does not hold alice's: her next run
    # on T goes ahead, on her conversation alone.
    assert snapshot(bob_pause)["status"] == "pending"
    alice_again = start_over_the_api(clients["alice"], "A-3", 30)
    assert alice_again.status == RunStatus.PAUSED, events_of(alice_again)
    assert "G-7" not in conversation("acme") and "A-3" in conversation("acme")
    assert "A-" not in conversation("globex")
    assert writers("acme") == {"acme"} and writers("globex") == {"globex"}


def test_a_thread_paused_in_one_tenant_does_not_hold_the_other(tenants):
    acme = run_turn("lg_questions", {"ask": True}, thread_id=THREAD, scope="acme")
    [acme_pause] = pauses_of(acme)

    globex = run_turn("lg_questions", {"ask": True}, thread_id=THREAD, scope="globex")

    assert globex.status == RunStatus.PAUSED, events_of(globex)
    assert str(acme.pk) not in json.dumps(events_of(globex))
    assert str(acme_pause.pk) not in json.dumps(events_of(globex))
    [globex_pause] = pauses_of(globex)
    assert globex_pause.prompt == {"question": "Which order?"}


# --- a checkpointer of the deployment's own ------------------------------------------------

SHARED_MEMORY = InMemorySaver()
memory_agent = langgraph_agent(lambda scope: questions_graph(), checkpointer=SHARED_MEMORY)


postgres_agent = langgraph_agent(lambda scope: questions_graph(), checkpointer=postgres_saver)


@pytest.fixture(autouse=True)
def own_checkpointer_agents(langgraph_agents: None, settings: Any) -> None:
    settings.SYMFONIC = {**settings.SYMFONIC, "AGENTS": {
        **settings.SYMFONIC["AGENTS"],
        "lg_memory": f"{__name__}.memory_agent", "lg_postgres": f"{__name__}.postgres_agent"}}


def keys_on_memory_saver(thread_id: str) -> set[str]:
    return {t.config["configurable"]["thread_id"] for t in SHARED_MEMORY.list(None)
            if t.config["configurable"]["thread_id"].endswith(f":{thread_id}")}


def keys_on_postgres_saver(thread_id: str) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT thread_id FROM checkpoints WHERE thread_id LIKE %s",
                       [f"%{thread_id}"])
        return {row[0] for row in cursor.fetchall()}


def both_tenants_answer_the_same_thread_id(agent: str, thread_id: str) -> None:
    """acme and globex each ask, on one thread id, and answer differently; each conversation
    ends with its own answers alone, and neither is refused for the other's pause."""
    acme = run_turn(agent, {"ask": True}, thread_id=thread_id, scope="acme")
    [acme_first] = pauses_of(acme)
    acme_second_turn = continue_run(pauses.answer_pause(acme_first.pk, "acme-order")
                                    .continuation.pk)
    [acme_second] = pauses_of(acme_second_turn)  # acme waits on "How much?"

    globex = run_turn(agent, {"ask": True}, thread_id=thread_id, scope="globex")
    assert globex.status == RunStatus.PAUSED, events_of(globex)
    [globex_first] = pauses_of(globex)
    assert globex_first.prompt == {"question": "Which order?"}  # not acme's second question
    globex_second_turn = continue_run(pauses.answer_pause(globex_first.pk, "globex-order")
                                      .continuation.pk)
    [globex_second] = pauses_of(globex_second_turn)

    acme_done = continue_run(pauses.answer_pause(acme_second.pk, {"amount": 5})
                             .continuation.pk)
    globex_done = continue_run(pauses.answer_pause(globex_second.pk, {"amount": 7})
                               .continuation.pk)
    assert acme_done.output == {"ask": True, "answers": ["acme-order", {"amount": 5}]}
    assert globex_done.output == {"ask": True, "answers": ["globex-order", {"amount": 7}]}
    assert not GraphCheckpoint.objects.exists()  # all of it on the deployment's checkpointer


def test_an_own_in_memory_saver_keeps_two_tenants_threads_apart(tenants):
    thread_id = f"mem-{uuid.uuid4()}"
    both_tenants_answer_the_same_thread_id("lg_memory", thread_id)
    assert keys_on_memory_saver(thread_id) == {checkpoint_key(thread_id, "acme"),
                                               checkpoint_key(thread_id, "globex")}


@pytest.mark.postgres
def test_an_own_async_postgres_saver_keeps_two_tenants_threads_apart(postgres_saver_tables):
    thread_id = f"pg-{uuid.uuid4()}"
    both_tenants_answer_the_same_thread_id("lg_postgres", thread_id)
    assert keys_on_postgres_saver(thread_id) == {checkpoint_key(thread_id, "acme"),
                                                 checkpoint_key(thread_id, "globex")}


def test_the_run_list_by_thread_or_session_id_gives_the_callers_scope_alone(clients):
    mine = start_run("lg_questions", {"ask": False}, scope="acme", thread_id=THREAD,
                     session_id="S", dispatch=False)
    theirs = start_run("lg_questions", {"ask": False}, scope="globex", thread_id=THREAD,
                       session_id="S", dispatch=False)
    for name, run in (("alice", mine), ("bob", theirs)):
        for query in (f"thread_id={THREAD}", "session_id=S"):
            listed = clients[name].get(f"{API}runs/?{query}").json()["results"]
            assert [r["id"] for r in listed] == [str(run.pk)], (name, query)
