"""The Django checkpoint saver beyond the conformance suite: its rows, its constraints,
and a real LangGraph graph paused by ``interrupt()`` and resumed on it, sync and async."""

from __future__ import annotations

import operator
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any, TypedDict

import pytest
from asgiref.sync import async_to_sync
from django.db import IntegrityError, connection, transaction
from langgraph.checkpoint.base import CheckpointMetadata
from langgraph.checkpoint.conformance.test_utils import (
    generate_checkpoint,
    generate_config,
    generate_metadata,
)
from langgraph.checkpoint.serde.types import ERROR, INTERRUPT, RESUME
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from symfonic_django.checkpoint import DjangoSaver
from symfonic_django.models import GraphCheckpoint, GraphCheckpointWrite

pytestmark = pytest.mark.django_db


def put(saver: DjangoSaver, thread_id: str, *, ns: str = "", parent: dict | None = None,
        **metadata: Any) -> dict:
    config = generate_config(thread_id, checkpoint_ns=ns)
    if parent is not None:
        config["configurable"]["checkpoint_id"] = parent["configurable"]["checkpoint_id"]
    md: CheckpointMetadata = generate_metadata(**metadata)
    return saver.put(config, generate_checkpoint(), md, {})


def write_rows(thread_id: str) -> list[tuple[str, int, Any]]:
    return [
        (task_id, idx, DjangoSaver().serde.loads_typed((value_type, bytes(value))))
        for task_id, idx, value_type, value in GraphCheckpointWrite.objects.filter(
            thread_id=thread_id).order_by("task_id", "idx").values_list(
                "task_id", "idx", "value_type", "value")
    ]


# -- rows: what the SQL statements store, as the ORM reads it back --------------------------

def test_put_and_put_writes_store_one_row_each_with_every_column_as_given():
    saver = DjangoSaver()
    parent = put(saver, "t-rows")
    checkpoint = generate_checkpoint(channel_values={"order": "A-1"})
    config = generate_config("t-rows", checkpoint_ns="tool:1")
    config["configurable"]["checkpoint_id"] = parent["configurable"]["checkpoint_id"]
    stored = saver.put(config, checkpoint, generate_metadata(step=4, run_id="run-9",
                                                             note="caf\u00e9 \u2603"), {})
    saver.put_writes(stored, [("order", b"\x00bytes"), (INTERRUPT, {"ask": True})], "task-7",
                     task_path="~__pregel_pull, approve")

    row = GraphCheckpoint.objects.get(thread_id="t-rows", checkpoint_ns="tool:1")
    assert (row.checkpoint_id, row.parent_checkpoint_id, row.run_id) == (
        checkpoint["id"], parent["configurable"]["checkpoint_id"], "run-9")
    assert row.metadata == {"source": "loop", "step": 4, "parents": {}, "run_id": "run-9",
                            "note": "caf\u00e9 \u2603"}
    assert saver.serde.loads_typed((row.checkpoint_type, bytes(row.checkpoint))) == checkpoint
    writes = GraphCheckpointWrite.objects.filter(thread_id="t-rows").order_by("idx")
    assert [(w.checkpoint_ns, w.checkpoint_id, w.task_id, w.task_path, w.idx, w.channel,
             saver.serde.loads_typed((w.value_type, bytes(w.value)))) for w in writes] == [
        ("tool:1", checkpoint["id"], "task-7", "~__pregel_pull, approve", -3, INTERRUPT,
         {"ask": True}),
        ("tool:1", checkpoint["id"], "task-7", "~__pregel_pull, approve", 0, "order",
         b"\x00bytes"),
    ]


# -- writes: keys, constraints, order -------------------------------------------------------

def test_a_repeated_normal_write_is_ignored_and_the_first_value_kept():
    saver = DjangoSaver()
    stored = put(saver, "t-normal")

    saver.put_writes(stored, [("messages", "first")], "task-1")
    saver.put_writes(stored, [("messages", "second")], "task-1")

    assert write_rows("t-normal") == [("task-1", 0, "first")]


def test_a_repeated_special_write_overwrites_the_one_under_its_index():
    saver = DjangoSaver()
    stored = put(saver, "t-special")

    saver.put_writes(stored, [(INTERRUPT, {"ask": 1})], "task-1")
    saver.put_writes(stored, [(INTERRUPT, {"ask": 2})], "task-1")
    saver.put_writes(stored, [(ERROR, "boom"), (RESUME, "yes")], "task-1")

    assert write_rows("t-special") == [
        ("task-1", -4, "yes"), ("task-1", -3, {"ask": 2}), ("task-1", -1, "boom"),
    ]


def test_a_mixed_call_stores_normal_writes_once_and_overwrites_special_ones():
    saver = DjangoSaver()
    stored = put(saver, "t-mixed")

    saver.put_writes(stored, [("a", 1), (INTERRUPT, "first")], "task-1")
    saver.put_writes(stored, [("a", 2), (INTERRUPT, "second")], "task-1")

    assert write_rows("t-mixed") == [("task-1", -3, "second"), ("task-1", 0, 1)]


def test_the_database_refuses_a_second_row_under_a_write_key_or_a_checkpoint_key():
    saver = DjangoSaver()
    stored = put(saver, "t-unique")
    saver.put_writes(stored, [("a", 1)], "task-1")
    existing = GraphCheckpointWrite.objects.get(thread_id="t-unique")
    checkpoint = GraphCheckpoint.objects.get(thread_id="t-unique")

    existing.pk = None
    with pytest.raises(IntegrityError), transaction.atomic():
        existing.save()
    checkpoint.pk = None
    with pytest.raises(IntegrityError), transaction.atomic():
        checkpoint.save()

    assert GraphCheckpointWrite.objects.filter(thread_id="t-unique").count() == 1
    assert GraphCheckpoint.objects.filter(thread_id="t-unique").count() == 1


def test_a_task_with_hundreds_of_writes_stores_them_all_in_order():
    saver = DjangoSaver()
    stored = put(saver, "t-many")

    saver.put_writes(stored, [("__pregel_tasks", n) for n in range(300)], "fan-out")

    assert [value for _, _, value in saver.get_tuple(stored).pending_writes] == [*range(300)]


def test_pending_writes_come_in_task_path_then_task_id_then_index_order():
    saver = DjangoSaver()
    stored = put(saver, "t-order")
    # Stored out of order, with the punctuation real task paths have.
    saver.put_writes(stored, [("c", "b0"), ("c", "b1")], "b", task_path="~__pregel_pull, z")
    saver.put_writes(stored, [("c", "a0")], "a", task_path="~__pregel_pull, z")
    saver.put_writes(stored, [("c", "push")], "p", task_path="~__pregel_push, 0")
    saver.put_writes(stored, [("c", "input")], "i", task_path="")
    saver.put_writes(stored, [("c", "A")], "q", task_path="~__pregel_pull, A")

    pending = saver.get_tuple(stored).pending_writes

    assert [value for _, _, value in pending] == ["input", "A", "a0", "b0", "b1", "push"]


# -- metadata, versions -----------------------------------------------------------------------

def test_list_filters_on_whole_metadata_keys_and_a_missing_key_equals_none():
    saver = DjangoSaver()
    put(saver, "t-filter", step=1, **{"a__b": "x"})
    put(saver, "t-filter", step=2, flag=None)
    put(saver, "t-filter", step=3, flag=True, nested={"k": [1, 2]})

    def steps(**filter: Any) -> list[int]:
        return sorted(t.metadata["step"] for t in saver.list(generate_config("t-filter"),
                                                            filter=filter))

    assert steps(**{"a__b": "x"}) == [1]
    assert steps(flag=None) == [1, 2]
    assert steps(flag=True) == [3]
    assert steps(nested={"k": [1, 2]}) == [3]
    assert steps(nested={"k": [1]}) == []


def test_channel_versions_are_strings_that_sort_in_the_order_they_were_made():
    saver = DjangoSaver()
    versions = [saver.get_next_version(None, None)]
    for _ in range(11):
        versions.append(saver.get_next_version(versions[-1], None))

    assert all(isinstance(v, str) for v in versions)
    assert sorted(versions) == versions
    assert saver.get_next_version(3, None).startswith(f"{4:032}.")


# -- deletes, copies, prunes -----------------------------------------------------------------

def test_delete_for_runs_leaves_a_surviving_child_without_its_deleted_parent():
    saver = DjangoSaver()
    first = put(saver, "t-runs", run_id="run-1")
    second = put(saver, "t-runs", parent=first, run_id="run-2")

    saver.delete_for_runs(["run-1"])

    survivor = saver.get_tuple(second)
    assert survivor.metadata["run_id"] == "run-2"
    assert survivor.parent_config is None


def test_copy_thread_refuses_a_target_that_has_checkpoints_and_changes_nothing():
    saver = DjangoSaver()
    put(saver, "t-source")
    target = put(saver, "t-target")

    with pytest.raises(ValueError, match="already has checkpoints"):
        saver.copy_thread("t-source", "t-target")

    assert [t.config for t in saver.list(generate_config("t-target"))] == [target]


def test_keep_latest_refuses_a_thread_that_uses_a_delta_channel_and_prunes_nothing():
    saver = DjangoSaver()
    first = put(saver, "t-delta", counters_since_delta_snapshot={"messages": [1, 1]})
    put(saver, "t-delta", parent=first)
    put(saver, "t-plain")
    put(saver, "t-plain")

    with pytest.raises(NotImplementedError, match="t-delta"):
        saver.prune(["t-plain", "t-delta"])

    assert GraphCheckpoint.objects.filter(thread_id__in=["t-delta", "t-plain"]).count() == 4


def test_keep_latest_deletes_a_finished_subgraph_calls_namespace_and_keeps_a_current_one():
    saver = DjangoSaver()
    old_root = put(saver, "t-calls")
    old_id = old_root["configurable"]["checkpoint_id"]
    put(saver, "t-calls", ns="tool:1", parents={"": old_id})
    new_root = put(saver, "t-calls", parent=old_root)
    new_id = new_root["configurable"]["checkpoint_id"]
    current = put(saver, "t-calls", ns="tool:2", parents={"": new_id})
    saver.put_writes(current, [("x", 1)], "task")

    saver.prune(["t-calls"])

    kept = {(t.config["configurable"]["checkpoint_ns"], t.checkpoint["id"], t.parent_config)
            for t in saver.list({"configurable": {"thread_id": "t-calls"}})}  # every namespace
    assert kept == {("", new_id, None),
                    ("tool:2", current["configurable"]["checkpoint_id"], None)}
    assert saver.get_tuple(current).pending_writes == [("task", "x", 1)]


# -- connections ------------------------------------------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_an_operation_closes_a_connection_it_opened_and_keeps_one_it_found():
    def in_a_fresh_thread() -> bool:
        saver = DjangoSaver()
        put(saver, "t-thread")
        assert saver.get_tuple(generate_config("t-thread")) is not None
        return connection.connection is None

    # LangGraph's worker threads: nothing of theirs stays open (or taken from the pool).
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(in_a_fresh_thread).result() is True

    connection.ensure_connection()
    put(DjangoSaver(), "t-thread")
    assert connection.connection is not None


# -- a real graph: paused by interrupt(), resumed by Command(resume=...) ----------------------

class RefundState(TypedDict):
    order_id: str
    log: Annotated[list[str], operator.add]


def refund_graph(saver: DjangoSaver) -> Any:
    def propose(state: RefundState) -> dict:
        return {"log": [f"proposed {state['order_id']}"]}

    def approve(state: RefundState) -> dict:
        answer = interrupt({"question": f"Refund {state['order_id']}?"})
        return {"log": [f"answer {answer}"]}

    builder = StateGraph(RefundState)
    builder.add_node("propose", propose)
    builder.add_node("approve", approve)
    builder.add_edge(START, "propose")
    builder.add_edge("propose", "approve")
    builder.add_edge("approve", END)
    return builder.compile(checkpointer=saver)


# LangGraph saves a sync graph's checkpoints from its own worker threads: each has its own
# connection, so these tests commit for real, as a deployment does.
@pytest.mark.django_db(transaction=True)
def test_a_graph_pauses_on_the_django_saver_and_a_new_saver_resumes_it_sync():
    config = {"configurable": {"thread_id": "graph-sync"}}

    paused = refund_graph(DjangoSaver()).invoke({"order_id": "A-1", "log": []}, config)

    (pending,) = paused["__interrupt__"]
    assert pending.value == {"question": "Refund A-1?"}
    assert GraphCheckpointWrite.objects.filter(thread_id="graph-sync", channel=INTERRUPT).count() == 1

    # A new saver and graph, as after a restart: the state is in the database.
    graph = refund_graph(DjangoSaver())
    done = graph.invoke(Command(resume={pending.id: "yes"}), config)

    assert done == {"order_id": "A-1", "log": ["proposed A-1", "answer yes"]}
    assert graph.get_state(config).next == ()
    history = list(graph.get_state_history(config))
    assert [s.metadata["step"] for s in history] == sorted(
        (s.metadata["step"] for s in history), reverse=True)


@pytest.mark.django_db(transaction=True)
def test_a_graph_pauses_on_the_django_saver_and_a_new_saver_resumes_it_async():
    config = {"configurable": {"thread_id": "graph-async"}}

    async def pause_then_resume() -> tuple[Any, Any, Any]:
        paused = await refund_graph(DjangoSaver()).ainvoke({"order_id": "B-2", "log": []}, config)
        graph = refund_graph(DjangoSaver())
        state = await graph.aget_state(config)
        done = await graph.ainvoke(Command(resume="no"), config)
        return paused, state, done

    paused, state, done = async_to_sync(pause_then_resume)()

    assert paused["__interrupt__"][0].value == {"question": "Refund B-2?"}
    assert state.next == ("approve",)
    assert done == {"order_id": "B-2", "log": ["proposed B-2", "answer no"]}
    assert GraphCheckpoint.objects.filter(thread_id="graph-async").count() == len(
        list(refund_graph(DjangoSaver()).get_state_history(config)))
