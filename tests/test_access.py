"""Who may read, and whom a watch ticket speaks for (docs/security.md, "Who may read" and
"Watch tickets"), replayed through the real surfaces: the API, the websocket, the
viewer page and the admin.

The attacks these replay: a member who may only start runs read every pause of its
tenant and other users' runs and events (``GET pauses/``, ``runs/{id}/``); a starter
whose permissions and membership were removed and whose account was switched off
opened the websocket with its old ticket, was sent the pause token, and answered with
it; ``resume/`` replayed its stored 202 (scope, answerer, ticket) to anyone sending the
same token and ``Idempotency-Key``; ``pauses/0.5/`` answered Django's HTML 404; and
``comment: 0`` was taken. Each refusal leaves the rows as they were.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.cache import cache
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from symfonic_django import pauses
from symfonic_django.events import PauseRequested, TurnPaused, append, aring
from symfonic_django.models import Decision, IdempotentResponse, Pause, Run, TurnEvent
from symfonic_django.pauses import token_for
from symfonic_django.routing import websocket_urlpatterns
from symfonic_django.scopes import may_answer, may_read_pauses
from symfonic_django.tokens import mint_watch_ticket, read_watch_ticket
from symfonic_django.turns import execute_run
from symfonic_django.viewer import state_url, viewer_url
from tests.testapp.models import Membership, Refund, Tenant
from tests.testapp.seed import seed_users

from .conftest import snapshot

API = "/api/symfonic/"
APPROVE = {"decisions": [{"type": "approve"}]}
app = URLRouter(websocket_urlpatterns)


@pytest.fixture(autouse=True)
def fresh_throttle_history() -> Any:
    """resume/'s throttle keeps its history in the default cache, which outlives a test."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def users(tenants: dict[str, Any]) -> dict[str, dict[str, str]]:
    """admin, alice (acme) and bob (globex), each may start, view and answer: ``seed_demo``."""
    return seed_users()


def member(name: str, *codenames: str, tenant: str = "acme", staff: bool = False) -> Any:
    """A member of ``tenant`` holding exactly ``codenames`` of this app's permissions."""
    user = get_user_model().objects.create_user(name, password="pw", is_staff=staff)
    user.user_permissions.add(*Permission.objects.filter(
        content_type__app_label="symfonic_django", codename__in=codenames))
    Membership.objects.create(user=user, tenant=Tenant.objects.get(slug=tenant))
    return get_user_model().objects.get(pk=user.pk)  # no cached permissions


def named(name: str) -> Any:
    return get_user_model().objects.get(username=name)


def api(user: Any = None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def started_refund(starter: Any, amount: float = 45, order: str = "A-1") -> tuple[Run, Pause, str]:
    """``starter`` starts a refund over the API; it runs until it pauses. Returns the run,
    its pause and the watch ticket the 202 gave the starter."""
    response = api(starter).post(f"{API}runs/", {"agent": "refund", "input": {
        "order_id": order, "amount": amount}}, format="json")
    assert response.status_code == 202, response.json()
    run = Run.objects.get(pk=response.json()["run_id"])
    assert execute_run(run.pk) == "paused"
    run.refresh_from_db()
    return run, Pause.objects.get(run=run), response.json()["stream"]["ticket"]


def watch(run_id: Any, *, ticket: str | None = None, user: Any = None,
          ) -> tuple[list[dict[str, Any]], int | None]:
    """Connect, read until the server closes; the events and the close code."""

    async def go() -> tuple[list[dict[str, Any]], int | None]:
        query = f"?ticket={ticket}" if ticket else ""
        comm = WebsocketCommunicator(app, f"/ws/symfonic/runs/{run_id}/{query}")
        if user is not None:
            comm.scope["user"] = user
        assert (await comm.connect())[0]
        events: list[dict[str, Any]] = []
        while True:
            out = await comm.receive_output(timeout=5)
            if out["type"] == "websocket.close":
                await comm.disconnect()
                return events, out.get("code")
            events.append(json.loads(out["text"]))

    return async_to_sync(go)()


def requested(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next(e["data"] for e in events if e["type"] == "pause.requested")


def rows(run: Run, pause: Pause) -> dict[str, Any]:
    """What a refusal must leave as it was: the pause, its decisions, the run's tree, refunds."""
    return {"pause": snapshot(pause),
            "decisions": list(Decision.objects.filter(pause=pause).values()),
            "runs": list(Run.objects.filter(root_id=run.root_id).order_by("pk").values()),
            "refunds": Refund.objects.count()}


# --- 4. a watch ticket speaks for the person it was issued to, as they are now -------------------

@pytest.mark.django_db(transaction=True)
def test_a_starters_ticket_carries_the_token_while_the_starter_is_entitled(users):
    sam = member("sam", "start_run")  # may start runs; may not read or answer anyone's
    run, pause, ticket = started_refund(sam)
    claims = read_watch_ticket(ticket)
    assert claims is not None and claims.user_pk == str(sam.pk)
    assert claims.root_run_id == claims.run_id == str(run.pk)
    events, code = watch(run.pk, ticket=ticket)
    assert code == 1000 and requested(events)["token"] == token_for(pause)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("revoke", "code"), [
    ("deactivated", 4401),            # the account was switched off
    ("removed from the tenant", 4403),  # a member of no scope: reads nothing any more
    ("everything", 4401),             # permissions, membership and account, as attacked
])
def test_a_revoked_starters_old_ticket_opens_nothing_and_carries_no_token(users, revoke, code):
    sam = member("sam", "start_run")
    run, pause, ticket = started_refund(sam)
    if revoke in ("deactivated", "everything"):
        get_user_model().objects.filter(pk=sam.pk).update(is_active=False)
    if revoke in ("removed from the tenant", "everything"):
        Membership.objects.filter(user=sam).delete()
        sam.user_permissions.clear()
    before = rows(run, pause)
    events, closed = watch(run.pk, ticket=ticket)
    assert (events, closed) == ([], code)
    # With no token there is nothing to resume with: the refund is never recorded.
    assert rows(run, pause) == before and Refund.objects.count() == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("revoke", "code"), [
    ("deactivated", 4401),
    ("removed from the tenant", 4403),
])
def test_revoking_a_starter_closes_its_ticket_socket_before_the_next_token(
        users, access_recheck_seconds, revoke, code):
    """Revocation reaches a socket already open with a ticket at its next event, and the
    token that event would have carried is never sent."""
    access_recheck_seconds(0.0)
    sam = member("sam", "start_run")
    run, pause, ticket = started_refund(sam)
    later = pauses.approve(pause.pk, actor=named("alice")).continuation  # same tree, queued
    asked = PauseRequested(pause_id=str(pause.pk), kind=pause.kind, prompt=pause.prompt,
                           expires_at=pause.expires_at.isoformat())

    def revoke_access() -> None:
        if revoke == "deactivated":
            get_user_model().objects.filter(pk=sam.pk).update(is_active=False)
        else:
            Membership.objects.filter(user=sam).delete()

    async def go() -> tuple[dict[str, Any], dict[str, Any]]:
        comm = WebsocketCommunicator(app, f"/ws/symfonic/runs/{later.pk}/?ticket={ticket}")
        assert (await comm.connect())[0]
        await sync_to_async(append)(later, 1, asked)
        await aring(later.pk, 1)
        first = await comm.receive_output(timeout=5)  # still entitled: it carries the token
        await sync_to_async(revoke_access)()
        await sync_to_async(append)(later, 2, asked)
        await aring(later.pk, 2)
        closed = await comm.receive_output(timeout=5)
        await comm.disconnect()
        return first, closed

    first, closed = async_to_sync(go)()
    assert json.loads(first["text"])["data"]["token"] == token_for(pause)
    assert closed["type"] == "websocket.close" and closed["code"] == code
    assert "text" not in closed
    assert TurnEvent.objects.filter(run=later).count() == 2  # revocation changes no row


@pytest.mark.django_db(transaction=True)
def test_a_reviewers_ticket_stops_when_the_view_permission_goes(users):
    dave = member("dave", "view_run", "view_pause", "answer_pause")
    run, pause, _ = started_refund(named("alice"))
    accepted = api(dave).post(f"{API}pauses/{pause.pk}/approve/", {}, format="json")
    assert accepted.status_code == 202, accepted.json()
    cont_id, ticket = accepted.json()["run_id"], accepted.json()["stream"]["ticket"]
    assert read_watch_ticket(ticket).user_pk == str(dave.pk)
    execute_run(cont_id)
    assert watch(cont_id, ticket=ticket)[1] == 1000
    dave.user_permissions.remove(Permission.objects.get(codename="view_run"))
    assert watch(cont_id, ticket=ticket) == ([], 4404)  # still a member: not found, as unknown


@pytest.mark.django_db(transaction=True)
def test_a_ticket_opens_its_own_run_tree_only(users):
    alice = named("alice")
    run, pause, ticket = started_refund(alice)
    other, _, _ = started_refund(alice, order="A-2")
    cont = pauses.approve(pause.pk, actor=alice).continuation
    execute_run(cont.pk)
    assert watch(cont.pk, ticket=ticket)[1] == 1000          # its tree's continuation
    assert watch(other.pk, ticket=ticket) == ([], 4401)       # another tree: not this ticket's
    unknown = "00000000-0000-0000-0000-00000000000a"
    assert watch(unknown, ticket=ticket) == ([], 4401)        # the same, whether or not it exists


@pytest.mark.django_db(transaction=True)
def test_an_anonymous_resumes_ticket_watches_that_continuation_without_tokens(users):
    run, pause, _ = started_refund(named("alice"))
    accepted = api().post(f"{API}resume/", {"token": token_for(pause), "answer": APPROVE},
                          format="json")
    assert accepted.status_code == 202, accepted.json()
    cont = Run.objects.get(pk=accepted.json()["run_id"])
    ticket = accepted.json()["stream"]["ticket"]
    claims = read_watch_ticket(ticket)
    assert claims.user_pk is None and claims.pause_id == str(pause.pk)
    # The continuation asks again: the anonymous watcher sees the event, never its token.
    asked = PauseRequested(pause_id=str(pause.pk), kind=pause.kind, prompt=pause.prompt,
                           expires_at=pause.expires_at.isoformat())
    append(cont, 1, asked)
    append(cont, 2, TurnPaused(pause_ids=[str(pause.pk)]))
    events, code = watch(cont.pk, ticket=ticket)
    assert requested(events)["pause_id"] == str(pause.pk)
    assert "token" not in requested(events) and token_for(pause) not in json.dumps(events)
    # Nothing else of the tree: not the run that paused, whose events hold the first ask.
    assert watch(run.pk, ticket=ticket) == ([], 4401)
    assert code == 1000


@pytest.mark.django_db(transaction=True)
def test_a_session_of_a_member_who_may_only_start_runs_reads_only_its_own_runs(users):
    sam = member("sam", "start_run")
    own, pause, _ = started_refund(sam)
    others, _, _ = started_refund(named("alice"), order="A-2")
    events, code = watch(own.pk, user=sam)
    assert code == 1000 and requested(events)["token"] == token_for(pause)
    assert watch(others.pk, user=sam) == ([], 4404)
    stranger = get_user_model().objects.create_user("stranger")  # no scope, no permission
    assert watch(others.pk, user=stranger) == ([], 4403)
    assert watch("00000000-0000-0000-0000-00000000000b", user=stranger) == ([], 4403)


# --- 5. a member who may only start runs does not read the tenant ---------------------------------

@pytest.mark.django_db
def test_a_member_who_may_only_start_runs_reads_no_pause_and_no_one_elses_run(users):
    sam = member("sam", "start_run")
    others, their_pause, _ = started_refund(named("alice"), order="A-9")
    own, own_pause, _ = started_refund(sam)
    client = api(sam)
    listed = client.get(f"{API}pauses/")
    assert listed.status_code == 200 and listed.json()["results"] == []
    for path in (f"pauses/{their_pause.pk}/", f"pauses/{own_pause.pk}/",
                 f"runs/{others.pk}/", f"runs/{others.pk}/events/"):
        response = client.get(API + path)
        assert response.status_code == 404, path
        assert response.json()["code"] == "not_found"
    assert [r["id"] for r in client.get(f"{API}runs/").json()["results"]] == [str(own.pk)]
    # Its own run tree it reads, with the token of a pause it may answer.
    assert client.get(f"{API}runs/{own.pk}/").json()["input"]["order_id"] == "A-1"
    events = client.get(f"{API}runs/{own.pk}/events/").json()["results"]
    assert requested(events)["token"] == token_for(own_pause)


@pytest.mark.django_db
def test_a_starter_removed_from_its_tenant_reads_its_runs_no_more(users):
    sam = member("sam", "start_run")
    own, _, _ = started_refund(sam)
    Membership.objects.filter(user=sam).delete()
    assert api(sam).get(f"{API}runs/{own.pk}/").status_code == 404
    assert api(sam).get(f"{API}runs/").json()["results"] == []


@pytest.mark.django_db
def test_each_read_needs_its_own_view_permission(users):
    run, pause, _ = started_refund(named("alice"))
    pauses_only = api(member("paula", "view_pause"))
    runs_only = api(member("rory", "view_run"))
    assert pauses_only.get(f"{API}pauses/{pause.pk}/").status_code == 200
    assert pauses_only.get(f"{API}runs/{run.pk}/").status_code == 404
    assert runs_only.get(f"{API}runs/{run.pk}/events/").status_code == 200
    assert runs_only.get(f"{API}pauses/{pause.pk}/").status_code == 404
    assert "token" not in requested(runs_only.get(f"{API}runs/{run.pk}/events/").json()["results"])


@pytest.mark.django_db
def test_the_viewer_shows_a_starter_its_own_run_and_nobody_elses(users):
    sam = member("sam", "start_run", staff=True)
    own, _, _ = started_refund(sam)
    others, _, _ = started_refund(named("alice"), order="A-2")
    client = Client()
    client.force_login(sam)
    assert client.get(viewer_url(own)).status_code == 200
    assert client.get(state_url(own)).status_code == 200
    assert client.get(viewer_url(others)).status_code == 404
    assert client.get(state_url(others)).json()["code"] == "not_found"


@pytest.mark.django_db
def test_the_viewer_names_who_answered_only_to_readers_of_the_scopes_pauses(users):
    sam = member("sam", "start_run", staff=True)
    own, pause, _ = started_refund(sam)
    pauses.approve(pause.pk, actor=named("alice"))
    client = Client()
    client.force_login(sam)
    assert client.get(state_url(own)).json()["pauses"][0]["answered_by"] is None
    client.force_login(named("alice"))
    assert client.get(state_url(own)).json()["pauses"][0]["answered_by"] == "alice"


@pytest.mark.django_db
def test_the_admin_shows_a_member_who_may_only_start_runs_nothing(users):
    started_refund(named("alice"))
    client = Client()
    client.force_login(member("sam", "start_run", staff=True))
    for model in ("pause", "run", "turnevent", "decision"):
        assert client.get(f"/admin/symfonic_django/{model}/").status_code == 403, model


@pytest.mark.django_db
def test_the_admin_lists_a_runs_events_only_to_readers_of_runs(users):
    run, _, _ = started_refund(named("alice"))
    client = Client()
    client.force_login(member("eve", "view_turnevent", staff=True))  # the model's, not the runs'
    listed = client.get("/admin/symfonic_django/turnevent/")
    assert listed.status_code == 200 and str(run.pk)[:8] not in listed.content.decode()
    client.force_login(member("rory", "view_turnevent", "view_run", staff=True))
    assert str(run.pk)[:8] in client.get("/admin/symfonic_django/turnevent/").content.decode()


# --- 7. replays, unknown ids and comments ------------------------------------------------------

@pytest.mark.django_db
@pytest.mark.parametrize("second", ["anonymous", "bob", "carol"])
def test_a_resume_is_replayed_to_its_own_caller_only(users, second):
    alice = named("alice")
    run, pause, _ = started_refund(alice)
    token, key = token_for(pause), {"HTTP_IDEMPOTENCY_KEY": "k-1"}
    body = {"token": token, "answer": APPROVE}
    first = api(alice).post(f"{API}resume/", body, format="json", **key)
    assert first.status_code == 202 and first.json()["pause"]["scope"] == "acme"
    assert api(alice).post(f"{API}resume/", body, format="json", **key).json() == first.json()
    before = rows(run, pause)
    caller = {"anonymous": None, "bob": named("bob"),
              "carol": member("carol", "view_pause", "view_run")}[second]
    again = api(caller).post(f"{API}resume/", body, format="json", **key)
    # Judged on its own: the pause is answered already; no 202, no scope, no ticket.
    assert again.status_code == 409 and again.json()["code"] == "already_answered"
    assert set(again.json()) == {"code", "detail"}  # no pause, no scope, no stream
    assert rows(run, pause) == before
    assert IdempotentResponse.objects.count() == 1  # only alice's


@pytest.mark.django_db
def test_an_anonymous_resume_is_replayed_to_the_holder_of_its_token(users):
    run, pause, _ = started_refund(named("alice"))
    body, key = {"token": token_for(pause), "answer": APPROVE}, {"HTTP_IDEMPOTENCY_KEY": "k-2"}
    first = api().post(f"{API}resume/", body, format="json", **key)
    assert first.status_code == 202
    assert first.json()["pause"]["scope"] is None and first.json()["pause"]["answered_by"] is None
    assert api().post(f"{API}resume/", body, format="json", **key).json() == first.json()
    # A signed-in caller with the same key and body is not the token's anonymous caller.
    assert api(named("alice")).post(f"{API}resume/", body, format="json",
                                    **key).status_code == 409


@pytest.mark.django_db
@pytest.mark.parametrize("path", [
    "pauses/0.5/", "runs/0.5/", "runs/0.5/events/", "pauses/1e3/", "pauses/a.b.c/",
    "pauses/-1/", "pauses/" + "9" * 300 + "/", "pauses/%00/", "pauses/x/y/z/", "nothing/",
    "runs/0.5/events/more/", "",
])
def test_an_unknown_id_of_any_shape_is_the_json_404(users, path):
    for client in (api(named("alice")), api(named("admin"))):
        response = client.get(API + path)
        assert response.status_code == 404, path
        assert response["Content-Type"] == "application/json"
        assert response.json()["code"] == "not_found" and response.json()["detail"]


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["pauses/0.5/approve/", "pauses/0.5/reject/",
                                  "pauses/0.5/answer/", "pauses/0.5/nothing/"])
def test_an_answer_to_an_unknown_id_of_any_shape_is_the_json_404(users, path):
    response = api(named("alice")).post(API + path, {}, format="json")
    assert response.status_code == 404 and response.json()["code"] == "not_found"


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["get", "post", "put", "patch", "delete", "options"])
def test_an_odd_id_is_the_json_404_to_anyone_whatever_the_method(users, method):
    for client in (api(), api(named("bob"))):
        response = getattr(client, method)(f"{API}pauses/0.5/", {}, format="json")
        assert response.status_code == 404 and response.json()["code"] == "not_found"


@pytest.mark.django_db
@pytest.mark.parametrize("action", ["approve", "reject"])
@pytest.mark.parametrize("comment", [0, 1.5, True, None, [], ["ok"], {"text": "ok"}])
def test_a_comment_that_is_not_a_string_is_refused_and_changes_nothing(users, action, comment):
    run, pause, _ = started_refund(named("alice"))
    before = rows(run, pause)
    response = api(named("alice")).post(f"{API}pauses/{pause.pk}/{action}/",
                                        {"comment": comment}, format="json")
    assert response.status_code == 400 and response.json()["code"] == "invalid_request"
    assert "comment" in response.json()["detail"]
    assert rows(run, pause) == before


@pytest.mark.django_db
def test_a_comment_that_is_a_string_is_recorded(users):
    _, pause, _ = started_refund(named("alice"))
    response = api(named("alice")).post(f"{API}pauses/{pause.pk}/reject/", {"comment": "0"},
                                        format="json")
    assert response.status_code == 202
    assert Decision.objects.get(pause=pause).comment == "0"


@pytest.mark.django_db(transaction=True)
def test_a_ticket_for_a_user_is_minted_for_the_run_the_api_names(users):
    """POST runs/ issues the ticket to its caller, for the run it started."""
    alice = named("alice")
    run, _, ticket = started_refund(alice)
    assert read_watch_ticket(ticket) == read_watch_ticket(mint_watch_ticket(run, user=alice))


@pytest.mark.django_db
def test_the_demos_users_start_read_and_answer_in_their_own_tenant_only(users):
    """``seed_demo``'s alice and bob hold the three rights, each in its own tenant."""
    for name, own, other in (("alice", "acme", "globex"), ("bob", "globex", "acme")):
        user = named(name)
        assert user.has_perms(["symfonic_django.start_run", "symfonic_django.view_pause",
                               "symfonic_django.view_run", "symfonic_django.answer_pause"])
        assert may_read_pauses(user, own) and may_answer(user, own)
        assert not may_read_pauses(user, other) and not may_answer(user, other)


@pytest.mark.django_db
def test_the_review_page_shows_the_runs_events_only_to_readers_of_runs(users):
    _, pause, _ = started_refund(named("alice"))
    page = f"/admin/symfonic_django/pause/{pause.pk}/change/"
    client = Client()
    client.force_login(member("paula", "view_pause", staff=True))
    shown = client.get(page)
    assert shown.status_code == 200 and 'id="asked-events"' not in shown.content.decode()
    client.force_login(member("rory", "view_pause", "view_run", staff=True))
    assert 'id="asked-events"' in client.get(page).content.decode()
