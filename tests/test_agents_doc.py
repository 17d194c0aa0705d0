"""docs/agents.md, run as written.

Each ```python block of the doc either names a file under ``myapp/`` on its
first line (it becomes that module of a ``myapp`` package on the path) or is
a labelled snippet this test runs with the names it leaves to the reader. What
the doc imports from the reader's own code (``myapp.models.Refund``) is the
test app's ``Refund``. The turns then go through the app: start, pause,
each way a pause ends (approve, edit, reject, respond, a question's answer,
an expiry with ``ON_EXPIRE="resume"``), and the continuation, and the
assertions read what the doc's agents stored.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.test import APIClient

from symfonic_django import pauses, start_run
from symfonic_django.events import TurnCompleted
from symfonic_django.exceptions import InvalidRunInput
from symfonic_django.models import Pause, Run, RunStatus, TurnEvent
from symfonic_django.routing import websocket_urlpatterns
from symfonic_django.turns import execute_run
from tests.testapp.models import Refund
from tests.testapp.seed import seed_users

from .conftest import paused_run

DOC = Path(__file__).resolve().parents[1] / "docs" / "agents.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
TARGET = re.compile(r"^# (myapp/[\w/]+\.py)$")
LABEL = re.compile(r"^# (.+):$")

#: The doc's modules, and its labelled snippets: each one is run below.
FILES = {"myapp/agents.py", "myapp/settings.py", "myapp/shipping.py", "myapp/refunds.py",
         "myapp/effects.py"}
SNIPPETS = {"Retrying a failed run, from a view of yours"}

#: What the doc leaves to the reader's project.
SUPPLIED = {
    "myapp/__init__.py": "",
    "myapp/models.py": "from tests.testapp.models import Refund  # noqa: F401\n",
}

REFUND = {"order_id": "A-1", "amount": 99.99}


def python_blocks() -> list[str]:
    return [body for language, body in FENCE.findall(DOC.read_text()) if language == "python"]


def file_blocks() -> dict[str, str]:
    found = {}
    for body in python_blocks():
        target = TARGET.match(body.partition("\n")[0])
        if target:
            found[target.group(1)] = body
    return found


def snippet(label: str) -> str:
    [body] = [b for b in python_blocks() if b.startswith(f"# {label}:\n")]
    return body


def test_every_python_block_of_the_doc_is_one_this_test_runs():
    labels = set()
    for body in python_blocks():
        first = body.partition("\n")[0]
        compile(body, str(DOC), "exec")
        if not TARGET.match(first):
            label = LABEL.match(first)
            assert label, f"a python block neither names a myapp/ file nor a label: {first!r}"
            labels.add(label.group(1))
    assert set(file_blocks()) == FILES and labels == SNIPPETS


@pytest.fixture
def myapp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: Any) -> Iterator[None]:
    """The doc's ``myapp`` package on the path, its settings block applied."""
    blocks = file_blocks()
    for path, text in {**SUPPLIED, **blocks}.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    namespace: dict[str, Any] = {}
    exec(blocks["myapp/settings.py"], namespace)
    settings.SYMFONIC = {**settings.SYMFONIC, "AGENTS": {
        **settings.SYMFONIC["AGENTS"], **namespace["SYMFONIC"]["AGENTS"]}}
    yield
    for name in [n for n in sys.modules if n == "myapp" or n.startswith("myapp.")]:
        del sys.modules[name]


@pytest.fixture
def resume_on_expiry(settings: Any) -> None:
    settings.SYMFONIC = {**settings.SYMFONIC, "ON_EXPIRE": "resume"}


def expired(pause: Pause) -> pauses.Resolution:
    """Time passes (test setup), then the expiry sweep ends the pause."""
    Pause.objects.filter(pk=pause.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    resolution = pauses.expire(pause.pk)
    assert resolution is not None
    return resolution


def finish(resolution: pauses.Resolution) -> Run:
    continuation = resolution.continuation
    assert continuation is not None
    assert execute_run(continuation.pk) == RunStatus.COMPLETED
    continuation.refresh_from_db()
    return continuation


# --- the refund agent: every way its pause ends ------------------------------------------

END_THE_REFUND = {
    "approve": lambda pause: pauses.approve(pause.pk),
    "edit": lambda pause: pauses.approve(pause.pk, edited_args={**REFUND, "amount": 50}),
    "reject": lambda pause: pauses.reject(pause.pk, comment="Not before Nov 28."),
    "respond": lambda pause: pauses.respond(pause.pk, "Ask the customer first."),
    "expired": expired,
}


@pytest.mark.django_db
@pytest.mark.parametrize("how, refunded, output", [
    ("approve", REFUND, None),
    ("edit", {**REFUND, "amount": 50}, None),
    ("reject", None, {"refunded": False, "decision": "reject",
                      "message": "Not before Nov 28."}),
    ("respond", None, {"refunded": False, "decision": "respond",
                       "message": "Ask the customer first."}),
    ("expired", None, {"refunded": False, "decision": "expired", "message": ""}),
])
def test_the_refund_agent_runs_what_was_approved_and_nothing_else(
        myapp, tenants, resume_on_expiry, how, refunded, output):
    run, pause = paused_run("refund", REFUND)
    assert pause.prompt["action_requests"][0]["args"] == REFUND
    assert TurnEvent.objects.get(run=run, type="message.completed").data["text"] == (
        "Order A-1 qualifies for a refund.")
    done = finish(END_THE_REFUND[how](pause))
    if refunded is None:
        assert done.output == output and not Refund.objects.exists()
        return
    # current_turn().run_id inside the tool is the continuation's run.
    refund = Refund.objects.get(run_id=done.pk)
    assert (refund.order_id, refund.amount) == (refunded["order_id"],
                                                Decimal(str(refunded["amount"])))
    assert done.output == {"refunded": True, "refund_id": refund.pk}
    completed = TurnEvent.objects.get(run=done, type="tool.completed").data
    assert (completed["args"], completed["result"]) == (refunded, {"refund_id": refund.pk})


@pytest.mark.django_db
def test_the_refund_agents_input_schema_refuses_a_bad_input_before_a_run_exists(
        myapp, tenants):
    with pytest.raises(InvalidRunInput, match="input_schema of agent 'refund'"):
        start_run("refund", {"order_id": "A-1", "amount": 0.001}, scope="acme")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {seed_users()['alice']['token']}")
    response = client.post("/api/symfonic/runs/", {"agent": "refund", "input": {
        "order_id": "A-1", "amount": -5}}, format="json")
    assert (response.status_code, response.json()["code"]) == (400, "invalid_request")
    assert "input_schema of agent 'refund'" in response.json()["detail"]
    assert not Run.objects.exists()


# --- the carrier question ----------------------------------------------------------------

@pytest.mark.django_db
def test_the_carrier_agent_books_the_answer(myapp, tenants):
    _, pause = paused_run("carrier", {"order_id": "A-7"})
    assert pause.kind == "question"
    assert finish(pauses.answer_pause(pause.pk, {"carrier": "ups"})).output == {"carrier": "ups"}


@pytest.mark.django_db
def test_the_carrier_agent_books_nothing_when_the_question_expired(
        myapp, tenants, resume_on_expiry):
    _, pause = paused_run("carrier", {"order_id": "A-7"})
    assert finish(expired(pause)).output == {"carrier": None}


# --- the fenced effect and the retry -----------------------------------------------------

class CallsTheFencedEffect:
    """Calls the doc's ``record_refund`` on the turn's database thread, as its comment says."""

    async def start_typed(self, context: Any, input: Any):
        from myapp.effects import record_refund

        refund = await sync_to_async(record_refund)("A-2", 5, "call-1")
        yield TurnCompleted(output={"refund_id": refund.pk})


@pytest.mark.django_db
def test_the_fenced_effect_stores_the_refund_and_its_event_together(myapp, tenants, settings):
    settings.SYMFONIC = {**settings.SYMFONIC, "AGENTS": {
        **settings.SYMFONIC["AGENTS"], "effects": lambda scope: CallsTheFencedEffect()}}
    run = start_run("effects", {}, scope="acme", dispatch=False)
    assert execute_run(run.pk) == RunStatus.COMPLETED
    refund = Refund.objects.get(run_id=run.pk)
    assert (refund.order_id, refund.amount) == ("A-2", Decimal("5"))
    completed = TurnEvent.objects.get(run=run, type="tool.completed").data
    assert completed == {"tool_call_id": "call-1", "name": "refund",
                         "args": {"order_id": "A-2", "amount": 5},
                         "result": {"refund_id": refund.pk}, "status": "success"}


@pytest.mark.django_db
def test_the_retry_snippet_sends_a_failed_run_back_to_the_queue(tenants):
    run = start_run("boom", {}, scope="acme", dispatch=False)
    assert execute_run(run.pk) == RunStatus.FAILED
    operator = get_user_model().objects.create_superuser("ops", password="x")
    exec(snippet("Retrying a failed run, from a view of yours"),
         {"run_id": run.pk, "request": SimpleNamespace(user=operator)})
    run.refresh_from_db()
    assert (run.status, run.attempts) == (RunStatus.QUEUED, 2)
    assert run.retries.get().comment == "worker host replaced"


# --- watching a run started with start_run -----------------------------------------------

app = URLRouter(websocket_urlpatterns)


def watch(path: str) -> tuple[list[str], int | None]:
    """Connect to ``path`` as a browser would with no session; the event types and the
    close code."""

    async def go() -> tuple[list[str], int | None]:
        comm = WebsocketCommunicator(app, path)
        connected, _ = await comm.connect()
        assert connected
        types, code = [], None
        while True:
            out = await comm.receive_output(timeout=5)
            if out["type"] == "websocket.close":
                code = out.get("code")
                break
            types.append(json.loads(out["text"])["type"])
        await comm.disconnect()
        return types, code

    return async_to_sync(go)()


@pytest.mark.django_db(transaction=True)
def test_start_refund_gives_its_user_a_stream_of_the_run_and_of_its_continuation(
        myapp, tenants):
    from myapp.refunds import start_refund

    seed_users()
    alice = get_user_model().objects.get(username="alice")
    started = start_refund(alice, tenants["acme"], "A-3", 20)
    run = Run.objects.get(pk=started["run_id"])
    assert run.started_by == alice and run.status == RunStatus.QUEUED
    assert execute_run(run.pk) == RunStatus.PAUSED

    assert watch(started["websocket"]) == (
        ["turn.started", "message.completed", "pause.requested", "turn.paused"], 1000)
    client = APIClient()
    client.force_authenticate(alice)
    page = client.get(started["events"])
    assert page.status_code == 200
    assert [e["type"] for e in page.json()["results"]] == [
        "turn.started", "message.completed", "pause.requested", "turn.paused"]

    # The same ticket opens the continuation, a run of the same chain.
    pause = Pause.objects.get(run=run)
    continuation = pauses.approve(pause.pk).continuation
    assert continuation is not None
    assert execute_run(continuation.pk) == RunStatus.COMPLETED
    ticket = started["websocket"].partition("?ticket=")[2]
    continued = Pause.objects.get(pk=pause.pk).continuation_id
    assert watch(f"/ws/symfonic/runs/{continued}/?ticket={ticket}") == (
        ["turn.started", "tool.started", "tool.completed", "turn.completed"], 1000)


# --- context and current_turn(), as the doc's tables describe them ------------------------

class SaysWhereItRuns:
    """Pauses once; each turn reports its context and what ``current_turn()`` gives a tool."""

    async def start_typed(self, context: Any, input: Any):
        from symfonic_django import current_turn, request_pause

        seen = {"run_id": context.run_id, "root_run_id": context.root_run_id,
                "scope": context.scope.slug, "input": context.run.input,
                "started_by_id": context.run.started_by_id, "attempts": context.run.attempts,
                "tool": await sync_to_async(tool_sees)()}
        assert current_turn() is context
        await request_pause(kind="question", prompt={"question": json.dumps(seen)})
        yield TurnCompleted(output=None)

    async def continue_recovered_typed(self, continuation: Any, **kwargs: Any):
        yield TurnCompleted(output={
            "paused_run_id": continuation.paused_run_id, "run_id": str(continuation.run.pk),
            "scope": continuation.scope.slug, "tool": await sync_to_async(tool_sees)()})


def tool_sees() -> dict[str, Any]:
    """What a tool called through ``sync_to_async`` reads from ``current_turn()``."""
    from symfonic_django import current_turn

    turn = current_turn()
    return {"run_id": turn.run_id, "root_run_id": turn.root_run_id, "scope": turn.scope.slug}


@pytest.mark.django_db
def test_context_and_current_turn_give_the_run_its_root_and_its_scope(tenants, settings):
    from symfonic_django import current_turn
    from symfonic_django.exceptions import InteractionConfigurationError

    settings.SYMFONIC = {**settings.SYMFONIC, "AGENTS": {
        **settings.SYMFONIC["AGENTS"], "says_where": lambda scope: SaysWhereItRuns()}}
    run, pause = paused_run("says_where", {"order_id": "A-1"})
    first, root = str(run.pk), str(run.pk)
    assert json.loads(pause.prompt["question"]) == {
        "run_id": first, "root_run_id": root, "scope": "acme", "input": {"order_id": "A-1"},
        "started_by_id": None, "attempts": 1,
        "tool": {"run_id": first, "root_run_id": root, "scope": "acme"}}
    done = finish(pauses.answer_pause(pause.pk, "yes"))
    assert done.output == {"paused_run_id": first, "run_id": str(done.pk), "scope": "acme",
                           "tool": {"run_id": str(done.pk), "root_run_id": root,
                                    "scope": "acme"}}
    with pytest.raises(InteractionConfigurationError):
        current_turn()
