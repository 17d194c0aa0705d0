"""The browser tests' shared fixtures: daphne serving the example project on this test's
database (``server``) and its environment, defined in ``test_admin_browser``; and one
headless Debian chromium per test (``chromium``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .test_admin_browser import CHROMIUM, CHROMIUM_ARGS, server, service_env

__all__ = ["chromium", "server", "service_env"]


@pytest.fixture
def chromium(server: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                      headless=True)
        try:
            yield browser
        finally:
            browser.close()
