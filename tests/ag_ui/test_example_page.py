"""The example project's AG-UI page in Chromium, over a live deployment of the example:
daphne serving ``example_project``, a Celery worker, PostgreSQL, Redis.

alice starts three refunds through ``refund_graph``, gets one interrupt card per refund,
approves one, edits one, rejects one, and sees the result; the approved and the edited
refunds are recorded, nothing else. Two screenshots, ``agui-card.png`` (the cards) and
``agui-result.png`` (the result), in the test's temp dir or ``SYMFONIC_SHOTS``: the
doc's are ``docs/images/``'s.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client

from ..conftest import need
from ..e2e.conftest import CHROMIUM, CHROMIUM_ARGS
from ..e2e.stack import Stack, database_url

pytestmark = [pytest.mark.postgres, pytest.mark.services,
              pytest.mark.django_db(transaction=True)]

#: Where the screenshots go: the test's temp dir, or ``SYMFONIC_SHOTS`` when set (the doc's
#: are made with ``SYMFONIC_SHOTS=$PWD/docs/images``), never the checkout by itself.
IMAGES_ENV = "SYMFONIC_SHOTS"


def test_the_example_page_approves_edits_and_rejects_over_ag_ui(tmp_path: Path) -> None:
    shots = Path(os.environ.get(IMAGES_ENV) or tmp_path)
    from example_project.shop.management.commands.seed_demo import seed_users
    from example_project.shop.models import Refund

    need(importlib.util.find_spec("langgraph") is not None, "refund_graph needs [langgraph]")
    need(bool(shutil.which("redis-server")), "needs redis-server on PATH")
    need(os.path.exists(CHROMIUM), f"{CHROMIUM} is missing")
    need(importlib.util.find_spec("playwright") is not None, "needs playwright")
    from playwright.sync_api import sync_playwright

    seed_users()
    # alice's session, made here: the tests' password hasher is not the example's, so the
    # browser arrives logged in; both processes sign with the same SECRET_KEY.
    browser_client = Client()
    browser_client.force_login(get_user_model().objects.get(username="alice"))
    session = browser_client.cookies[django_settings.SESSION_COOKIE_NAME].value
    stack = Stack(database_url(connection.settings_dict), tmp_path, workers=1,
                  application="example_project.asgi:application",
                  settings="example_project.settings",
                  extra_env={"SYMFONIC_DEMO": "1", "SECRET_KEY": django_settings.SECRET_KEY})
    try:
        stack.start()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                context = browser.new_context(viewport={"width": 900, "height": 1000})
                context.add_cookies([{"name": django_settings.SESSION_COOKIE_NAME,
                                      "value": session, "url": stack.origin}])
                page = context.new_page()
                page.goto(f"{stack.origin}/agui/")
                page.select_option("select[name=agent]", "refund_graph")
                page.click("button.agui-start")
                page.wait_for_selector(".agui-card >> nth=2", timeout=30_000)
                cards = page.locator(".agui-card")
                assert cards.count() == 3
                cards.nth(0).locator("button.agui-approve").click()
                cards.nth(1).locator("button.agui-edit").click()
                cards.nth(1).locator("input.agui-edit-amount").fill("2")
                cards.nth(2).locator("button.agui-reject").click()
                cards.nth(2).locator("input.agui-note").fill("Not this one.")
                page.screenshot(path=str(shots / "agui-card.png"), full_page=True)
                page.click("button.agui-send")
                page.wait_for_selector(".agui-output", timeout=30_000)
                text = page.inner_text("#agui-result")
                page.screenshot(path=str(shots / "agui-result.png"), full_page=True)
                assert "refund(s) reviewed" in text, text
                assert page.inner_text("#agui-status") == "Done."
            finally:
                browser.close()
    finally:
        stack.stop()
    assert sorted(Refund.objects.values_list("order_id", "amount")) == [
        ("WEB-1", Decimal("10.00")), ("WEB-2", Decimal("2.00"))], stack.logs()
