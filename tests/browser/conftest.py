"""The browser tests' shared fixtures and helpers: daphne serving the test app on this
test's database (``server``), a Celery worker (``worker``) and their environment
(``service_env``); one headless Debian chromium per test (``chromium``); the reviewers'
logins and the pauses they review."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import connection, connections
from django.test import Client

from tests.testapp.models import Membership, Tenant
from tests.testapp.seed import seed_pause, seed_users

from ..admin_pages import page
from ..conftest import need

ROOT = Path(__file__).resolve().parents[2]
#: Debian's Chromium unless CHROMIUM names another (scripts/chromium.sh).
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
BROKER_DB = 13
STARTUP_SECONDS = 30
CONTINUATION_SECONDS = 60
PASSWORDS = {"alice": "alice-demo-pw", "bob": "bob-demo-pw", "dora": "dora-test-pw"}
ARTIFACTS = ROOT / "artifacts"
INBOX = "/admin/symfonic_django/pause/inbox/"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def this_database_url() -> str:
    """The URL of the database this test runs in, for the server and worker processes."""
    s = connection.settings_dict
    auth = quote(s["USER"] or "", safe="")
    if s["PASSWORD"]:
        auth += ":" + quote(s["PASSWORD"], safe="")
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


class Process:
    """A subprocess with its output in a log file; ``stop()`` is bounded."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], logs: Path) -> None:
        self.name = name
        self.log_path = logs / f"{name}.log"
        self.log = open(self.log_path, "wb")  # noqa: SIM115 (closed in stop)
        self.popen = subprocess.Popen(args, cwd=ROOT, env=env, stdout=self.log,
                                      stderr=subprocess.STDOUT)

    def tail(self, lines: int = 40) -> str:
        self.log.flush()
        text = self.log_path.read_text(errors="replace").splitlines()
        return f"--- {self.name} log ---\n" + "\n".join(text[-lines:])

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=10)
        self.log.close()


@pytest.fixture
def service_env(transactional_db: Any, redis_url: str) -> dict[str, str]:
    """The environment of the server and worker: this test's database, Redis as broker."""
    need(os.path.exists(CHROMIUM), f"{CHROMIUM} is missing (run scripts/chromium.sh)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        need(False, "playwright is not installed (pip install 'playwright>=1.45')")
    import redis

    broker = redis_url.rsplit("/", 1)[0] + f"/{BROKER_DB}"
    redis.Redis.from_url(broker, socket_connect_timeout=2).flushdb()  # no stale tasks
    env = {key: value for key, value in os.environ.items()
           if key not in ("REDIS_URL", "SQLITE_PATH")}
    env.update(DJANGO_SETTINGS_MODULE="tests.settings", DATABASE_URL=this_database_url(),
               CELERY_BROKER_URL=broker, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    return env


@pytest.fixture
def worker(service_env: dict[str, str], tmp_path: Path) -> Iterator[Process]:
    process = Process("celery", [
        sys.executable, "-m", "celery", "-A", "tests.testapp", "worker", "--pool", "solo",
        "--concurrency", "1", "--loglevel", "INFO", "--without-gossip", "--without-mingle",
        "-n", f"browser-{os.getpid()}@%h",
    ], service_env, tmp_path)
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def server(service_env: dict[str, str], tmp_path: Path) -> Iterator[str]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = Process("daphne", [
        sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
        "tests.testapp.asgi:application",
    ], service_env, tmp_path)
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if process.popen.poll() is not None:
                pytest.fail(f"daphne exited with {process.popen.returncode}\n{process.tail()}")
            try:
                with urllib.request.urlopen(f"{base}/admin/login/", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"daphne did not answer within {STARTUP_SECONDS}s\n{process.tail()}")
            time.sleep(0.2)
        yield base
    finally:
        process.stop()


def off_the_loop(fn: Callable[[], Any]) -> Any:
    """Run ORM code in a plain thread: Playwright's sync API keeps an event loop in this one."""
    def call() -> Any:
        try:
            return fn()
        finally:
            connections.close_all()

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(call).result(timeout=CONTINUATION_SECONDS + 10)


def log_in(page: Any, base: str, username: str) -> None:
    page.goto(f"{base}/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORDS[username])
    page.click("input[type=submit]")
    page.wait_for_selector("#user-tools")


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


def second_acme_reviewer() -> None:
    """dora: like alice, a staff member of acme who may view and answer its pauses."""
    dora = get_user_model().objects.create_user("dora", password=PASSWORDS["dora"],
                                                is_staff=True, email="dora@example.com")
    dora.user_permissions.add(*Permission.objects.filter(
        content_type__app_label="symfonic_django",
        codename__in=["view_pause", "view_run", "view_decision", "answer_pause"]))
    Membership.objects.create(user=dora, tenant=Tenant.objects.get(slug="acme"))


def signed_in(browser: Any, server: str, username: str) -> Any:
    page = browser.new_context(viewport={"width": 1366, "height": 900},
                               timezone_id="UTC").new_page()
    page.set_default_timeout(15_000)
    page.goto(f"{server}/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORDS[username])
    page.click("input[type=submit]")
    page.wait_for_selector("#user-tools")
    return page


def shoot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def seed(amounts: list[float]) -> list[dict[str, str]]:
    seed_users()
    rng = random.Random(13)
    acme, globex = Tenant.objects.get(slug="acme"), Tenant.objects.get(slug="globex")
    seed_pause(globex, rng, amount=12.5)  # not alice's: never shown to her
    return [seed_pause(acme, rng, amount=amount) for amount in amounts]


@contextmanager
def review_tab(live_server_url: str, pause: Any, username: str = "alice") -> Iterator[Any]:
    """The review page of ``pause`` in Chromium, as ``username`` (a session made here, its
    cookie handed to the browser), for tests on Django's ``live_server``. Playwright's sync
    API runs an event loop in this thread: no database call inside the block."""
    from playwright.sync_api import sync_playwright

    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    session = client.cookies["sessionid"].value
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                     headless=True)
        try:
            context = browser.new_context(viewport={"width": 1100, "height": 900})
            context.add_cookies([{"name": "sessionid", "value": session,
                                  "url": live_server_url}])
            tab = context.new_page()
            tab.goto(live_server_url + page(pause))
            yield tab
        finally:
            browser.close()
