"""The reviewer cues that are seen, in a real browser: colours, and what fits the window.

daphne serves the test app against this test's PostgreSQL database
(``conftest.py``'s fixtures; no worker). Debian's chromium, driven by
Playwright, looks as alice (reviewer of acme) and saves each screenshot under
``artifacts/``: ``viewer-rejected.png``, ``inbox-claim-and-quorum-<width>.png``,
``pause-list-<width>.png``. The words of each cue are checked, quicker, by the
test client in ``tests/test_cues.py``.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from symfonic_django import events, pauses
from symfonic_django.models import AnsweredVia, Run, RunStatus
from symfonic_django.viewer import viewer_url
from tests.testapp.models import Tenant
from tests.testapp.seed import seed_pause, seed_users

from .conftest import ROOT, off_the_loop, second_acme_reviewer, signed_in

pytestmark = [pytest.mark.postgres, pytest.mark.services]

ARTIFACTS = ROOT / "artifacts"
#: The admin's and the viewer's "completed" green, and their "failed" red (viewer.css).
GREEN = "rgb(223, 245, 227)"
RED = "rgb(253, 226, 225)"


def at(browser: Any, server: str, who: str, width: int) -> Any:
    page = signed_in(browser, server, who)
    page.set_viewport_size({"width": width, "height": 900})
    return page


def shoot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


#: True when the element's box lies inside every box that clips it (an ``overflow`` other
#: than visible: the changelist's scrolling ``.results``) and inside the window.
UNCUT = """e => {
  const box = e.getBoundingClientRect();
  if (box.width === 0 || box.left < 0 || box.right > window.innerWidth + 0.5) return false;
  for (let p = e.parentElement; p; p = p.parentElement) {
    const style = getComputedStyle(p);
    if (style.overflowX === "visible") continue;
    const clip = p.getBoundingClientRect();
    if (box.left < clip.left - 0.5 || box.right > clip.right + 0.5) return false;
  }
  return true;
}"""


def in_window(page: Any, locator: Any) -> bool:
    """``locator``'s first element is visible, inside the window's width and cut by
    nothing that scrolls or hides its overflow."""
    element = locator.first
    return bool(element.is_visible() and element.evaluate(UNCUT))


def test_a_rejected_tool_call_has_a_red_not_done_badge_in_the_viewer(
        server: str, chromium: Any) -> None:
    def seed() -> str:
        seed_users()
        run = Run(agent="refund_graph", scope_key="acme", status=RunStatus.COMPLETED, input={})
        run.root_id = run.id
        run.save(force_insert=True)
        said = [events.TurnStarted(agent="refund_graph"),
                events.ToolStarted(tool_call_id="a", name="refund", args={"amount": 5}),
                events.ToolStarted(tool_call_id="b", name="refund", args={"amount": 900}),
                events.ToolCompleted(tool_call_id="a", name="refund", args={"amount": 5},
                                     result={"refunded": 5}),
                events.ToolCompleted(tool_call_id="b", name="refund", args={"amount": 900},
                                     result="not this one", status="error"),
                events.TurnCompleted(output="done")]
        for seq, event in enumerate(said, start=1):
            events.append(run, seq, event)
        return str(viewer_url(run))

    url = off_the_loop(seed)
    page = at(chromium, server, "alice", 1366)
    page.goto(f"{server}{url}")
    page.wait_for_function("document.querySelectorAll('.symfonic-tool .symfonic-status-running')"
                           ".length === 0 && document.querySelectorAll('.symfonic-tool').length"
                           " === 2")
    approved, rejected = (page.locator(".symfonic-tool .symfonic-tool-head .symfonic-status")
                          .nth(i) for i in (0, 1))
    colour = "e => getComputedStyle(e).backgroundColor"
    assert approved.inner_text().strip().lower() == "done"
    assert approved.evaluate(colour) == GREEN
    assert rejected.inner_text().strip().lower() == "not done"
    assert rejected.evaluate(colour) == RED
    shoot(page, "viewer-rejected.png")


def test_a_claim_her_own_approval_and_bulk_decisions_show_in_the_inbox_at_390_and_1366_px(
        server: str, chromium: Any, settings: Any) -> None:
    settings.SYMFONIC = {**settings.SYMFONIC, "APPROVAL_POLICY":
                         "tests.testapp.approvals.two_approvers_over_500"}

    def seed() -> None:
        seed_users()
        second_acme_reviewer()
        acme, rng = Tenant.objects.get(slug="acme"), random.Random(5)
        claimed = seed_pause(acme, rng, amount=40)["id"]
        approved = seed_pause(acme, rng, amount=750)["id"]
        users = get_user_model().objects
        pauses.claim(claimed, actor=users.get(username="dora"), via=AnsweredVia.ADMIN)
        pauses.approve(approved, actor=users.get(username="alice"), via=AnsweredVia.ADMIN)

    off_the_loop(seed)
    for width in (390, 1366):
        page = at(chromium, server, "alice", width)
        page.goto(f"{server}/admin/symfonic_django/pause/inbox/")
        claim = page.locator(".symfonic-card .symfonic-claim-note")
        mine = page.locator(".symfonic-card .symfonic-approvals")
        assert claim.count() == 1 and claim.inner_text() == "Being reviewed by dora"
        assert mine.count() == 1
        assert mine.inner_text() == "You approved; waiting for 1 more approval"
        assert in_window(page, claim) and in_window(page, mine), width
        # The bulk decision is offered here too, in the window at both widths.
        for selector in ("#symfonic-inbox-bulk button[value=approve_selected]",
                         "#symfonic-inbox-bulk button[value=reject_selected]",
                         ".symfonic-card .symfonic-select"):
            assert in_window(page, page.locator(selector)), (width, selector)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        shoot(page, f"inbox-claim-and-quorum-{width}.png")
        page.goto(f"{server}/admin/symfonic_django/pause/")
        listed = page.locator("#result_list .symfonic-claim-note")
        assert listed.count() == 1 and in_window(page, listed), width
        page.context.close()


def test_the_pause_list_shows_every_column_within_1366_px_and_its_rows_within_390_px(
        server: str, chromium: Any) -> None:
    def seed() -> None:
        seed_users()
        acme, rng = Tenant.objects.get(slug="acme"), random.Random(11)
        alice = get_user_model().objects.get(username="alice")
        for amount in (99.99, 40, 12.5):
            pause = seed_pause(acme, rng, amount=amount)["id"]
            if amount != 12.5:
                pauses.approve(pause, actor=alice, via=AnsweredVia.ADMIN)

    off_the_loop(seed)
    page = at(chromium, server, "alice", 1366)
    page.goto(f"{server}/admin/symfonic_django/pause/")
    assert in_window(page, page.locator("#result_list thead th.column-answered"))
    assert in_window(page, page.locator("#result_list td.field-answered"))
    shoot(page, "pause-list-1366.png")
    page.set_viewport_size({"width": 390, "height": 900})
    page.reload()
    # The action bar (approve or reject the selected) and every row's checkbox and
    # headline are in the window, without scrolling sideways.
    for selector in ("#changelist-form .actions select[name=action]",
                     "#changelist-form .actions button[name=index]",
                     "#result_list td.action-checkbox input",
                     "#result_list .field-summary a"):
        assert in_window(page, page.locator(selector)), selector
    shoot(page, "pause-list-390.png")
