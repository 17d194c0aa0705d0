"""Websocket query strings under attack: random ``after`` and ``ticket``, repeated
parameters, percent-encoded junk, unicode and raw non-ASCII bytes.

The socket is always accepted, then either streams and closes 1000 or is
refused with one of the pinned close codes; never an exception, never 1011.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest
from asgiref.sync import async_to_sync
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from hypothesis import given
from hypothesis import strategies as st

from symfonic_django.routing import websocket_urlpatterns
from symfonic_django.tokens import mint_watch_ticket
from tests.testapp.seed import seed_users

from ..conftest import paused_run
from . import fuzz_settings

pytestmark = pytest.mark.django_db(transaction=True)

app = URLRouter(websocket_urlpatterns)
CLOSE_CODES = {1000, 4400, 4401, 4403, 4404}
ANY_CHARACTER = st.characters(exclude_categories=())


def watch(path: str, raw_query: bytes, user: Any) -> tuple[list[dict[str, Any]], int | None]:
    """Connect with ``raw_query`` as the query string's bytes; read until the server closes."""

    async def go() -> tuple[list[dict[str, Any]], int | None]:
        comm = WebsocketCommunicator(app, path)
        comm.scope["query_string"] = raw_query
        if user is not None:
            comm.scope["user"] = user
        connected, _ = await comm.connect(timeout=5)
        assert connected, "the socket was not accepted"
        events: list[dict[str, Any]] = []
        while True:
            out = await comm.receive_output(timeout=5)
            if out["type"] == "websocket.close":
                await comm.disconnect()
                return events, out.get("code")
            events.append(json.loads(out["text"]))

    result: tuple[list[dict[str, Any]], int | None] = async_to_sync(go)()
    return result


def query_strings(ticket: str) -> st.SearchStrategy[bytes]:
    """Query strings a hand or a script could send, as the bytes on the wire."""
    afters = st.one_of(st.integers(-5, 10).map(str), st.integers(0, 2**40).map(str),
                       st.sampled_from(["", "²", "１", "0x1", "1e3", " 1", "+1", "٣", "%00",
                                        "9" * 30, "-0", "1.0"]),
                       st.text(ANY_CHARACTER, max_size=8))
    tickets = st.one_of(st.just(ticket), st.just(ticket[:-1]), st.just(ticket + "x"),
                        st.text(ANY_CHARACTER, max_size=40),
                        st.text("ABCDEFabcdef0123456789-_:", max_size=80))
    keys = st.sampled_from(["after", "ticket", "other", "", "after[]", "Ticket"])
    pair = st.one_of(
        st.tuples(st.just("after"), afters), st.tuples(st.just("ticket"), tickets),
        st.tuples(keys, st.text(ANY_CHARACTER, max_size=10)))
    encoded = st.lists(pair, max_size=5).map(lambda pairs: "&".join(
        f"{quote(k, safe='', errors='surrogatepass')}={quote(v, safe='', errors='surrogatepass')}"
        for k, v in pairs).encode("ascii"))
    # Not encoded at all: raw separators, percent junk, non-ASCII bytes straight on the wire.
    raw = st.one_of(
        st.binary(max_size=60),
        st.lists(pair, max_size=4).map(lambda pairs: "&".join(
            f"{k}={v}" for k, v in pairs).encode("utf-8", errors="surrogatepass")),
        st.sampled_from([b"%", b"%zz", b"%ff%fe", b"after=1&after=2", b"&&&=", b"after=%C2%B2",
                         b"ticket=%00", b";after=1", b"a" * 5000]))
    return st.one_of(encoded, raw)


def test_every_query_string_ends_in_a_pinned_close_code(tenants: dict[str, Any]) -> None:
    seed_users()
    alice = get_user_model().objects.get(username="alice")
    run, _ = paused_run()
    path = f"/ws/symfonic/runs/{run.pk}/"
    ticket = mint_watch_ticket(run, user=alice)
    codes: dict[int | None, int] = {}

    @fuzz_settings(120)
    @given(raw=query_strings(ticket), user=st.sampled_from([None, alice]))
    def closes_cleanly(raw: bytes, user: Any) -> None:
        events, code = watch(path, raw, user)
        codes[code] = codes.get(code, 0) + 1
        assert code in CLOSE_CODES, (raw, code)
        if code != 1000:
            assert events == [], (raw, code)

    closes_cleanly()
    assert 1000 in codes and 4400 in codes, codes
    print(f"\nwebsocket: {sum(codes.values())} query strings, close codes {codes}")


def test_any_run_id_in_the_path_ends_in_a_pinned_close_code(tenants: dict[str, Any]) -> None:
    """The path's run id is read too: a UUID of no run, or no UUID at all, is a 4404."""
    seed_users()
    alice = get_user_model().objects.get(username="alice")

    @fuzz_settings(40)
    @given(run_id=st.text("0123456789abcdef-", min_size=1, max_size=40)
           | st.uuids().map(str) | st.text(ANY_CHARACTER.filter(lambda c: c != "/"), min_size=1))
    def closes_cleanly(run_id: str) -> None:
        try:
            _, code = watch(f"/ws/symfonic/runs/{run_id}/", b"", alice)
        except ValueError as exc:  # no route matched: the router refuses the path itself
            assert "No route found" in str(exc)
            return
        assert code in CLOSE_CODES, (run_id, code)

    closes_cleanly()
