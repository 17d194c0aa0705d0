"""A reviewer answers in a real browser, a real worker runs the continuation.

daphne serves the example project and a ``celery -A example_project worker``
process consumes Redis, both against this test's PostgreSQL database. Alice
logs in to the admin, sees only acme's pauses, edits a refund's amount and
approves it; the worker resumes the turn and the refund is recorded with the
edited amount; bob gets a 404 for the same page. Screenshots go to
``artifacts/screenshots/``.
"""

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
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from django.db import connection, connections

from example_project.shop.management.commands.seed_demo import seed_pause, seed_users
from example_project.shop.models import Refund, Tenant
from symfonic_django.models import Pause, PauseStatus, Run, RunStatus

from ..conftest import need

pytestmark = [pytest.mark.postgres, pytest.mark.services]

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"
#: Debian's Chromium unless CHROMIUM names another (scripts/chromium.sh).
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
BROKER_DB = 13
STARTUP_SECONDS = 30
CONTINUATION_SECONDS = 60
PASSWORDS = {"alice": "alice-demo-pw", "bob": "bob-demo-pw"}


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
        sys.executable, "-m", "celery", "-A", "example_project", "worker", "--pool", "solo",
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
        "example_project.asgi:application",
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


def wait_for_continuation(pause_id: str, worker: Process) -> Run:
    deadline = time.monotonic() + CONTINUATION_SECONDS
    while True:
        cont = Run.objects.filter(resumed_pauses__pk=pause_id).first()
        if cont is not None and cont.status in (RunStatus.COMPLETED, RunStatus.FAILED):
            return cont
        if worker.popen.poll() is not None or time.monotonic() > deadline:
            status = cont.status if cont else "no continuation"
            pytest.fail(f"continuation not finished ({status}) after {CONTINUATION_SECONDS}s\n"
                        f"{worker.tail()}")
        time.sleep(0.25)


def shoot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"admin-{name}.png"), full_page=True)


def log_in(page: Any, base: str, username: str) -> None:
    page.goto(f"{base}/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORDS[username])
    page.click("input[type=submit]")
    page.wait_for_selector("#user-tools")


def test_reviewer_edits_and_approves_a_refund_and_the_worker_records_it(server, worker):
    from playwright.sync_api import sync_playwright

    seed_users()
    rng = random.Random(1234)
    acme, globex = Tenant.objects.get(slug="acme"), Tenant.objects.get(slug="globex")
    mine = [seed_pause(acme, rng) for _ in range(2)]
    theirs = seed_pause(globex, rng)
    target = Pause.objects.get(pk=mine[0]["id"])
    order_id = target.prompt["action_requests"][0]["args"]["order_id"]
    orders = {p["id"]: Pause.objects.get(pk=p["id"]).prompt["action_requests"][0]["args"]
              ["order_id"] for p in (*mine, theirs)}
    pause_path = f"/admin/symfonic_django/pause/{target.pk}/change/"

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            alice = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
            alice.set_default_timeout(15_000)
            log_in(alice, server, "alice")
            alice.goto(f"{server}/admin/symfonic_django/pause/")
            listing = alice.inner_text("#result_list")
            shoot(alice, "1-alice-pause-list")
            for pause in mine:
                assert orders[pause["id"]] in listing
            assert orders[theirs["id"]] not in listing
            assert "globex" not in listing

            alice.click(f"#result_list a[href='{pause_path}']")
            alice.wait_for_selector("#pause_answer_form")
            assert "Refund" in alice.inner_text(".symfonic-description")
            alice.check("input[name=decision_0][value=edit]")
            # The refund's args_schema gives each argument its own input, shown once
            # "Edit & approve" is chosen.
            amount = alice.locator("input[name='args_0.amount']")
            assert amount.is_visible()
            amount.fill("7.25")
            shoot(alice, "2-alice-edits-the-amount")
            alice.click("input[name=_answer]")
            # The reviewer lands on the live viewer of the resumed turn and watches it finish.
            alice.wait_for_url("**/admin/symfonic/runs/*/live/")
            assert "Your answer was recorded" in alice.inner_text(".messagelist")
            alice.wait_for_function(
                "document.querySelector('#symfonic-transcript').innerText.includes('is done.')")
            assert "7.25" in alice.inner_text("#symfonic-transcript")
            shoot(alice, "3-alice-watches-the-resumed-turn")

            cont = off_the_loop(lambda: wait_for_continuation(str(target.pk), worker))
            assert cont.status == RunStatus.COMPLETED, worker.tail()
            alice.goto(f"{server}{pause_path}")
            decided = alice.inner_text("#decision")
            assert "Edited and approved" in decided and "7.25" in decided
            assert "turn.completed" in alice.inner_text("#continuation-events")
            shoot(alice, "4-alice-sees-the-decision-and-the-completed-turn")

            bob = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
            bob.set_default_timeout(15_000)
            log_in(bob, server, "bob")
            response = bob.goto(f"{server}{pause_path}")
            assert response is not None and response.status == 404
            shoot(bob, "5-bob-gets-404")
        finally:
            browser.close()

    target.refresh_from_db()
    assert target.status == PauseStatus.ANSWERED and target.answered_by.username == "alice"
    refund = Refund.objects.get(run_id=target.continuation_id)
    assert (refund.order_id, refund.amount) == (order_id, Decimal("7.25"))
    assert Refund.objects.count() == 1
