"""The live-turn viewer in a real browser, on the live stack (daphne, workers, Redis).

Alice logs in to the admin, opens the viewer of a continuation that waits at a
gate, and watches its text arrive live; the page's socket is dropped
mid-stream and it reconnects with ``?after=`` without losing or repeating a
word. She also sees a finished refund's tool call (args and result) and a
paused run's approval prompt with its link to the admin; bob gets a 404.
Screenshots go to ``artifacts/screenshots/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from symfonic_django.models import Run, RunStatus

from ..conftest import paused_run
from .conftest import ARTIFACTS, chromium, log_in
from .stack import Stack, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

SHOTS = ARTIFACTS / "screenshots"
WORDS = 60  # 0.1 s apart: the page is dropped a few seconds into the stream


def test_alice_watches_a_resumed_turn_stream_live_and_survives_a_drop(live, users, tmp_path: Path):
    gate = tmp_path / "go"
    _, pause = paused_run("stream", {"n": WORDS, "sleep": 0.1, "gate": str(gate)})
    streaming_id = live.approve(pause.pk, users["alice"]["token"])["run_id"]
    refund_run, refund_pause = paused_run("refund", {"order_id": "VIEW-7", "amount": 42})
    refund_id = live.approve(refund_pause.pk, users["alice"]["token"])["run_id"]
    waiting_run, waiting_pause = paused_run("refund", {"order_id": "WAIT-1", "amount": 5})
    globex_run, _ = paused_run("echo", scope="globex")
    wait_for(lambda: Run.objects.get(pk=refund_id).status == RunStatus.COMPLETED, timeout=30,
             what="the refund continuation to complete")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with chromium() as browser:
        watch_in(browser, live, users, gate, streaming_id, refund_id, waiting_run, waiting_pause,
                 globex_run)
    assert Run.objects.get(pk=streaming_id).status == RunStatus.COMPLETED


def watch_in(browser: Any, live: Stack, users: dict, gate: Path, streaming_id: str,
             refund_id: str, waiting_run: Run, waiting_pause: Any, globex_run: Run) -> None:
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    log_in(page, live, "alice", users["alice"]["password"])
    page.goto(f"{live.origin}/admin/symfonic/runs/{streaming_id}/live/")
    page.wait_for_selector(".symfonic-connection-live")
    page.wait_for_selector("text=Turn started (agent stream)")
    assert page.text_content("#symfonic-status") == "Running"

    gate.touch()  # the turn streams now, while the page watches
    transcript = page.locator(".symfonic-message-text")
    transcript.wait_for()
    page.wait_for_function("document.querySelector('.symfonic-message-text')"
                           ".textContent.split(' ').length > 15")
    seen_mid = transcript.text_content()
    assert page.text_content("#symfonic-status") == "Running", "the text was meant to arrive live"
    page.screenshot(path=str(SHOTS / "viewer-streaming.png"), full_page=True)

    dropped_at = page.evaluate("window.symfonicViewer.lastSeq")
    page.evaluate("window.symfonicViewer.drop()")
    page.wait_for_function("window.symfonicViewer.connects === 2")  # back, with ?after=
    page.wait_for_selector("#symfonic-status.symfonic-status-completed", timeout=60_000)
    page.wait_for_selector(".symfonic-connection-ended")
    text = transcript.text_content()
    assert text == "".join(f"{i} " for i in range(WORDS)), text  # no gap, no repeat
    assert text.startswith(seen_mid) and len(seen_mid) < len(text)
    assert 1 < dropped_at < WORDS + 2
    assert page.evaluate("window.symfonicViewer.connects") == 2
    assert page.text_content("#symfonic-log-count") == str(WORDS + 2)
    assert "The turn completed." in page.text_content("#symfonic-outcome")
    page.screenshot(path=str(SHOTS / "viewer-live.png"), full_page=True)

    # A finished refund: the tool call with its arguments and result, then the text.
    page.goto(f"{live.origin}/admin/symfonic/runs/{refund_id}/live/")
    page.wait_for_selector(".symfonic-connection-ended")
    tool = page.text_content(".symfonic-tool")
    assert "refund" in tool and '"order_id": "VIEW-7"' in tool and "done" in tool
    assert '"amount": "42' in tool  # the result: the recorded Refund row
    assert page.text_content(".symfonic-message-text") == "Refund of 42 on order VIEW-7 is done."
    page.screenshot(path=str(SHOTS / "viewer-tool-call.png"), full_page=True)

    # A paused run: its approval prompt, with the link that answers it.
    page.goto(f"{live.origin}/admin/symfonic/runs/{waiting_run.pk}/live/")
    page.wait_for_selector(".symfonic-connection-ended")
    assert page.text_content("#symfonic-status") == "Paused"
    answer = page.locator(".symfonic-pause a.symfonic-answer")
    assert answer.get_attribute("href") == (
        f"/admin/symfonic_django/pause/{waiting_pause.pk}/change/")
    assert "WAIT-1" in page.text_content(".symfonic-pause")
    page.screenshot(path=str(SHOTS / "viewer-paused.png"), full_page=True)

    # Same scope rule as the API: another tenant's run is a 404.
    assert page.goto(f"{live.origin}/admin/symfonic/runs/{globex_run.pk}/live/").status == 404
    bob = browser.new_page()
    log_in(bob, live, "bob", users["bob"]["password"])
    assert bob.goto(f"{live.origin}/admin/symfonic/runs/{streaming_id}/live/").status == 404

    page.close()
    bob.close()


def test_the_viewer_is_for_staff_only(live, users):
    run, _ = paused_run("echo")
    with chromium() as browser:
        page = browser.new_page()
        response = page.goto(f"{live.origin}/admin/symfonic/runs/{run.pk}/live/")
        assert response.url.startswith(f"{live.origin}/admin/login/")  # sent to log in first


def test_the_viewer_reads_a_run_longer_than_a_page_across_4408_closes_once_each(live, users):
    """The server hands a connection a page (512 KiB of events) and closes it 4408; the
    page reconnects with ?after= at once and renders every event exactly once."""
    from symfonic_django.events import MessageDelta, TurnCompleted, append
    from symfonic_django.models import TurnEvent
    from symfonic_django.runs import start_run

    words = 1100  # of ~1.2 KB each on the wire (a padding field the page does not show)
    run = start_run("echo", {}, scope="acme", dispatch=False)
    TurnEvent.objects.bulk_create([TurnEvent(run=run, seq=i, type=MessageDelta.type,
                                             data={"text": f"{i} ", "pad": "x" * 1000},
                                             scope_key=run.scope_key)
                                   for i in range(1, words + 1)])
    append(run, words + 1, TurnCompleted(output="done"))
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        log_in(page, live, "alice", users["alice"]["password"])
        page.goto(f"{live.origin}/admin/symfonic/runs/{run.pk}/live/")
        page.wait_for_selector(".symfonic-connection-ended", timeout=60_000)
        assert page.evaluate("window.symfonicViewer.lastSeq") == words + 1
        assert page.evaluate("window.symfonicViewer.connects") == 3  # two pages, then the rest
        assert page.text_content("#symfonic-log-count") == str(words + 1)
        text = page.text_content(".symfonic-message-text")
        assert text == "".join(f"{i} " for i in range(1, words + 1))  # no gap, no repeat
        page.close()
