"""The authorization matrix of ``docs/security.md``, every cell driven against the real surfaces.

The table under "Authorization matrix" in ``docs/security.md`` says, for every
surface and every actor, what happens: ``allowed``, ``absent``, ``counted``,
``token`` / ``no token``, ``login``, an HTTP status or a websocket close code.
This module reads that table and makes each cell a test of its own
(``test_the_matrix_cell[<surface> | <actor>]``): the actor does the thing on
the surface (the admin and the API through Django's test client, the websocket
through Channels' session middleware, as the example's ASGI application stacks
it), and the outcome it observed must be the cell's. A refusal must leave every
row as it was; a quorum cell must record the approval and leave the pause
pending.

A surface this module drives but the table lacks, a surface or an actor in the
table this module cannot drive, an outcome the legend does not define, or an
API route with no row, fails.

The world (tenants, one user per actor with its session, paused runs the
starter started through ``POST runs/``, the tickets the app issued) is made
once for the module and committed, since the websocket reads the database
through a connection of its own, as a server does. Each cell runs in a
transaction that is rolled back, so a cell that answers, claims, retries or
starts something leaves the world as it found it for the next. Everything is
flushed at the end, as ``transaction=True`` tests are.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.cache import cache
from django.core.management import call_command
from django.db import connections
from django.test import Client, override_settings
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from symfonic_django.models import Decision, Pause, PauseStatus, Run, RunRetry, RunStatus
from symfonic_django.routing import websocket_urlpatterns
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run
from tests.testapp.models import Membership, Refund, Tenant

from .conftest import snapshot

# Each cell runs in a transaction that is rolled back: the committed world is the same for all.
pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

DOC = Path(__file__).resolve().parents[1] / "docs" / "security.md"
SECTION = "## Authorization matrix"
API = "/api/symfonic/"
#: The columns of the table, in order.
ACTORS = ("anonymous", "token holder", "ticket holder", "member", "view-only", "reviewer",
          "other reviewer", "revoked", "deactivated", "starter", "starting reviewer", "operator",
          "superuser")
#: Every outcome a cell may say (the table's legend).
OUTCOMES = frozenset({"allowed", "absent", "counted", "refused", "token", "no token", "login",
                      "401", "403", "404", "4401", "4403", "4404"})
#: What every actor holds in the example: its scope (tenant) and its permissions.
VIEW = "view_"
ACTOR_SPECS: dict[str, dict[str, Any]] = {
    "member": {"tenant": "acme", "staff": False, "perms": ["start_run"]},
    "view-only": {"tenant": "acme", "staff": True, "perms": [VIEW]},
    "reviewer": {"tenant": "acme", "staff": True, "perms": [VIEW, "answer_pause"]},
    "other reviewer": {"tenant": "globex", "staff": True, "perms": [VIEW, "answer_pause"]},
    "revoked": {"tenant": "acme", "staff": True, "perms": [VIEW, "answer_pause"],
                "then": "revoke"},
    "deactivated": {"tenant": "acme", "staff": True, "perms": [VIEW, "answer_pause"],
                    "then": "deactivate"},
    "starter": {"tenant": "acme", "staff": False, "perms": ["start_run"]},
    "starting reviewer": {"tenant": "acme", "staff": True,
                          "perms": [VIEW, "answer_pause", "start_run"]},
    "operator": {"tenant": "acme", "staff": True, "perms": [VIEW, "retry_run"]},
    "superuser": {"tenant": None, "staff": True, "perms": [], "superuser": True},
}
APPROVE = {"decisions": [{"type": "approve"}]}
WS_TIMEOUT = 10  # seconds a socket may stay silent; a refused or finished one closes at once


# --- the table ---------------------------------------------------------------------------------

def read_matrix(text: str) -> tuple[list[str], dict[str, dict[str, str]]]:
    """The first Markdown table after the matrix's heading: its actor columns, and
    surface -> actor -> outcome (backticks dropped from the surface names)."""
    assert SECTION + "\n" in text, f"docs/security.md has no section {SECTION!r}"
    lines = text.split(SECTION + "\n", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    table = list(itertools.takewhile(lambda line: line.startswith("|"), lines[start:]))

    def cells(line: str) -> list[str]:
        return [cell.strip().replace("`", "") for cell in line.strip().strip("|").split("|")]

    header = cells(table[0])
    assert header[0] == "surface", f"the matrix's first column is {header[0]!r}, not 'surface'"
    actors = header[1:]
    matrix: dict[str, dict[str, str]] = {}
    for line in table[2:]:
        row = cells(line)
        assert len(row) == len(header), f"the matrix row {line!r} has {len(row)} cells, " \
                                        f"the header {len(header)}"
        assert row[0] not in matrix, f"the matrix has the surface {row[0]!r} twice"
        matrix[row[0]] = dict(zip(actors, row[1:], strict=True))
    return actors, matrix


COLUMNS, MATRIX = read_matrix(DOC.read_text(encoding="utf-8"))
CELLS = [(surface, actor, outcome) for surface, row in MATRIX.items()
         for actor, outcome in row.items()]


def cell_id(surface: str, actor: str) -> str:
    return f"{surface} | {actor}"


# --- the world -----------------------------------------------------------------------------------

@dataclass
class Paused:
    """A run the starter started through ``POST runs/``, paused, with its pause and the
    pause's token (as the superuser reads it from the events API)."""

    run: Run
    pause: Pause
    ticket: str  # the watch ticket ``POST runs/`` gave the starter
    token: str


@dataclass
class World:
    """What every cell acts on, made once and committed; each cell's changes are rolled back."""

    users: dict[str, Any]
    cookies: dict[str, str]  # actor -> its session cookie (committed: the websocket reads it)
    read: Paused  # one approver: read by the read cells, answered by the answer cells
    double: Paused  # a refund over 500: two approvers
    failed: Run  # for the retry cells
    member_ticket: str  # the ticket of the member's own run: another run tree
    #: The token the starter's ticket delivered on the websocket, per pause id (or why none).
    ticket_tokens: dict[str, str | None]
    #: Per actor of the ticket row: the ticket the app issued to it and the run it opens,
    #: or why it was issued none.
    issued: dict[str, tuple[str, str] | str]
    #: The starting reviewer's own runs (one approver, two approvers): it acts on those.
    own: tuple[Paused, Paused] | None = None
    counter: Iterator[int] = field(default_factory=itertools.count)

    def user(self, actor: str) -> Any:
        return self.users.get(actor)

    def target(self, actor: str, *, two: bool = False) -> Paused:
        """The paused run ``actor`` acts on: the starter's, or the starting reviewer's own."""
        single, double = (self.own if actor == "starting reviewer" and self.own
                          else (self.read, self.double))
        return double if two else single


def make_user(name: str, spec: dict[str, Any]) -> Any:
    """A user as ``spec`` says (before ``then``), with a DRF token."""
    user = get_user_model().objects.create_user(
        name, password="pw", is_staff=spec["staff"], is_superuser=spec.get("superuser", False))
    perms = Permission.objects.filter(content_type__app_label="symfonic_django")
    wanted = [p for p in perms if any(p.codename == c or (c == VIEW and p.codename.startswith(VIEW))
                                      for c in spec["perms"])]
    user.user_permissions.add(*wanted)
    if spec["tenant"]:
        Membership.objects.create(user=user, tenant=Tenant.objects.get(slug=spec["tenant"]))
    Token.objects.create(user=user)
    return user


def apply_since(user: Any, then: str | None) -> None:
    """What happened to a reviewer since: ``revoke`` (answer permission removed), ``deactivate``."""
    if then == "revoke":
        user.user_permissions.remove(Permission.objects.get(
            content_type__app_label="symfonic_django", codename="answer_pause"))
    elif then == "deactivate":
        user.is_active = False
        user.save(update_fields=["is_active"])


def api(world: World, actor: str) -> APIClient:
    """The actor's API client: its DRF token, or no credentials."""
    client = APIClient()
    user = world.user(actor)
    if user is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get(user=user).key}")
    return client


def browser(world: World, actor: str) -> Client:
    """The actor's browser: its session, or none."""
    client = Client()
    if actor in world.cookies:
        client.cookies[settings.SESSION_COOKIE_NAME] = world.cookies[actor]
    return client


def cookie_header(world: World, actor: str) -> str | None:
    value = world.cookies.get(actor)
    return f"{settings.SESSION_COOKIE_NAME}={value}" if value else None


def start(world: World, actor: str, amount: float, *, session_id: str = "") -> tuple[int, Any]:
    number = next(world.counter)
    # Each run on a thread of its own, as an AG-UI client resumes it (``ag-ui/{agent}/``).
    body = {"agent": "refund", "input": {"order_id": f"MX-{number}", "amount": amount},
            "thread_id": f"mx-thread-{number}"}
    if session_id:
        body["session_id"] = session_id
    response = api(world, actor).post(f"{API}runs/", body, format="json")
    return response.status_code, response.json()


def token_in(events: list[dict[str, Any]]) -> str | None:
    asked = [e for e in events if e["type"] == "pause.requested"]
    return asked[0]["data"].get("token") if asked else None


def paused(world: World, amount: float, *, session_id: str = "", by: str = "starter") -> Paused:
    """A new run ``by`` started, paused on a refund of ``amount`` (over 500: two approvers)."""
    status, body = start(world, by, amount, session_id=session_id)
    assert status == 202, f"the {by} could not start a run: {status} {body}"
    assert execute_run(body["run_id"]) == RunStatus.PAUSED
    run = Run.objects.get(pk=body["run_id"])
    pause = Pause.objects.get(run=run)
    assert pause.approvals_needed == (2 if amount > 500 else 1)
    events = api(world, "superuser").get(f"{API}runs/{run.pk}/events/")
    assert events.status_code == 200, events.json()
    token = token_in(events.json()["results"])
    assert token, "the superuser was sent no token to hand on"
    return Paused(run, pause, body["stream"]["ticket"], token)


def issue_ticket(world: World, actor: str) -> tuple[str, str] | str:
    """The ticket the app gives ``actor`` for a run tree of the starter's (see the doc's
    "websocket with ticket"), and the run it opens, run to its end; or why it gave none."""
    if actor in ("ticket holder", "starter", "starting reviewer"):
        made = world.target(actor)
        return made.ticket, str(made.run.pk)
    if actor in ("member", "view-only", "other reviewer", "operator"):
        return world.member_ticket, str(world.read.run.pk)
    if actor == "anonymous":
        return "", str(world.read.run.pk)
    made = paused(world, 40)
    if actor == "token holder":
        response = api(world, actor).post(f"{API}resume/", {"token": made.token,
                                                            "answer": APPROVE}, format="json")
    else:
        response = api(world, actor).post(f"{API}pauses/{made.pause.pk}/approve/", {},
                                          format="json")
    body = response.json()
    if response.status_code != 202 or not body.get("stream"):
        return f"no ticket was issued: its answer got {response.status_code} {body}"
    execute_run(body["run_id"])
    return body["stream"]["ticket"], body["run_id"]


def build_world() -> World:
    for slug in ("acme", "globex"):
        Tenant.objects.get_or_create(slug=slug, defaults={"name": slug.title()})
    users = {actor: make_user(f"mx-{actor.replace(' ', '-')}", spec)
             for actor, spec in ACTOR_SPECS.items()}
    cookies = {}
    for actor, user in users.items():
        client = Client()
        client.force_login(user)
        cookies[actor] = client.cookies[settings.SESSION_COOKIE_NAME].value
    world = World(users=users, cookies=cookies, read=None, double=None,  # type: ignore[arg-type]
                  failed=None, member_ticket="", ticket_tokens={}, issued={})  # type: ignore[arg-type]
    world.read = paused(world, 40, session_id="mx-world")
    world.double = paused(world, 750)
    world.own = (paused(world, 40, session_id="mx-world", by="starting reviewer"),
                 paused(world, 750, by="starting reviewer"))
    world.failed = start_run("boom", {}, scope="acme", dispatch=False)
    assert execute_run(world.failed.pk) == RunStatus.FAILED
    status, body = start(world, "member", 40)
    assert status == 202, body
    world.member_ticket = body["stream"]["ticket"]
    for made in (world.read, world.double):
        world.ticket_tokens[str(made.pause.pk)] = token_in(
            watch(made.run.pk, ticket=made.ticket)[0])
    # Tickets first, then what happened to the revoked and deactivated reviewers since.
    world.issued = {actor: issue_ticket(world, actor) for actor in ACTORS}
    for actor, spec in ACTOR_SPECS.items():
        apply_since(users[actor], spec.get("then"))
        users[actor] = get_user_model().objects.get(pk=users[actor].pk)
    return world


@pytest.fixture(scope="module")
def world(django_db_setup: Any, django_db_blocker: Any) -> Iterator[World]:
    """The world, committed (the websocket reads it from a connection of its own); flushed at
    the end, as ``transaction=True`` tests are. The example's four-eyes policy throughout."""
    policy = {**settings.SYMFONIC,
              "APPROVAL_POLICY": "tests.testapp.approvals.two_approvers_over_500"}
    with django_db_blocker.unblock(), override_settings(SYMFONIC=policy):
        try:
            yield build_world()
        finally:
            call_command("flush", verbosity=0, interactive=False)


@pytest.fixture(autouse=True)
def forget_throttles() -> None:
    """Every cell starts with fresh rate limits (they are counted in the cache)."""
    cache.clear()


# --- what a cell observes ------------------------------------------------------------------------

def rows_of(pause: Pause) -> tuple[Any, ...]:
    """Every row an answer could touch: the pause, its decisions, its run tree, refunds."""
    return (snapshot(pause), list(Decision.objects.filter(pause=pause).order_by("pk").values()),
            Run.objects.filter(root_id=pause.root_run_id).count(), Refund.objects.count())


def effect(pause: Pause, before: tuple[Any, ...]) -> str:
    """What happened to ``pause`` since ``before``: answered, counted, nothing or something."""
    now = Pause.objects.get(pk=pause.pk)
    if now.status != PauseStatus.PENDING:
        return "allowed"
    approvals = Decision.objects.filter(pause=pause, action=Decision.Action.APPROVE).count()
    if approvals > sum(1 for d in before[1] if d["action"] == Decision.Action.APPROVE):
        return "counted"
    return "unchanged" if rows_of(pause) == before else "changed"


def refusal(label: str, pause: Pause, before: tuple[Any, ...]) -> str:
    """``label`` when the refusal changed nothing; otherwise it says what it changed."""
    happened = effect(pause, before)
    return label if happened == "unchanged" else f"{label}, yet the pause was {happened}"


def is_login(response: Any) -> bool:
    return response.status_code == 302 and response["Location"].startswith(reverse("admin:login"))


def links_to(page: Any, row: Pause | Run) -> bool:
    """Whether an admin page lists ``row``: links to its page (its id alone could be the
    search box's text)."""
    url = reverse(f"admin:symfonic_django_{row._meta.model_name}_change", args=[row.pk])
    return url in page.content.decode()


def http_label(response: Any) -> str:
    return "login" if is_login(response) else str(response.status_code)


def answered(response: Any, pause: Pause, before: tuple[Any, ...], ok: int) -> str:
    """The outcome of an answer that succeeds with status ``ok``; an admin page that
    answers 200 instead shows its refusal in words (``refused``)."""
    if ok == 302 and response.status_code == 200:
        return refusal("refused", pause, before)
    if response.status_code != ok or is_login(response):
        return refusal(http_label(response), pause, before)
    happened = effect(pause, before)
    return happened if happened in ("allowed", "counted") else f"{ok}, yet the pause was {happened}"


def watch(run_id: Any, *, cookie: str | None = None, ticket: str | None = None
          ) -> tuple[list[dict[str, Any]], int | str]:
    """Open the run's stream through the session middleware; its events and close code.

    In a thread of its own, so the consumer reads the database through a connection of its
    own, as a server process does: it sees what is committed (the world), not the cell's
    uncommitted changes.
    """
    app = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))

    async def go() -> tuple[list[dict[str, Any]], int | str]:
        query = f"?ticket={ticket}" if ticket else ""
        headers = [(b"cookie", cookie.encode())] if cookie else []
        comm = WebsocketCommunicator(app, f"/ws/symfonic/runs/{run_id}/{query}", headers=headers)
        connected, _ = await comm.connect(timeout=WS_TIMEOUT)
        if not connected:
            return [], "no handshake"
        events: list[dict[str, Any]] = []
        try:
            while True:
                out = await comm.receive_output(timeout=WS_TIMEOUT)
                if out["type"] == "websocket.close":
                    return events, out.get("code", 1000)
                events.append(json.loads(out["text"]))
        except TimeoutError:
            return events, f"still open after {WS_TIMEOUT} s"
        finally:
            await comm.disconnect()

    outcome: list[Any] = []

    def in_its_thread() -> None:
        try:
            outcome.append(async_to_sync(go)())
        except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
            outcome.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=in_its_thread)
    thread.start()
    thread.join(timeout=4 * WS_TIMEOUT)
    assert outcome, "the websocket client did not finish"
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    result: tuple[list[dict[str, Any]], int | str] = outcome[0]
    return result


def stream_label(events: list[dict[str, Any]], code: int | str) -> str:
    if code == 1000 and events:
        return "allowed"
    return str(code)


def token_label(events: list[dict[str, Any]], code: int | str) -> str:
    label = stream_label(events, code)
    if label != "allowed":
        return label
    if not any(e["type"] == "pause.requested" for e in events):
        return "allowed, without a pause.requested"
    return "token" if token_in(events) else "no token"


# --- the drivers: one per surface, (world, actor) -> the outcome observed ------------------------

Driver = Callable[[World, str], str]
DRIVERS: dict[str, Driver] = {}


def surface(name: str) -> Callable[[Driver], Driver]:
    def register(driver: Driver) -> Driver:
        DRIVERS[name] = driver
        return driver
    return register


def admin_listing(url_name: str, query: str) -> Driver:
    def drive(world: World, actor: str) -> str:
        pause = world.target(actor).pause
        response = browser(world, actor).get(reverse(url_name) + query.format(pause=pause))
        if response.status_code != 200:
            return http_label(response)
        return "allowed" if links_to(response, pause) else "absent"
    return drive


surface("admin pause list")(admin_listing("admin:symfonic_django_pause_changelist",
                                          "?q={pause.pk}"))
# The pending tab, oldest first: the world's first pause is the oldest pending one.
surface("admin inbox")(admin_listing("admin:symfonic_django_pause_inbox", ""))


def review_form(two: bool) -> Driver:
    def drive(world: World, actor: str) -> str:
        pause = world.target(actor, two=two).pause
        before = rows_of(pause)
        response = browser(world, actor).post(
            reverse("admin:symfonic_django_pause_change", args=[pause.pk]),
            {"decision_0": "approve"})
        return answered(response, pause, before, 302)
    return drive


surface("admin review form (answer)")(review_form(two=False))
surface("admin review form (answer), two approvers")(review_form(two=True))


def offered_and_listed(client: Client, changelist: str, action: str, row: Any) -> str:
    """Why an admin action did nothing: ``403`` not offered, ``404`` the row not listed."""
    page = client.get(f"{changelist}?q={row.pk}")
    if action not in page.content.decode():
        return "403"
    if not links_to(page, row):
        return "404"
    return "refused"  # offered, listed, and refused in words


def bulk(action: str, two: bool) -> Driver:
    def drive(world: World, actor: str) -> str:
        pause = world.target(actor, two=two).pause
        before = rows_of(pause)
        client = browser(world, actor)
        changelist = reverse("admin:symfonic_django_pause_changelist")
        response = client.post(changelist, {"action": action, "post": "yes", "reason": "",
                                            "_selected_action": [str(pause.pk)]})
        if is_login(response) or response.status_code not in (200, 302):
            return refusal(http_label(response), pause, before)
        happened = effect(pause, before)
        if happened in ("allowed", "counted"):
            return happened
        if happened == "changed":
            return "refused, yet the pause was changed"
        return offered_and_listed(client, changelist, action, pause)
    return drive


surface("admin bulk approve")(bulk("approve_selected", two=False))
surface("admin bulk approve, two approvers")(bulk("approve_selected", two=True))
surface("admin bulk reject")(bulk("reject_selected", two=False))


@surface("admin claim/release")
def admin_claim(world: World, actor: str) -> str:
    pause = world.target(actor).pause
    before = rows_of(pause)
    client = browser(world, actor)
    claimed = client.post(reverse("admin:symfonic_django_pause_claim", args=[pause.pk]))
    if claimed.status_code != 302 or is_login(claimed):
        return refusal(http_label(claimed), pause, before)
    holder = Pause.objects.get(pk=pause.pk).claimed_by_id
    user = world.user(actor)
    if user is None or holder != user.pk:
        return f"the claim answered 302, yet the claim is held by {holder}"
    released = client.post(reverse("admin:symfonic_django_pause_release", args=[pause.pk]))
    if released.status_code != 302 or Pause.objects.get(pk=pause.pk).claimed_by_id:
        return f"claimed, then the release answered {released.status_code} and held on"
    return "allowed"


@surface("admin retry (runs)")
def admin_retry(world: World, actor: str) -> str:
    run = world.failed

    def state() -> tuple[Any, ...]:
        return (Run.objects.filter(pk=run.pk).values().get(),
                RunRetry.objects.filter(run=run).count())

    before = state()
    client = browser(world, actor)
    changelist = reverse("admin:symfonic_django_run_changelist")
    response = client.post(changelist, {"action": "retry_selected",
                                        "_selected_action": [str(run.pk)]})
    if Run.objects.get(pk=run.pk).status == RunStatus.QUEUED:
        return "allowed"
    if state() != before:
        return f"{http_label(response)}, yet the run was changed"
    if is_login(response) or response.status_code not in (200, 302):
        return http_label(response)
    return offered_and_listed(client, changelist, "retry_selected", run)


@surface("live viewer page")
def viewer_page(world: World, actor: str) -> str:
    run = world.target(actor).run
    response = browser(world, actor).get(reverse("symfonic_run_live", kwargs={"run_id": run.pk}))
    if response.status_code == 200 and str(run.pk) in response.content.decode():
        return "allowed"
    return http_label(response)


@surface("live viewer state")
def viewer_state(world: World, actor: str) -> str:
    run = world.target(actor).run
    response = browser(world, actor).get(
        reverse("symfonic_run_live_state", kwargs={"run_id": run.pk}))
    if response.status_code == 200 and response.json()["run"]["id"] == str(run.pk):
        return "allowed"
    return http_label(response)


def api_list(path: str, wanted: Callable[[Paused], Any]) -> Driver:
    def drive(world: World, actor: str) -> str:
        made = world.target(actor)
        response = api(world, actor).get(API + path.format(made=made))
        if response.status_code != 200:
            return str(response.status_code)
        ids = [row["id"] for row in response.json()["results"]]
        return "allowed" if str(wanted(made)) in ids else "absent"
    return drive


# Filtered to the run: a list is newest first, a page holds 50.
surface("API GET pauses/")(api_list("pauses/?run={made.run.pk}", lambda made: made.pause.pk))
surface("API GET runs/")(api_list("runs/?session_id=mx-world", lambda made: made.run.pk))


def api_detail(path: str, wanted: Callable[[Paused], Any]) -> Driver:
    def drive(world: World, actor: str) -> str:
        made = world.target(actor)
        response = api(world, actor).get(API + path.format(made=made))
        if response.status_code == 200 and response.json().get("id") == str(wanted(made)):
            return "allowed"
        return str(response.status_code)
    return drive


surface("API GET pauses/{id}/")(api_detail("pauses/{made.pause.pk}/", lambda made: made.pause.pk))
surface("API GET runs/{id}/")(api_detail("runs/{made.run.pk}/", lambda made: made.run.pk))


@surface("API GET runs/{id}/events/")
def api_events(world: World, actor: str) -> str:
    response = api(world, actor).get(f"{API}runs/{world.target(actor).run.pk}/events/")
    if response.status_code == 200 and response.json()["results"]:
        return "allowed"
    return str(response.status_code)


def api_answer(action: str, body: dict[str, Any], two: bool) -> Driver:
    def drive(world: World, actor: str) -> str:
        pause = world.target(actor, two=two).pause
        before = rows_of(pause)
        response = api(world, actor).post(f"{API}pauses/{pause.pk}/{action}/", body,
                                          format="json")
        return answered(response, pause, before, 202)
    return drive


surface("API POST pauses/{id}/answer/")(api_answer("answer", {"answer": APPROVE}, two=False))
surface("API POST pauses/{id}/answer/, two approvers")(
    api_answer("answer", {"answer": APPROVE}, two=True))
surface("API POST pauses/{id}/approve/")(api_answer("approve", {}, two=False))
surface("API POST pauses/{id}/approve/, two approvers")(api_answer("approve", {}, two=True))
surface("API POST pauses/{id}/reject/")(api_answer("reject", {}, two=False))


@surface("API POST pauses/{id}/claim/ and release/")
def api_claim(world: World, actor: str) -> str:
    pause = world.target(actor).pause
    before = rows_of(pause)
    client = api(world, actor)
    claimed = client.post(f"{API}pauses/{pause.pk}/claim/", format="json")
    if claimed.status_code != 200:
        return refusal(str(claimed.status_code), pause, before)
    released = client.post(f"{API}pauses/{pause.pk}/release/", format="json")
    if released.status_code != 200 or Pause.objects.get(pk=pause.pk).claimed_by_id:
        return f"claimed, then the release answered {released.status_code} and held on"
    return "allowed"


def resume(two: bool) -> Driver:
    def drive(world: World, actor: str) -> str:
        made = world.target(actor, two=two)
        if actor == "anonymous":
            token = "a-token-of-its-own-making"
        elif actor == "ticket holder":
            token = world.ticket_tokens[str(made.pause.pk)] or made.token
        else:
            token = made.token
        before = rows_of(made.pause)
        response = api(world, actor).post(f"{API}resume/", {"token": token, "answer": APPROVE},
                                          format="json")
        return answered(response, made.pause, before, 202)
    return drive


surface("API POST resume/")(resume(two=False))
surface("API POST resume/, two approvers")(resume(two=True))


@surface("API POST runs/")
def api_start(world: World, actor: str) -> str:
    before = Run.objects.count()
    status, body = start(world, actor, 40)
    if status == 202:
        run = Run.objects.filter(pk=body["run_id"]).first()
        user = world.user(actor)
        if run is not None and user is not None and run.started_by_id == user.pk:
            return "allowed"
        return f"202, yet the run's starter is {run and run.started_by_id}"
    return str(status) if Run.objects.count() == before else f"{status}, yet a run was made"


def agui(world: World, actor: str, sent: dict[str, Any]) -> list[dict[str, Any]]:
    """The actor's ``POST ag-ui/refund/``: its events, the turns it waits for run here."""
    from ag_ui.core import Event
    from pydantic import TypeAdapter

    from symfonic_django.api.agui import stream

    async def run_queued(run_id: Any, seconds: float) -> None:
        def run_them() -> None:
            for queued in Run.objects.filter(status=RunStatus.QUEUED, root_id__in=Run.objects.filter(
                    pk=run_id).values("root_id")).values_list("pk", flat=True):
                execute_run(queued)
        await sync_to_async(run_them)()

    async def read(response: Any) -> bytes:
        return b"".join([chunk async for chunk in response.streaming_content])

    sent = {"runId": f"mx-{next(world.counter)}", "messages": [], **sent}
    with patch.object(stream, "wait_for_more", run_queued):
        response = api(world, actor).post(f"{API}ag-ui/refund/", sent, format="json")
        text = async_to_sync(read)(response).decode()
    events = [json.loads(frame.split("data: ", 1)[1]) for frame in text.split("\n\n")
              if "data: " in frame]
    for event in events:
        TypeAdapter(Event).validate_python(event)
    return events


def agui_label(events: list[dict[str, Any]]) -> str | None:
    """The HTTP status of an AG-UI refusal (``RUN_ERROR``), or ``None`` when it ran."""
    if events and events[-1]["type"] == "RUN_ERROR":
        return str(events[-1].get("metadata", {}).get("symfonic", {}).get("status", "?"))
    return None


def agui_resume(two: bool) -> Driver:
    def drive(world: World, actor: str) -> str:
        made = world.target(actor, two=two)
        before = rows_of(made.pause)
        events = agui(world, actor, {"threadId": made.run.thread_id, "resume": [
            {"interruptId": f"{made.pause.pk}:0", "status": "resolved",
             "payload": {"approved": True}}]})
        label = agui_label(events)
        if label is not None:
            return refusal(label, made.pause, before)
        happened = effect(made.pause, before)
        return happened if happened in ("allowed", "counted") else f"ran, yet {happened}"
    return drive


surface("API POST ag-ui/{agent}/ (resume)")(agui_resume(two=False))
surface("API POST ag-ui/{agent}/ (resume), two approvers")(agui_resume(two=True))


@surface("API POST ag-ui/{agent}/ (new input)")
def agui_start(world: World, actor: str) -> str:
    before = Run.objects.count()
    events = agui(world, actor, {"threadId": f"mx-agui-{next(world.counter)}",
                                 "forwardedProps": {"input": {"order_id": "MX-AG",
                                                              "amount": 40}}})
    label = agui_label(events)
    if label is not None:
        return label if Run.objects.count() == before else f"{label}, yet a run was made"
    run = Run.objects.filter(pk=events[0]["metadata"]["symfonic"]["appRunId"]).first()
    user = world.user(actor)
    if run is not None and user is not None and run.started_by_id == user.pk:
        return "allowed"
    return f"ran, yet the run's starter is {run and run.started_by_id}"


@surface("API POST ag-ui/{agent}/ (reconnect)")
def agui_reconnect(world: World, actor: str) -> str:
    run = world.target(actor).run
    events = agui(world, actor, {"threadId": run.thread_id,
                                 "forwardedProps": {"after": f"{run.pk}:0"}})
    label = agui_label(events)
    if label is not None:
        return label
    ran = [e["type"] for e in events]
    return "allowed" if ran[0] == "RUN_STARTED" and ran[-1] == "RUN_FINISHED" else str(ran)


@surface("websocket with session")
def ws_session(world: World, actor: str) -> str:
    return stream_label(*watch(world.target(actor).run.pk, cookie=cookie_header(world, actor)))


@surface("websocket with ticket")
def ws_ticket(world: World, actor: str) -> str:
    issued = world.issued[actor]
    if isinstance(issued, str):
        return issued
    ticket, run_id = issued
    cookie = cookie_header(world, actor) if actor in ("starter", "starting reviewer") else None
    return stream_label(*watch(run_id, ticket=ticket or None, cookie=cookie))


@surface("token in pause.requested, websocket")
def token_ws(world: World, actor: str) -> str:
    if actor == "ticket holder":
        return token_label(*watch(world.read.run.pk, ticket=world.read.ticket))
    return token_label(*watch(world.target(actor).run.pk, cookie=cookie_header(world, actor)))


@surface("token in pause.requested, events API")
def token_events(world: World, actor: str) -> str:
    response = api(world, actor).get(f"{API}runs/{world.target(actor).run.pk}/events/")
    if response.status_code != 200:
        return str(response.status_code)
    return token_label(response.json()["results"], 1000)


# --- the tests -----------------------------------------------------------------------------------

def test_the_matrix_has_one_column_per_actor_the_test_drives() -> None:
    assert tuple(COLUMNS) == ACTORS


def test_every_surface_the_test_drives_has_its_row_in_the_matrix() -> None:
    missing = sorted(set(DRIVERS) - set(MATRIX))
    assert not missing, f"docs/security.md's matrix lacks the surfaces {missing}"


def test_every_cell_of_the_matrix_says_a_known_outcome() -> None:
    unknown = [(s, a, o) for s, a, o in CELLS if o not in OUTCOMES]
    assert not unknown, f"outcomes the legend does not define: {unknown}"


def test_every_api_route_has_a_row_in_the_matrix() -> None:
    """A route added to the API without a row (and so without a driver) fails here."""
    from symfonic_django.api.urls import urlpatterns

    missing = []
    for pattern in urlpatterns:
        route = re.sub(r"\(\?P<pk>[^)]*\)", "{id}", str(pattern.pattern)).strip("^$")
        route = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)  # path("ag-ui/<str:agent>/")
        if route.startswith("schema/"):
            continue  # the OpenAPI document and its pages: public, they read no rows
        if not re.sub(r"\([^)]*\)\??", "", route).strip("/"):
            continue  # a catch-all route (a JSON 404 for any path the others do not name)
        prefix, _, last = route.rpartition("{id}/")
        if not any(route in row or (prefix and f"{prefix}{{id}}/" in row and f" {last}" in row)
                   for row in MATRIX):
            missing.append(route)
    assert not missing, f"API routes with no row in docs/security.md's matrix: {missing}"


@pytest.mark.parametrize(("where", "actor", "expected"), CELLS,
                         ids=[cell_id(s, a) for s, a, _ in CELLS])
def test_the_matrix_cell(world: World, where: str, actor: str, expected: str) -> None:
    driver = DRIVERS.get(where)
    assert driver is not None, f"the matrix has a surface no driver knows: {where!r}"
    assert actor in ACTORS, f"the matrix has an actor no driver knows: {actor!r}"
    observed = driver(world, actor)
    assert observed == expected, (
        f"docs/security.md says {where} × {actor} is {expected!r}; the surface gave {observed!r}")
