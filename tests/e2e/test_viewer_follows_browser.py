"""The live viewer keeps up: it follows a paused run into its continuation, in Chromium.

On the live stack (daphne, Celery workers, Redis, PostgreSQL). Alice watches a
paused refund; another client approves it over the API; the same page, never
reloaded, shows the continuation's events within a second of the answer, and
its address is now the continuation's. Opened on a run whose pause was
answered already (with its token), the page never shows a "waiting" line, not
even for a moment, and follows on at once. Screenshot: ``artifacts/viewer-follows.png``.
"""

from __future__ import annotations

import zoneinfo
from datetime import UTC, datetime, timedelta
from datetime import timezone as fixed_zone
from typing import Any

import pytest
from django.utils import timezone

from symfonic_django import pauses
from symfonic_django.datetimes import format_datetime
from symfonic_django.models import Pause, Run, RunStatus

from ..conftest import paused_run
from .conftest import ARTIFACTS, chromium, log_in
from .stack import Stack, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

FOLLOW_SECONDS = 1.0
#: Records, from the first parsed byte, whether the page ever said it waited for an answer.
NEVER_WAITING = """
window.__sawWaiting = false;
document.addEventListener("DOMContentLoaded", function () {
  function check() {
    if (/Waiting for \\d+ answer/.test(document.body.textContent)) window.__sawWaiting = true;
  }
  new MutationObserver(check).observe(document.body,
                                      {subtree: true, childList: true, characterData: true});
  check();
});
"""
#: Notes, on the page's clock, when the first event of a run after the first is rendered.
FIRST_FOLLOWED_EVENT = """() => {
  window.__followedAt = null;
  new MutationObserver(function () {
    if (window.__followedAt === null && window.symfonicViewer.runs > 1 &&
        window.symfonicViewer.lastSeq >= 1) window.__followedAt = performance.now();
  }).observe(document.getElementById("symfonic-log"), {childList: true});
}"""


def viewer(live: Stack, run_id: Any) -> str:
    return f"{live.origin}/admin/symfonic/runs/{run_id}/live/"


def test_a_viewer_of_a_paused_run_follows_into_the_continuation_within_a_second(live, users):
    run, pause = paused_run("refund", {"order_id": "FOLLOW-1", "amount": 42})
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1200, "height": 1000})
        log_in(page, live, "alice", users["alice"]["password"])
        page.add_init_script(NEVER_WAITING)
        page.goto(viewer(live, run.pk))
        page.wait_for_selector(".symfonic-connection-ended")
        assert "Waiting for 1 answer" in page.text_content("#symfonic-outcome")
        assert page.evaluate("window.__sawWaiting") is True  # what the other test never sees
        page.wait_for_function("window.symfonicViewer.polls >= 5")  # polling at its steady pace
        page.evaluate("window.__thisDocument = true")
        page.evaluate(FIRST_FOLLOWED_EVENT)

        # Another client answers: an API call with alice's token, not this page.
        sent = page.evaluate("performance.now()")
        body = live.approve(pause.pk, users["alice"]["token"])
        answered = page.evaluate("performance.now()")
        page.wait_for_function("window.__followedAt !== null", polling=10, timeout=10_000)
        followed = page.evaluate("window.__followedAt")
        latency = (followed - sent) / 1000
        print(f"\nfollow latency: {latency:.3f} s from sending the answer "
              f"({(followed - answered) / 1000:.3f} s after its 202)")
        assert latency < FOLLOW_SECONDS, f"the page followed {latency:.3f} s after the answer"

        continuation = body["run_id"]
        page.wait_for_selector("#symfonic-status.symfonic-status-completed", timeout=30_000)
        assert page.evaluate("window.__thisDocument") is True  # never reloaded
        assert page.url == viewer(live, continuation)  # a reload lands on the continuation
        assert page.text_content("#symfonic-run-id") == continuation
        messages = page.locator(".symfonic-message-text").all_text_contents()
        assert messages[-1] == "Refund of 42 on order FOLLOW-1 is done."
        outcome = page.text_content("#symfonic-outcome")
        assert "Waiting for" not in outcome and "The turn completed." in outcome
        card = page.text_content(".symfonic-pause")
        assert f"Pause {str(pause.pk)[:8]} answered by alice via API at " in card
        assert page.locator(".symfonic-pause a.symfonic-answer").count() == 0
        assert "Continued in run " + continuation[:8] in page.text_content(".symfonic-divider")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "viewer-follows.png"), full_page=True)

        page.reload()
        page.wait_for_selector(".symfonic-connection-ended")
        assert page.text_content("#symfonic-status") == "Completed"
        resumes = page.locator("#symfonic-resumes a")
        assert resumes.get_attribute("href") == f"/admin/symfonic/runs/{run.pk}/live/"
        page.close()
    assert Run.objects.get(pk=continuation).status == RunStatus.COMPLETED


def test_a_viewer_opened_on_an_answered_pause_never_says_it_is_waiting(live, users):
    run, pause = paused_run("refund", {"order_id": "FOLLOW-2", "amount": 7})
    status, body, _ = live.request("POST", "/api/symfonic/resume/", {
        "token": pauses.token_for(pause), "answer": {"decisions": [{"type": "approve"}]}})
    assert status == 202, body
    continuation = body["run_id"]
    wait_for(lambda: Run.objects.get(pk=continuation).status == RunStatus.COMPLETED,
             timeout=30, what="the continuation to complete")
    answered_at = Pause.objects.get(pk=pause.pk).answered_at
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1200, "height": 1000})
        log_in(page, live, "alice", users["alice"]["password"])
        page.add_init_script(NEVER_WAITING)
        page.goto(viewer(live, run.pk))
        page.wait_for_function("window.symfonicViewer.runs === 2")
        page.wait_for_selector("#symfonic-status.symfonic-status-completed")
        page.wait_for_selector(".symfonic-connection-ended")
        assert page.evaluate("window.__sawWaiting") is False
        assert page.evaluate("window.symfonicViewer.polls") == 0  # the page knew already
        assert page.url == viewer(live, continuation)
        card = page.text_content(".symfonic-pause")
        assert f"answered via Token at {format_datetime(answered_at)}." in card
        assert "Refund of 7 on order FOLLOW-2 is done." in page.text_content("#symfonic-transcript")
        page.screenshot(path=str(ARTIFACTS / "viewer-follows-answered.png"), full_page=True)
        shows_times_as_the_server_does(page)
        page.close()


def shows_times_as_the_server_does(page: Any) -> None:
    """The script's formatter against the template filter, zone by zone, to the second."""
    moments = [datetime(2026, 12, 2, 7, 25, 31, tzinfo=UTC),
               datetime(2026, 7, 1, 22, 5, 9, 999_000, tzinfo=UTC),
               datetime(2027, 3, 28, 1, 0, 0, tzinfo=UTC)]  # the hour Europe changes clocks
    zones: list[Any] = ["UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata",
                        fixed_zone(timedelta(hours=-3, minutes=-30))]
    for zone in zones:
        tz = zoneinfo.ZoneInfo(zone) if isinstance(zone, str) else zone
        with timezone.override(tz):
            name = timezone.get_current_timezone_name()
            for moment in moments:
                iso = moment.isoformat().replace("+00:00", "Z")
                shown = page.evaluate("([iso, zone]) => window.symfonicViewer.format(iso, zone)",
                                      [iso, name])
                assert shown == format_datetime(moment), (zone, iso)
