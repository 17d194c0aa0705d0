"""The run stream consumer, in-process (the multi-process e2e tests live in tests/e2e)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from symfonic_django import pauses
from symfonic_django.models import Run, TurnEvent
from symfonic_django.pauses import token_for
from symfonic_django.routing import websocket_urlpatterns
from symfonic_django.tokens import mint_watch_ticket
from symfonic_django.turns import execute_run

from .conftest import paused_run

pytestmark = pytest.mark.django_db(transaction=True)

app = URLRouter(websocket_urlpatterns)


def superuser() -> Any:
    """A watcher who may read every run (whatever a ticket or a scope's rules become)."""
    user, _ = get_user_model().objects.get_or_create(
        username="root", defaults={"is_staff": True, "is_superuser": True})
    return user


def watch(run_id, *, user=None, query: str = "", raw_query: bytes | None = None,
          closed: list[dict] | None = None) -> tuple[list[dict], int | None]:
    """Connect, read until the server closes; return the events and the close code.

    ``raw_query`` replaces the query string's bytes as a client could send them;
    ``closed`` receives the close message (its ``reason``).
    """

    async def go():
        comm = WebsocketCommunicator(app, f"/ws/symfonic/runs/{run_id}/{query}")
        if raw_query is not None:
            comm.scope["query_string"] = raw_query
        if user is not None:
            comm.scope["user"] = user
        connected, _ = await comm.connect()
        assert connected
        events, code = [], None
        while True:
            out = await comm.receive_output(timeout=5)
            if out["type"] == "websocket.close":
                code = out.get("code")
                if closed is not None:
                    closed.append(out)
                break
            events.append(json.loads(out["text"]))
        await comm.disconnect()
        return events, code

    return async_to_sync(go)()


def ticket_of(run, user=None) -> str:
    """A watch ticket of ``run`` issued to ``user``: by default alice, a reviewer of acme
    who may read and answer (``seed_demo``), as an answer over the API issues it."""
    if user is None:
        from tests.testapp.seed import seed_users

        seed_users()
        user = get_user_model().objects.get(username="alice")
    return mint_watch_ticket(run, user=user)


def test_a_finished_turn_replays_every_event_then_closes_1000(tenants):
    run, pause = paused_run()
    cont = pauses.approve(pause.pk).continuation
    execute_run(cont.pk)
    events, code = watch(cont.pk, query=f"?ticket={ticket_of(cont)}")
    assert code == 1000
    assert [e["seq"] for e in events] == list(range(1, TurnEvent.objects.filter(run=cont).count() + 1))
    assert events[0]["type"] == "turn.started" and events[-1]["type"] == "turn.completed"
    assert events[0]["root_run_id"] == str(run.pk) and events[0]["run_id"] == str(cont.pk)


def test_after_n_replays_only_the_missing_events(tenants):
    run, _ = paused_run()
    events, code = watch(run.pk, query=f"?after=2&ticket={ticket_of(run)}")
    assert [e["seq"] for e in events] == [3, 4] and code == 1000
    assert events[0]["type"] == "pause.requested" and events[0]["data"]["token"]


@pytest.mark.parametrize("query, code", [
    ("", 4401), ("?ticket=bogus", 4401),
])
def test_refusals_without_credentials(tenants, query, code):
    run, _ = paused_run()
    assert watch(run.pk, query=query) == ([], code)


def test_a_reviewer_of_another_scope_gets_4404(tenants):
    from tests.testapp.seed import seed_users

    seed_users()
    run, _ = paused_run(scope="globex")
    alice = get_user_model().objects.get(username="alice")
    assert watch(run.pk, user=alice) == ([], 4404)
    bob = get_user_model().objects.get(username="bob")
    events, code = watch(run.pk, user=bob)
    assert code == 1000 and events[-1]["type"] == "turn.paused"


def test_unknown_run_gets_4404(tenants):
    unknown = Run(pk="00000000-0000-0000-0000-000000000001",
                  root_id="00000000-0000-0000-0000-000000000001")
    ticket = ticket_of(unknown)
    assert watch("00000000-0000-0000-0000-000000000001", query=f"?ticket={ticket}") == ([], 4404)


def stored_stream(n: int, *, text: str = "") -> Any:
    """A queued continuation holding ``n`` deltas then ``turn.completed`` (seq ``n + 1``)."""
    from symfonic_django.events import MessageDelta, TurnCompleted, append

    _, pause = paused_run()
    cont = pauses.approve(pause.pk).continuation  # queued: no events of its own yet
    TurnEvent.objects.bulk_create([TurnEvent(run=cont, seq=i, type=MessageDelta.type,
                                             data={"text": f"{i} {text}"},
                                             scope_key=cont.scope_key)
                                   for i in range(1, n + 1)])
    append(cont, n + 1, TurnCompleted(output="done"))
    return cont


def follow(run_id: Any, user: Any, after: int = 0,
           ) -> tuple[list[dict], list[int | None], list[list[dict]]]:
    """Watch from ``after``, reconnecting with ``?after=`` after each 4408 as a client
    should: every event received, the close codes in turn, the events of each connection."""
    seen: list[dict] = []
    codes: list[int | None] = []
    connections: list[list[dict]] = []
    while not codes or codes[-1] == 4408:
        closed: list[dict] = []
        events, code = watch(run_id, user=user, closed=closed,
                             query=f"?after={seen[-1]['seq'] if seen else after}")
        if code == 4408:
            assert closed[0]["reason"] == (
                f"too far behind: reconnect with ?after={events[-1]['seq']}")
        seen += events
        codes.append(code)
        connections.append(events)
    return seen, codes, connections


def test_a_watcher_more_than_a_page_behind_is_closed_4408_and_resumes_with_after_losing_nothing(
        tenants):
    from symfonic_django.consumers import PAGE_BYTES

    cont = stored_stream(1100, text="x" * 1000)  # 1,100 events of ~1.1 KB: over two pages
    seen, codes, connections = follow(cont.pk, superuser())
    assert codes == [4408, 4408, 1000]
    for events in connections:
        assert sum(len(json.dumps(e)) for e in events) <= PAGE_BYTES
    assert [e["seq"] for e in seen] == list(range(1, 1102))  # nothing lost, nothing twice
    assert seen[-1]["type"] == "turn.completed"


def test_a_page_holds_at_most_page_events_however_small(tenants):
    from symfonic_django.consumers import PAGE_EVENTS

    cont = stored_stream(PAGE_EVENTS + 99)
    seen, codes, connections = follow(cont.pk, superuser())
    assert codes == [4408, 1000] and len(connections[0]) == PAGE_EVENTS
    assert [e["seq"] for e in seen] == list(range(1, PAGE_EVENTS + 101))


def test_an_event_larger_than_a_page_is_still_sent_one_per_connection(tenants, page_bytes):
    page_bytes(1000)
    cont = stored_stream(3, text="x" * 2000)
    seen, codes, connections = follow(cont.pk, superuser())
    assert [len(events) for events in connections] == [1, 1, 1, 1] and codes[-1] == 1000
    assert [e["seq"] for e in seen] == [1, 2, 3, 4]


def watch_while_it_runs(run: Any) -> tuple[list[dict], int | None]:
    """Connect as the superuser, run the queued ``run`` in-process until it pauses, and
    read everything the socket is sent until it closes: the events and the close code."""
    from channels.db import database_sync_to_async

    async def go() -> tuple[list[dict], int | None]:
        comm = WebsocketCommunicator(app, f"/ws/symfonic/runs/{run.pk}/")
        comm.scope["user"] = await database_sync_to_async(superuser)()
        assert (await comm.connect())[0]
        assert await database_sync_to_async(execute_run)(run.pk) == "paused"
        events, code = [], None
        while code is None:
            out = await comm.receive_output(timeout=5)
            if out["type"] == "websocket.close":
                code = out.get("code")
            else:
                events.append(json.loads(out["text"]))
        await comm.disconnect()
        return events, code

    return async_to_sync(go)()


def test_a_page_bounds_a_live_stream_too_and_the_watcher_resumes_losing_nothing(
        tenants, page_events):
    """Events rung one by one count as well: the server cannot tell a socket that reads
    them from one that does not, so a connection carries a page, live or replayed."""

    from symfonic_django.runs import start_run

    page_events(2)
    run = start_run("echo", {}, scope="acme", dispatch=False)

    live, code = watch_while_it_runs(run)
    assert code == 4408 and [e["seq"] for e in live] == [1, 2]
    rest, codes, _ = follow(run.pk, superuser(), after=live[-1]["seq"])
    assert codes[-1] == 1000
    assert [e["seq"] for e in live + rest] == list(range(1, TurnEvent.objects.filter(
        run=run).count() + 1))


def test_a_reader_at_the_head_of_a_live_run_is_sent_its_events_as_they_come(tenants):
    """The page bounds a catch-up, not a stream: events rung one by one are sent one by one."""

    from symfonic_django.runs import start_run

    run = start_run("echo", {}, scope="acme", dispatch=False)

    events, code = watch_while_it_runs(run)
    types = [e["type"] for e in events]
    assert code == 1000 and types[0] == "turn.started" and types[-1] == "turn.paused"


@pytest.mark.parametrize("doorbell", [True, False], ids=["rung", "doorbell-lost"])
def test_a_socket_past_the_end_of_a_live_run_waits_then_closes_1000_after_the_terminal_event(
        tenants, monkeypatch, poll_interval, doorbell):
    """Before, it never closed: the terminal event's seq was not after ``after``, so it was
    never sent, and nothing else closed the socket."""
    from channels.db import database_sync_to_async

    from symfonic_django import events
    from symfonic_django.runs import start_run

    if not doorbell:  # the layer never rings: the poll finds the turn ended
        async def silent(*args: Any, **kwargs: Any) -> None:
            return None

        monkeypatch.setattr(events, "aring", silent)
        poll_interval(0.05)
    run = start_run("echo", {}, scope="acme", dispatch=False)

    async def go():
        comm = WebsocketCommunicator(app, f"/ws/symfonic/runs/{run.pk}/?after=50")
        comm.scope["user"] = await database_sync_to_async(superuser)()
        assert (await comm.connect())[0]
        assert await comm.receive_nothing(timeout=0.3)  # live: it waits like any other
        assert await database_sync_to_async(execute_run)(run.pk) == "paused"
        out = await comm.receive_output(timeout=5)
        await comm.disconnect()
        return out

    out = async_to_sync(go)()
    assert out == {"type": "websocket.close", "code": 1000}
    assert 0 < TurnEvent.objects.filter(run=run).count() < 50  # the turn ended before seq 50


def test_after_the_end_closes_at_once_with_nothing_to_send(tenants):
    run, _ = paused_run()
    last = TurnEvent.objects.filter(run=run).count()
    assert watch(run.pk, query=f"?after={last}&ticket={ticket_of(run)}") == (
        [], 1000)


# --- a malformed query: accepted, then closed 4400 with a reason (docs/design.md section 6) -------------

@pytest.mark.parametrize("query", [
    "?after=%C2%B2", "?after=-1", "?after=1e3", "?after=2147483648", "?after=" + "9" * 5000,
    "?after=%00", "?after=1&after=2", "?after=", "?ticket=a&ticket=b", "?ticket=%00",
    "?ticket=" + "A" * 5000, "?ticket=%E2%9C%93", "?after=%FF", "?" + "&".join(["x=1"] * 50),
], ids=["superscript-two", "negative", "exponent", "past-32-bits", "5000-digits", "nul",
        "after-twice", "after-empty", "ticket-twice", "ticket-nul", "ticket-huge",
        "ticket-not-ascii", "not-utf8", "too-many-fields"])
def test_a_malformed_query_closes_4400_with_a_reason(tenants, query):
    run, _ = paused_run()
    closed: list[dict] = []
    assert watch(run.pk, query=query, closed=closed) == ([], 4400)
    assert closed[0]["reason"].endswith(".")


def test_a_query_that_is_not_ascii_closes_4400(tenants):
    run, _ = paused_run()
    assert watch(run.pk, raw_query="after=\u00b2".encode()) == ([], 4400)
    assert watch(run.pk, raw_query=b"after=\xff\x00") == ([], 4400)


def test_unknown_query_parameters_are_ignored(tenants):
    run, _ = paused_run()
    events, code = watch(run.pk, query=f"?utm_source=x&after=3&ticket="
                                       f"{ticket_of(run)}")
    assert [e["seq"] for e in events] == [4] and code == 1000


# --- who holds a token: only those who may answer (docs/design.md section 6) ------------------

def requested(events: list[dict]) -> dict:
    return next(e["data"] for e in events if e["type"] == "pause.requested")


def test_a_view_only_reviewer_watching_gets_no_token(tenants):
    from tests.testapp.models import Membership

    carol = get_user_model().objects.create_user("carol", is_staff=True)
    carol.user_permissions.add(*Permission.objects.filter(
        content_type__app_label="symfonic_django", codename__startswith="view_"))
    Membership.objects.create(user=carol, tenant=tenants["acme"])
    carol = get_user_model().objects.get(pk=carol.pk)  # no cached permissions
    run, pause = paused_run()
    events, code = watch(run.pk, user=carol)
    assert code == 1000 and requested(events)["pause_id"] == str(pause.pk)
    assert "token" not in requested(events)
    assert token_for(pause) not in json.dumps(events)


def test_an_answerer_and_a_ticket_holder_watching_get_the_token(tenants):
    from tests.testapp.seed import seed_users

    seed_users()
    run, pause = paused_run()
    alice = get_user_model().objects.get(username="alice")
    assert requested(watch(run.pk, user=alice)[0])["token"] == token_for(pause)
    ticket = ticket_of(run)
    assert requested(watch(run.pk, query=f"?ticket={ticket}")[0])["token"] == token_for(pause)


@pytest.mark.parametrize(("revoke", "code"), [
    ("membership", 4403),   # a reviewer of no tenant any more: forbidden
    ("deactivated", 4401),  # the account was switched off
])
def test_revoking_a_reviewer_closes_their_open_socket_at_the_next_event(
        tenants, access_recheck_seconds, revoke, code):
    from asgiref.sync import sync_to_async

    from symfonic_django.events import MessageDelta, append, aring
    from tests.testapp.models import Membership

    access_recheck_seconds(0.0)
    dave = get_user_model().objects.create_user("dave", is_staff=True)
    dave.user_permissions.add(Permission.objects.get(codename="view_run"))  # a reader of acme
    Membership.objects.create(user=dave, tenant=tenants["acme"])
    dave = get_user_model().objects.get(pk=dave.pk)  # no cached permissions
    _, pause = paused_run()
    cont = pauses.approve(pause.pk).continuation  # queued: the watcher waits for its events

    def revoke_access() -> None:
        if revoke == "membership":
            Membership.objects.filter(user=dave).delete()
        else:
            get_user_model().objects.filter(pk=dave.pk).update(is_active=False)

    async def go() -> tuple[dict, dict]:
        comm = WebsocketCommunicator(app, f"/ws/symfonic/runs/{cont.pk}/")
        comm.scope["user"] = dave
        assert (await comm.connect())[0]
        await sync_to_async(append)(cont, 1, MessageDelta(text="seen"))
        await aring(cont.pk, 1)
        first = await comm.receive_output(timeout=5)  # access held: the event goes out
        await sync_to_async(revoke_access)()
        await sync_to_async(append)(cont, 2, MessageDelta(text="not seen"))
        await aring(cont.pk, 2)
        closed = await comm.receive_output(timeout=5)
        await comm.disconnect()
        return first, closed

    first, closed = async_to_sync(go)()
    assert json.loads(first["text"])["data"] == {"text": "seen"}
    assert closed["type"] == "websocket.close" and closed["code"] == code
    assert closed.get("reason") == "access to this run was revoked"
    assert TurnEvent.objects.filter(run=cont).count() == 2  # revocation changes no row


@pytest.mark.parametrize("frame", [
    {"bytes_data": b"\x00\xff binary"},
    {"text_data": "not json"},
    {"text_data": "[" * 100_000 + "]" * 100_000},  # past Python's recursion limit
    {"text_data": '{"type": "subscribe", "after": 0}'},
])
def test_what_a_client_sends_is_ignored_and_the_stream_goes_on(tenants, frame):
    """Clients only listen. Before, a binary frame, non-JSON text or JSON nested past the
    recursion limit was decoded and ended the stream with 1011 and a traceback."""
    from channels.db import database_sync_to_async

    from symfonic_django.runs import start_run

    run = start_run("echo", {}, scope="acme", dispatch=False)
    ticket = ticket_of(run)

    async def go():
        comm = WebsocketCommunicator(
            app, f"/ws/symfonic/runs/{run.pk}/?ticket={ticket}")
        assert (await comm.connect())[0]
        await comm.send_to(**frame)
        assert await comm.receive_nothing(timeout=0.3)  # still open, nothing sent back
        assert await database_sync_to_async(execute_run)(run.pk) == "paused"
        types, code = [], None
        while code is None:
            out = await comm.receive_output(timeout=5)
            if out["type"] == "websocket.close":
                code = out.get("code")
            else:
                types.append(json.loads(out["text"])["type"])
        await comm.disconnect()
        return types, code

    types, code = async_to_sync(go)()
    assert code == 1000 and types[0] == "turn.started" and types[-1] == "turn.paused"


@pytest.mark.parametrize("path", ["/ws/symfonic/runs/", "/ws/symfonic/other/x/",
                                  "/ws/elsewhere/"])
def test_a_websocket_to_a_path_no_route_serves_is_closed_4404_not_a_500(path):
    """Under ``ws/symfonic/`` the app's routes close it; elsewhere a project ends its routes
    with the same consumer, as the example's ``asgi.py`` does."""
    from django.urls import re_path

    from symfonic_django.consumers import UnknownStreamConsumer

    routes = URLRouter([*websocket_urlpatterns, re_path(r"", UnknownStreamConsumer.as_asgi())])

    async def go():
        comm = WebsocketCommunicator(routes, path)
        connected, code = await comm.connect()
        out = await comm.receive_output(timeout=5) if connected else None
        await comm.disconnect()
        return connected, code, out

    connected, code, out = async_to_sync(go)()
    assert connected and out == {"type": "websocket.close", "code": 4404}
