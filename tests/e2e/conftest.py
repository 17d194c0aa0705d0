"""The live stack for the end-to-end tests: started once per session, always stopped.

The stack's processes use pytest-django's test database, so they see the
rows a test writes (tests here are ``transaction=True``) and the tables are
flushed between tests as usual.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

from ..conftest import need
from .stack import Stack, database_url

T = TypeVar("T")
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"

#: Debian's Chromium unless CHROMIUM names another (scripts/chromium.sh).
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


def log_in(page: Any, live: Stack, username: str, password: str) -> None:
    page.goto(f"{live.origin}/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_selector("#user-tools")


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's Chromium under Playwright. Enter it after the test's ORM work is done."""
    need(os.path.exists(CHROMIUM), f"{CHROMIUM} is missing (run scripts/chromium.sh)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        need(False, "playwright is not installed (.venv/bin/pip install playwright)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def running_stack(directory: Path, *, kill_first: bool = False) -> Iterator[Stack]:
    """Private Redis, daphne serving ``tests.testapp.asgi:application``, two Celery
    workers, on the test database; stopped after (``kill_first``: its processes are
    killed, not asked to exit, when nothing waits on a graceful exit)."""
    from django.db import connection

    need(bool(shutil.which("redis-server")), "needs redis-server on PATH")
    need(connection.vendor == "postgresql", "needs PostgreSQL (set DATABASE_URL=postgres://...)")
    stack = Stack(database_url(connection.settings_dict), directory)
    try:
        stack.start()
    except Exception as exc:  # noqa: BLE001
        need(False, f"the live stack did not start: {exc}\n{stack.logs()}")
    try:
        yield stack
    finally:
        if kill_first:
            for proc in stack.procs:
                proc.kill()
        stack.stop()


@pytest.fixture(scope="session")
def live(django_db_setup: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The live stack (``running_stack``), once per session."""
    with running_stack(tmp_path_factory.mktemp("live")) as stack:
        yield stack


@pytest.fixture
def users(tenants: Any) -> dict[str, dict[str, str]]:
    """``seed_demo``'s users (admin, alice of acme, bob of globex): passwords and tokens."""
    from tests.testapp.seed import seed_users

    return seed_users()


def run_async(coro_factory: Callable[[], Any], timeout: float) -> Any:
    """Run a coroutine from a sync test, bounded by ``timeout`` seconds."""

    async def bounded() -> Any:
        return await asyncio.wait_for(coro_factory(), timeout)

    return asyncio.run(bounded())


async def in_db(fn: Callable[..., T], *args: Any) -> T:
    """Call ``fn`` in a worker thread and close that thread's connection afterwards."""
    from django.db import connections

    def call() -> T:
        try:
            return fn(*args)
        finally:
            connections.close_all()

    return await asyncio.to_thread(call)
