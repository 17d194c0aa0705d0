"""The AG-UI interrupt rules, each refused with a ``RUN_ERROR`` (the app's code) that
changes no row: same thread, linkage, cover all, pending blocks input, idempotent
replay, payload validation, expiry, no silent failure; and who may do what."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from symfonic_django.models import Decision, IdempotentResponse, Pause, Run
from tests.testapp.models import Refund

from .conftest import APPROVE, REFUND, Stream, body, needs_langgraph, resumed

pytestmark = pytest.mark.django_db


def rows() -> tuple[Any, ...]:
    """Every row a start or a resume could write."""
    return (list(Pause.objects.order_by("pk").values()), Decision.objects.count(),
            list(Run.objects.order_by("pk").values_list("pk", "status")),
            Refund.objects.count(), IdempotentResponse.objects.count())


def refused(stream: Stream, code: str, before: tuple[Any, ...]) -> dict[str, Any]:
    """``stream`` is one ``RUN_ERROR`` of ``code``, and no row changed."""
    assert stream.status == 200
    assert stream.types == ["RUN_ERROR"], stream.events
    assert stream.last["code"] == code, stream.last
    assert rows() == before
    error: dict[str, Any] = stream.last
    return error


@pytest.fixture
def interrupted(agui: Any, thread: str) -> Stream:
    stream: Stream = agui("alice", "refund", body(thread, input=REFUND))
    return stream


def test_same_thread(agui: Any, interrupted: Stream, thread: str) -> None:
    before = rows()
    refused(agui("alice", "refund", body(f"{thread}-elsewhere", resume=resumed(
        interrupted.interrupts, APPROVE))), "invalid_request", before)


def test_linkage_an_interrupt_never_issued(agui: Any, interrupted: Stream, thread: str) -> None:
    before = rows()
    for unknown in (f"{uuid.uuid4()}:0", "not-an-interrupt",
                    interrupted.interrupts[0]["id"].replace(":0", ":7")):
        refused(agui("alice", "refund", body(thread, resume=[
            {"interruptId": unknown, "status": "resolved", "payload": APPROVE}])),
            "not_found", before)


def test_linkage_another_agent(agui: Any, interrupted: Stream, thread: str) -> None:
    before = rows()
    refused(agui("alice", "shipping", body(thread, resume=resumed(interrupted.interrupts,
                                                                  APPROVE))),
            "invalid_request", before)


@needs_langgraph
def test_cover_all(agui: Any, thread: str) -> None:
    first = agui("alice", "refund_graph", body(thread, input={"refunds": [
        {"order_id": "C-1", "amount": 1}, {"order_id": "C-2", "amount": 2}]}))
    before = rows()
    error = refused(agui("alice", "refund_graph", body(thread, resume=resumed(
        first.interrupts[:1], APPROVE))), "invalid_request", before)
    assert first.interrupts[1]["id"] in error["message"]
    twice = resumed(first.interrupts, APPROVE, APPROVE) + resumed(first.interrupts[:1], APPROVE)
    refused(agui("alice", "refund_graph", body(thread, resume=twice)), "invalid_request", before)


def test_pending_blocks_input(agui: Any, interrupted: Stream, thread: str) -> None:
    before = rows()
    refused(agui("alice", "refund", body(thread, input={"order_id": "X", "amount": 1})),
            "thread_paused", before)


def test_idempotent_replay(agui: Any, interrupted: Stream, thread: str) -> None:
    sent = body(thread, resume=resumed(interrupted.interrupts, APPROVE))
    first = agui("alice", "refund", sent)
    after_first = rows()
    again = agui("alice", "refund", {**sent, "runId": str(uuid.uuid4())})
    assert rows() == after_first  # one answer, one continuation, one refund
    def without_run_id(stream: Stream) -> list[dict[str, Any]]:
        return [{k: v for k, v in e.items() if k != "runId"} for e in stream.events]

    assert without_run_id(again) == without_run_id(first)  # the same continuation's stream
    assert Refund.objects.count() == 1 and Decision.objects.count() == 1
    # The same resume from someone else is judged on its own: the pause is answered.
    other = agui("admin", "refund", sent)
    assert other.last["code"] == "already_answered" and rows() == after_first


@pytest.mark.parametrize("payload", [
    {"approved": "yes"}, {}, None, [True], {"approved": True, "surprise": 1},
    {"approved": True, "message": "ok"}, {"approved": False, "editedArgs": {}},
    {"approved": True, "editedArgs": {"order_id": "AG-1", "amount": -5}},
    {"approved": True, "editedArgs": "all of it"},
    {"answer": {"decisions": [{"type": "approve"}, {"type": "approve"}]}},
])
def test_payload_validation(agui: Any, interrupted: Stream, thread: str, payload: Any) -> None:
    before = rows()
    refused(agui("alice", "refund", body(thread, resume=[{
        "interruptId": interrupted.interrupts[0]["id"], "status": "resolved",
        "payload": payload}])), "invalid_answer", before)


def test_the_pause_s_own_hitl_response_as_payload_answer(agui: Any, interrupted: Stream,
                                                          thread: str) -> None:
    stream = agui("alice", "refund", body(thread, resume=resumed(
        interrupted.interrupts, {"answer": {"decisions": [{"type": "respond",
                                                            "message": "Call me."}]}})))
    assert stream.last["result"] == {"refunded": False, "message": "Call me."}


def test_a_cancelled_interrupt_is_a_rejection(agui: Any, interrupted: Stream,
                                              thread: str) -> None:
    stream = agui("alice", "refund", body(thread, resume=resumed(
        interrupted.interrupts, None, status="cancelled")))
    assert stream.last["result"]["refunded"] is False and Refund.objects.count() == 0


def test_expiry(agui: Any, interrupted: Stream, thread: str) -> None:
    Pause.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    before = rows()
    refused(agui("alice", "refund", body(thread, resume=resumed(interrupted.interrupts,
                                                                APPROVE))), "expired", before)


def test_no_silent_failure(agui: Any, thread: str) -> None:
    before = rows()
    refused(agui("alice", "no-such-agent", body(thread, input={})), "invalid_request", before)
    refused(agui("alice", "refund", body(thread, input={"order_id": "X"})), "invalid_request",
            before)
    refused(agui("alice", "refund", {"threadId": thread}), "invalid_request", before)
    refused(agui("alice", "refund", body("", input=REFUND)), "invalid_request", before)


def test_an_admin_answer_first_makes_the_resume_already_answered(
        agui: Any, interrupted: Stream, thread: str, users: Any) -> None:
    pause = Pause.objects.get(pk=interrupted.interrupts[0]["id"].split(":")[0])
    admin = Client()
    assert admin.login(username="admin", password=users["admin"]["password"])
    answered = admin.post(reverse("admin:symfonic_django_pause_change", args=[pause.pk]),
                          {"decision_0": "reject"})
    assert answered.status_code == 302
    assert Pause.objects.get(pk=pause.pk).answered_via == "admin"
    before = rows()
    refused(agui("alice", "refund", body(thread, resume=resumed(interrupted.interrupts,
                                                                APPROVE))),
            "already_answered", before)


def test_another_scope_learns_nothing(agui: Any, interrupted: Stream, thread: str) -> None:
    before = rows()
    error = refused(agui("bob", "refund", body(thread, resume=resumed(interrupted.interrupts,
                                                                      APPROVE))),
                    "not_found", before)
    unknown = refused(agui("bob", "refund", body(thread, resume=[{
        "interruptId": f"{uuid.uuid4()}:0", "status": "resolved", "payload": APPROVE}])),
        "not_found", before)
    assert error["message"] == unknown["message"]  # no existence leak
    # bob's own thread of the same name is his own: nothing of alice's pauses blocks it.
    mine = agui("bob", "refund", body(thread, input={"order_id": "B-1", "amount": 1}))
    assert mine.last["type"] == "RUN_FINISHED"


def test_an_anonymous_caller_is_refused(agui: Any, interrupted: Stream, thread: str) -> None:
    before = rows()
    error = refused(agui(None, "refund", body(thread, resume=resumed(interrupted.interrupts,
                                                                     APPROVE))),
                    "not_authenticated", before)
    assert error["metadata"]["symfonic"]["status"] == 401
    refused(agui(None, "refund", body(thread, input=REFUND)), "not_authenticated", before)


def test_who_may_not_answer_is_refused(agui: Any, interrupted: Stream, thread: str,
                                       users: Any) -> None:
    from django.contrib.auth import get_user_model

    alice = get_user_model().objects.get(username="alice")
    alice.user_permissions.remove(Permission.objects.get(codename="answer_pause"))
    before = rows()
    refused(agui("alice", "refund", body(thread, resume=resumed(interrupted.interrupts,
                                                                APPROVE))),
            "permission_denied", before)


def test_a_session_needs_its_csrf_token(interrupted: Stream, thread: str, users: Any) -> None:
    from asgiref.sync import async_to_sync

    from .conftest import API, parse, read_all

    browser = Client(enforce_csrf_checks=True)
    assert browser.login(username="alice", password=users["alice"]["password"])
    before = rows()
    response = browser.post(f"{API}ag-ui/refund/", body(thread, resume=resumed(
        interrupted.interrupts, APPROVE)), content_type="application/json")
    events, _ = parse(async_to_sync(read_all)(response).decode())
    assert [e["code"] for e in events] == ["permission_denied"]
    assert "CSRF" in events[0]["message"]
    assert rows() == before
