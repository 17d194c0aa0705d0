"""A reviewer's browser on the README's project: styled admin, an answer, the live viewer, Swagger UI.

Run by ``scripts/install_check.sh`` under daphne and again under uvicorn, with a Python that
has Playwright (the project's dev environment, not the newcomer's virtualenv: the browser is
the test's, not the project's), against a pending pause that ``drive.py pause`` made. In
headless Debian Chromium (never ``playwright install``), as the README's reviewer:

1. logs in to the admin and opens the pause's review page: it must be styled (a custom
   property and the header colour that only the admin's ``base.css`` gives, every style
   sheet loaded with rules), no static file of the page may fail, and the static files are
   WhiteNoise's: hashed names (``CompressedManifestStaticFilesStorage``) served with a
   far-future ``immutable`` cache header. Screenshot ``review-page.png``.
2. approves the pause there; the admin leads to the live viewer of the continuation, whose
   connection leaves "connecting…" and whose events arrive while the turn still runs.
   Screenshot ``viewer-mid-stream.png`` (the status read "running" before and after it is
   taken); then the turn completes on the page.
3. opens Swagger UI (``/api/symfonic/schema/swagger-ui/``), whose operations list renders
   from the sidecar's static files. Screenshot ``swagger-ui.png``.

    python browse.py --chromium /usr/bin/chromium --base http://127.0.0.1:PORT \\
        --user reviewer --password PW --pause PAUSE_ID --shots DIR
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, sync_playwright

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
STATIC_URL = "/static/"
#: A file name as ManifestStaticFilesStorage writes it: name.<12 hex digits>.ext
HASHED = re.compile(r"\.[0-9a-f]{12}\.(css|js)$")
#: Only the admin's base.css defines these; without it they are empty and the bars clear.
#: (The breadcrumbs bar is also the first thing a change of the admin's markup leaves bare.)
STYLED = """() => {
  const background = (selector) => {
    const node = document.querySelector(selector);
    return node ? getComputedStyle(node).backgroundColor : null;
  };
  return {
    primary: getComputedStyle(document.documentElement).getPropertyValue('--primary').trim(),
    headerBackground: background('#header'),
    breadcrumbsBackground: background('.breadcrumbs'),
    sheets: Array.from(document.styleSheets).filter(s => s.href).map(s => {
      let rules = -1;
      try { rules = s.cssRules.length; } catch (e) { /* not readable */ }
      return {href: s.href, rules: rules};
    }),
  };
}"""
TIMEOUT_MS = 30_000


class Failed(Exception):
    pass


@dataclass
class Traffic:
    """What one page asked the server for, and how it was answered."""

    responses: list[tuple[str, int, dict[str, str]]] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def watch(self, page: Page) -> None:
        page.on("response", lambda r: self.responses.append((r.url, r.status, r.headers)))
        page.on("requestfailed", lambda r: self.failures.append(f"{r.url} ({r.failure})"))

    def reset(self) -> None:
        self.responses.clear()
        self.failures.clear()

    def static(self) -> list[tuple[str, int, dict[str, str]]]:
        return [r for r in self.responses if STATIC_URL in r[0]]

    def check_static(self, what: str, *, needs: tuple[str, ...]) -> None:
        """Every static file of the page answered 200 (or 304); each of ``needs`` among them."""
        static = self.static()
        bad = [f"{url} {status}" for url, status, _ in static if status not in (200, 304)]
        failed = [f for f in self.failures if STATIC_URL in f]
        if bad or failed:
            raise Failed(f"{what}: static files missing: {bad + failed}")
        urls = [url for url, _, _ in static]
        missing = [name for name in needs if not any(name in url for url in urls)]
        if missing:
            raise Failed(f"{what}: the page did not load {missing}; it loaded {urls}")
        print(f"  ok: {what}: {len(static)} static files, every one 200")


def shoot(page: Page, shots: Path, name: str, *, full_page: bool = True) -> None:
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / name), full_page=full_page)
    print(f"  screenshot {shots / name}")


def log_in(page: Page, base: str, user: str, password: str) -> None:
    page.goto(f"{base}/admin/login/?next=/admin/")
    page.fill("#id_username", user)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_selector("#user-tools")


CLEAR = (None, "rgba(0, 0, 0, 0)", "transparent")


def check_styled(page: Page, traffic: Traffic) -> None:
    styled: dict[str, Any] = page.evaluate(STYLED)
    if not styled["primary"]:
        raise Failed("the review page is unstyled: --primary (admin/css/base.css) is not set")
    for bar in ("header", "breadcrumbs"):
        if styled[f"{bar}Background"] in CLEAR:
            raise Failed(f"the review page is unstyled: the {bar} bar's background is "
                         f"{styled[f'{bar}Background']}")
    empty = [s["href"] for s in styled["sheets"] if s["rules"] <= 0]
    if empty:
        raise Failed(f"the review page's style sheets did not load: {empty}")
    hrefs = [s["href"] for s in styled["sheets"]]
    base_css = [h for h in hrefs if "/admin/css/base." in h]
    if not base_css or not HASHED.search(base_css[0]):
        raise Failed(f"admin/css/base.css is not served under its hashed name: {hrefs}")
    traffic.check_static("the review page",
                         needs=("admin/css/base.", "symfonic_django/admin.", "symfonic_django/review."))
    cache = dict((url, headers) for url, _, headers in traffic.static())[base_css[0]]
    if "immutable" not in cache.get("cache-control", ""):
        raise Failed(f"{base_css[0]} is not served as WhiteNoise serves a hashed file: "
                     f"Cache-Control {cache.get('cache-control')!r}")
    print(f"  ok: the review page is styled: --primary {styled['primary']}, header "
          f"{styled['headerBackground']}, breadcrumbs {styled['breadcrumbsBackground']}, "
          f"{len(hrefs)} style sheets with rules; "
          f"{base_css[0].rsplit('/', 1)[-1]} with Cache-Control {cache['cache-control']!r}")


def review_and_approve(page: Page, traffic: Traffic, base: str, pause: str, shots: Path) -> None:
    traffic.reset()
    page.goto(f"{base}/admin/symfonic_django/pause/{pause}/change/")
    page.wait_for_selector("#pause_answer_form")
    page.wait_for_load_state("networkidle")
    check_styled(page, traffic)
    shoot(page, shots, "review-page.png")

    page.check("input[name=decision_0][value=approve]")
    traffic.reset()
    page.click("input[name=_answer]")
    page.wait_for_url("**/admin/symfonic/runs/*/live/")
    print(f"  ok: approved in the admin; the live viewer of the continuation: {page.url}")


def watch_the_viewer(page: Page, traffic: Traffic, shots: Path) -> None:
    # The connection leaves "connecting…" once the websocket is open ("live").
    page.wait_for_function(
        "document.querySelector('#symfonic-connection').textContent.trim() !== 'connecting…'")
    connection = page.inner_text("#symfonic-connection").strip()
    if connection.startswith(("refused", "connection lost")):
        raise Failed(f"the viewer's websocket: {connection}")
    # Events arrive while the turn still runs: the status is "running" and the reply has begun
    # (the README's agent takes 3 s over it), unless the page came too late to see it run.
    page.wait_for_function(
        "document.querySelector('#symfonic-transcript .symfonic-message-text') !== null"
        " || document.querySelector('#symfonic-status').classList.contains("
        "'symfonic-status-completed')")
    if "symfonic-status-running" not in (page.get_attribute("#symfonic-status", "class") or ""):
        raise Failed("the viewer showed the turn only once it had ended: no mid-stream to see "
                     "(the page loaded more than the agent's 3 s after the answer)")
    events = int(page.inner_text("#symfonic-log-count"))
    text = page.inner_text("#symfonic-transcript").strip()
    shoot(page, shots, "viewer-mid-stream.png", full_page=False)
    still = page.get_attribute("#symfonic-status", "class") or ""
    if "symfonic-status-running" not in still:
        raise Failed("the turn ended while the mid-stream screenshot was taken; it shows the end")
    print(f"  ok: the viewer is {connection!r}; mid-stream: {events} events, the reply so far "
          f"{text.splitlines()[-1]!r}")
    traffic.check_static("the viewer", needs=("symfonic_django/viewer.", "admin/css/base."))
    breadcrumbs = page.evaluate(STYLED)["breadcrumbsBackground"]
    if breadcrumbs in CLEAR:
        raise Failed(f"the viewer is unstyled: the breadcrumbs bar's background is {breadcrumbs}")

    page.wait_for_function(
        "document.querySelector('#symfonic-status').classList.contains('symfonic-status-completed')",
        timeout=60_000)
    page.wait_for_selector("#symfonic-outcome:not([hidden])")
    transcript = page.inner_text("#symfonic-transcript")
    if "The refund is recorded." not in " ".join(transcript.split()):
        raise Failed(f"the viewer's transcript lacks the streamed reply: {transcript!r}")
    print(f"  ok: the continuation completed on the page ({page.inner_text('#symfonic-log-count')}"
          f" events; outcome {' '.join(page.inner_text('#symfonic-outcome').split())!r})")


def swagger(page: Page, traffic: Traffic, base: str, shots: Path) -> None:
    traffic.reset()
    page.goto(f"{base}/api/symfonic/schema/swagger-ui/")
    page.wait_for_selector(".opblock", timeout=TIMEOUT_MS)
    page.wait_for_load_state("networkidle")
    operations = page.locator(".opblock").count()
    if operations < 5:
        raise Failed(f"Swagger UI lists {operations} operations")
    traffic.check_static("Swagger UI", needs=("drf_spectacular_sidecar/swagger-ui-dist/",))
    shoot(page, shots, "swagger-ui.png", full_page=False)
    print(f"  ok: Swagger UI lists {operations} operations")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("chromium", "base", "user", "password", "pause", "shots"):
        parser.add_argument(f"--{name}", required=True)
    args = parser.parse_args()
    base, shots = args.base.rstrip("/"), Path(args.shots)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS,
                                     headless=True)
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 860}).new_page()
            page.set_default_timeout(TIMEOUT_MS)
            traffic = Traffic()
            traffic.watch(page)
            log_in(page, base, args.user, args.password)
            review_and_approve(page, traffic, base, args.pause, shots)
            watch_the_viewer(page, traffic, shots)
            swagger(page, traffic, base, shots)
        except (Failed, PlaywrightError) as failure:  # a timeout is a PlaywrightError
            print(f"  FAILED: {failure}")
            shoot(page, shots, "failure.png")
            return 1
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
