"""The run stream consumer, in-process (the multi-process e2e tests live in tests/e2e)."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model

from symfonic_django import pauses
from symfonic_django.models import TurnEvent
from symfonic_django.routing import websocket_urlpatterns
from symfonic_django.tokens import mint_watch_ticket
from symfonic_django.turns import execute_run

from .conftest import paused_run

pytestmark = pytest.mark.django_db(transaction=True)

app = URLRouter(websocket_urlpatterns)


def watch(run_id, *, user=None, query: str = "") -> tuple[list[dict], int | None]:
    """Connect, read until the server closes; return the events and the close code."""

    async def go():
        comm = WebsocketCommunicator(app, f"/ws/symfonic/runs/{run_id}/{query}")
        if user is not None:
            comm.scope["user"] = user
        connected, _ = await comm.connect()
        assert connected
        events, code = [], None
        while True:
            out = await comm.receive_output(timeout=5)
            if out["type"] == "websocket.close":
                code = out.get("code")
                break
            import json

            events.append(json.loads(out["text"]))
        await comm.disconnect()
        return events, code

    return async_to_sync(go)()


def test_a_finished_turn_replays_every_event_then_closes_1000(tenants):
    run, pause = paused_run()
    cont = pauses.approve(pause.pk).continuation
    execute_run(cont.pk)
    events, code = watch(cont.pk, query=f"?ticket={mint_watch_ticket(str(cont.pk))}")
    assert code == 1000
    assert [e["seq"] for e in events] == list(range(1, TurnEvent.objects.filter(run=cont).count() + 1))
    assert events[0]["type"] == "turn.started" and events[-1]["type"] == "turn.completed"
    assert events[0]["root_run_id"] == str(run.pk) and events[0]["run_id"] == str(cont.pk)


def test_after_n_replays_only_the_missing_events(tenants):
    run, _ = paused_run()
    events, code = watch(run.pk, query=f"?after=2&ticket={mint_watch_ticket(str(run.pk))}")
    assert [e["seq"] for e in events] == [3, 4] and code == 1000
    assert events[0]["type"] == "pause.requested" and events[0]["data"]["token"]


@pytest.mark.parametrize("query, code", [
    ("", 4401), ("?ticket=bogus", 4401),
])
def test_refusals_without_credentials(tenants, query, code):
    run, _ = paused_run()
    assert watch(run.pk, query=query) == ([], code)


def test_a_reviewer_of_another_scope_gets_4404(tenants):
    from example_project.shop.management.commands.seed_demo import seed_users

    seed_users()
    run, _ = paused_run(scope="globex")
    alice = get_user_model().objects.get(username="alice")
    assert watch(run.pk, user=alice) == ([], 4404)
    bob = get_user_model().objects.get(username="bob")
    events, code = watch(run.pk, user=bob)
    assert code == 1000 and events[-1]["type"] == "turn.paused"


def test_unknown_run_gets_4404(tenants):
    ticket = mint_watch_ticket("00000000-0000-0000-0000-000000000001")
    assert watch("00000000-0000-0000-0000-000000000001", query=f"?ticket={ticket}") == ([], 4404)


def test_more_events_than_one_read_replay_in_order_then_close(tenants):
    from symfonic_django.consumers import BATCH
    from symfonic_django.events import MessageDelta, TurnCompleted, append

    _, pause = paused_run()
    cont = pauses.approve(pause.pk).continuation  # queued: no events of its own yet
    TurnEvent.objects.bulk_create([TurnEvent(run=cont, seq=i, type=MessageDelta.type,
                                             data={"text": f"{i} "})
                                   for i in range(1, BATCH + 30)])
    append(cont.pk, BATCH + 30, TurnCompleted(output="done"))
    events, code = watch(cont.pk, query=f"?ticket={mint_watch_ticket(str(cont.pk))}")
    assert [e["seq"] for e in events] == list(range(1, BATCH + 31)) and code == 1000
    assert events[-1]["type"] == "turn.completed"


def test_after_the_end_closes_at_once_with_nothing_to_send(tenants):
    run, _ = paused_run()
    last = TurnEvent.objects.filter(run=run).count()
    assert watch(run.pk, query=f"?after={last}&ticket={mint_watch_ticket(str(run.pk))}") == (
        [], 1000)
