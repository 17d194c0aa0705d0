"""The review page of the example's ``refund_openai`` pause (the tests' copy), in Chromium:
one action per refund, each described, with approve, reject and respond and no edit (the
SDK cannot run an approved call with other arguments). The screenshot
(``openai-agents-review-page.png``, in the test's temp dir) is docs/openai-agents.md's
(``docs/images/``)."""

from __future__ import annotations

import os
from pathlib import Path

from django.contrib.auth import get_user_model
from django.test import Client

from symfonic_django.models import Decision, Pause, RunStatus
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run

from ..admin_pages import page
from ..conftest import need, snapshot
from ..openai_agents.docs_project import THREE_REFUNDS
from .conftest import CHROMIUM, CHROMIUM_ARGS

SHOT = "openai-agents-review-page.png"


def test_the_refund_openai_review_page_offers_approve_reject_respond_and_no_edit(
        transactional_db, users, live_server, tmp_path: Path):
    need(os.path.exists(CHROMIUM), f"no Chromium at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    run = start_run("refund_openai", THREE_REFUNDS, scope="acme", dispatch=False)
    execute_run(run.pk)
    [pause] = Pause.objects.filter(run=run)
    before = snapshot(pause)
    client = Client()
    client.force_login(get_user_model().objects.get(username="alice"))
    session = client.cookies["sessionid"].value
    # Playwright's sync API runs an event loop in this thread: no database call inside.
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                     headless=True)
        try:
            context = browser.new_context(viewport={"width": 1100, "height": 900})
            context.add_cookies([{"name": "sessionid", "value": session,
                                  "url": live_server.url}])
            tab = context.new_page()
            tab.goto(live_server.url + page(pause))
            descriptions = tab.locator(".symfonic-description").all_inner_texts()
            assert descriptions[:3] == ["Refund 10 on order A-1", "Refund 19.99 on order B-2",
                                        "Refund 3 on order C-3"]
            for index in range(3):
                offered = tab.locator(f'input[name="decision_{index}"]').evaluate_all(
                    "inputs => inputs.map(i => i.value)")
                assert sorted(offered) == ["approve", "reject", "respond"], offered
            tab.locator('input[name="decision_1"][value="reject"]').check()
            tab.screenshot(path=str(tmp_path / SHOT), full_page=True)
        finally:
            browser.close()
    assert snapshot(pause) == before and not Decision.objects.filter(pause=pause).exists()
    run.refresh_from_db()
    assert run.status == RunStatus.PAUSED
    print(f"screenshot: {tmp_path / SHOT}")
