"""The admin pause list at 1,000,000 pauses, beside a stock ModelAdmin and the bare queryset.

One command: ``.venv/bin/python bench/bench_pause_list.py`` (PostgreSQL on
127.0.0.1:5432 as ``postgres``, as ``make services`` starts it).

It creates the database ``bench_h2`` (dropped first if a crashed run left it,
dropped again at the end), migrates it, seeds ``seed_demo``'s users (``admin``
sees every scope; ``alice`` reviews one, ``acme``) and 50 tenants, and loads
pauses with ``INSERT ... SELECT ... FROM generate_series``: one refund-like
paused run each, spread evenly over the 50 scopes and 30 days (30% pending,
60% answered, 10% expired; one in five a question). It measures at 1,000
pauses, loads 999,000 more, and measures again at 1,000,000. Each page is
fetched as the superuser and as the reviewer of one scope, through Django's
test ``Client`` in-process, ``DEBUG`` off:

* **the app's admin pause list**, ``/admin/symfonic_django/pause/``;
* **a stock admin** of the same model on its own ``AdminSite``
  (``/stock-admin/``): the same columns (the model's fields, the run's
  agent and the answerer), filters (status, kind, scope), search and order,
  the same bulk actions (so the same row checkboxes), narrowed to the
  reviewer's scopes by ``get_queryset`` as the app's is, and
  ``list_select_related`` for the two joins its columns need, so it makes no
  query per row. Everything else is Django's default: it counts every
  matching row, then every row again for "(n total)", and its scope filter
  lists the distinct scopes of the whole table;
* **the bare queryset view**: the same page (same scope filter, order, limit
  and columns) as one queryset dumped with ``json.dumps``, served by a bare
  Django view through the same client, middleware, session and scope lookup;
  the bare queryset alone, with no request, is shown too, for reference;
* the API's ``GET /api/symfonic/pauses/`` (page of 50) against its own bare
  view, as before;
* **the reviewer's inbox**, ``/admin/symfonic_django/pause/inbox/`` (pending
  pauses oldest first, 50 cards, a bounded count per status), against the
  app's admin pause list above, in the same run.

Goals, printed PASS or FAIL: each page makes as many queries at 1,000,000
pauses as at 1,000. At 1,000,000, the superuser's admin list (all of them)
takes at most 0.5x the stock admin's time, each API page at most 3x its
bare view's, and each inbox at most 1.5x the app's own pause list's. The reviewer's admin list holds one scope's 20,000, which the
stock admin counts cheaply, so that both pages are mostly Django rendering
the same 100 rows: its ratio is reported, not judged. Times are medians of
rounds whose order rotates (this machine is noisy: the ratios, measured in
the same run, are what count). Exits 0 either way; 1 only if the benchmark
itself could not run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "bench_h2"
PG = ["-h", "127.0.0.1", "-p", "5432", "-U", "postgres"]
DATABASE_URL = f"postgres://postgres@127.0.0.1:5432/{DB_NAME}"
SCOPES = 50
SIZES = (1_000, 1_000_000)
#: ``--quick``: the same pages at sizes that load in seconds.
QUICK_SIZES = (100, 1_000)
STOCK_GOAL = 0.5
API_GOAL = 3.0
INBOX_GOAL = 1.5
ADMIN_PAGE = "/admin/symfonic_django/pause/"
INBOX_PAGE = "/admin/symfonic_django/pause/inbox/"
STOCK_PAGE = "/stock-admin/symfonic_django/pause/"
API_PAGE = "/api/symfonic/pauses/"
ADMIN_BARE = "/bench/admin-page/"
API_BARE = "/bench/api-page/"

ENV = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "DATABASE_URL": DATABASE_URL,
       "CELERY_BROKER_URL": "memory://", "DEBUG": "0", "PYTHONPATH": str(ROOT)}
ENV.pop("REDIS_URL", None)
os.environ.update(ENV)
os.environ.pop("REDIS_URL", None)
sys.path.insert(0, str(ROOT))

from bench import scale_data  # noqa: E402


def pg(command: str, *args: str) -> None:
    subprocess.run([command, *PG, *args], check=True, env=ENV, stdout=subprocess.DEVNULL)


# --- loading -------------------------------------------------------------------------

# Row ``g`` of the series: its scope, age, status and kind, derived from ``g`` alone
# (the same rows on every run), each pause on its own paused run. The ids grow with
# ``g``, so that the primary-key indexes are appended to rather than rewritten at random.
SERIES = """
    SELECT g,
           ('a' || lpad(to_hex(g), 31, '0'))::uuid AS run_id,
           ('b' || lpad(to_hex(g), 31, '0'))::uuid AS pause_id,
           scopes[1 + g %% %(scope_count)s] AS scope,
           upper(scopes[1 + g %% %(scope_count)s]) || '-' || (1000 + g * 31 %% 99000) AS order_id,
           (ARRAY[12.5, 40, 99.99, 250])[1 + g %% 4] AS amount,
           now() - make_interval(secs => g::bigint * 7919 %% 2592000000 / 1000.0) AS created,
           CASE WHEN g %% 10 < 3 THEN 'pending' WHEN g %% 10 < 9 THEN 'answered'
                ELSE 'expired' END AS status,
           g %% 5 = 0 AS question,
           answerers[1 + g %% array_length(answerers, 1)] AS answerer
    FROM generate_series(%(first)s, %(last)s) AS g,
         (SELECT %(scopes)s::text[] AS scopes, %(answerers)s::int[] AS answerers) AS given
"""

RUN_COLUMNS = {
    "id": "run_id", "root_id": "run_id", "agent": "'refund'", "scope_key": "scope",
    "status": "'paused'", "attempts": "1",
    "input": "jsonb_build_object('order_id', order_id, 'amount', amount)",
    "created_at": "created", "started_at": "created", "finished_at": "created",
    "updated_at": "created",
}

PAUSE_COLUMNS = {
    "id": "pause_id", "run_id": "run_id", "root_run_id": "run_id", "scope_key": "scope",
    "kind": "CASE WHEN question THEN 'question' ELSE 'approval' END",
    "prompt": scale_data.prompt_sql("question"),  # the scale benchmark's prompts
    "answer_schema": """CASE WHEN question THEN '{"type": "string"}'::jsonb END""",
    "idempotency_key": "'refund'", "bound_run_id": "run_id::text",
    "bound_root_run_id": "run_id::text", "status": "status",
    "expires_at": "created + interval '1 day'",
    "answer": """CASE WHEN status <> 'answered' THEN NULL WHEN question THEN '"ups"'::jsonb
                 ELSE '{"decisions": [{"type": "approve"}]}'::jsonb END""",
    "answered_by_id": "CASE WHEN status = 'answered' THEN answerer END",
    "answered_via": """CASE status WHEN 'answered' THEN 'api' WHEN 'expired' THEN 'system'
                       ELSE '' END""",
    "answered_at": "CASE WHEN status <> 'pending' THEN created + interval '5 minutes' END",
    "created_at": "created", "updated_at": "created",
}


def load_pauses(first: int, last: int, scopes: list[str], answerers: list[int]) -> None:
    """Pauses ``first``..``last`` of the series (and their runs), then VACUUM ANALYZE."""
    from django.db import connection, transaction

    from symfonic_django.models import Pause, Run
    from tests.testapp.agents import REFUND_ARGS_SCHEMA

    params = {"first": first, "last": last, "scopes": scopes, "scope_count": len(scopes),
              "answerers": answerers, "args_schema": json.dumps(REFUND_ARGS_SCHEMA)}
    with transaction.atomic():
        with connection.cursor() as cursor:
            # No foreign-key triggers for this load (its rows refer only to rows it
            # writes, or to existing users): checking 3,000,000 references at commit
            # would be a third of the load.
            cursor.execute("SET LOCAL session_replication_role = replica")
        for model, columns in ((Run, RUN_COLUMNS), (Pause, PAUSE_COLUMNS)):
            scale_data.insert_select(connection, model, columns, f"({SERIES}) AS series", params)
    # The tables as autovacuum leaves them after a bulk load (since PostgreSQL 13 it
    # vacuums insert-only tables too): statistics, and the visibility map an index-only
    # scan needs. Right after the INSERT there is neither.
    with connection.cursor() as cursor:
        cursor.execute("VACUUM (ANALYZE)")


# --- the pages under test and their comparisons ---------------------------------------

ADMIN_COLUMNS = ("id", "status", "kind", "prompt", "run__agent", "scope_key", "created_at",
                 "expires_at", "answered_by__username", "answered_via")
API_COLUMNS = ("id", "kind", "status", "prompt", "answer_schema", "run_id", "root_run_id",
               "session_id", "thread_id", "created_at", "expires_at", "answered_at",
               "answered_by__username", "answer", "continuation_id")


def stock_admin_site() -> Any:
    """An ``AdminSite`` with a stock ``ModelAdmin`` of ``Pause`` (see the module's docstring)."""
    from django.contrib import admin

    from symfonic_django.admin import PauseAdmin
    from symfonic_django.models import Pause
    from symfonic_django.scopes import reviewer_scope_keys

    app_admin = admin.site.get_model_admin(Pause)

    # The app's two bulk actions, so that each row has the same checkbox.
    @admin.action(description="Approve selected pauses", permissions=["answer"])
    def approve_selected(model_admin: Any, request: Any, queryset: Any) -> None:
        app_admin.approve_selected(request, queryset)

    @admin.action(description="Reject selected pauses", permissions=["answer"])
    def reject_selected(model_admin: Any, request: Any, queryset: Any) -> None:
        app_admin.reject_selected(request, queryset)

    class StockPauseAdmin(admin.ModelAdmin):
        # Django's own page: the app's template (found first by its path, on any site)
        # links to the app's inbox, which this site does not have.
        change_list_template = "admin/change_list.html"
        list_display = ("status", "kind", "prompt", "run__agent", "scope_key", "created_at",
                        "expires_at", "answered_by", "answered_via")
        list_filter = ("status", "kind", "scope_key")
        search_fields = PauseAdmin.search_fields
        ordering = ("-created_at",)
        list_select_related = ("run", "answered_by")
        actions = [approve_selected, reject_selected]

        def has_answer_permission(self, request: Any) -> bool:
            return app_admin.has_answer_permission(request)

        def get_queryset(self, request: Any) -> Any:
            return super().get_queryset(request).in_scopes(reviewer_scope_keys(request.user))

    site = admin.AdminSite(name="stock")
    site.register(Pause, StockPauseAdmin)
    return site


def admin_rows(keys: Any) -> str:
    """The admin's page (same rows, order and columns) as a bare queryset dumped to JSON."""
    from django.contrib import admin

    from symfonic_django.models import Pause

    per_page = admin.site.get_model_admin(Pause).list_per_page
    rows = (Pause.objects.in_scopes(keys).order_by("-created_at", "-pk")
            .values(*ADMIN_COLUMNS)[:per_page])
    return json.dumps(list(rows), default=str)


def api_rows(keys: Any) -> str:
    """The API's page as a bare queryset dumped to JSON."""
    from symfonic_django.models import Pause

    rows = list(Pause.objects.in_scopes(keys).order_by("-created_at")
                .values(*API_COLUMNS)[:51])
    return json.dumps({"next": None, "previous": None, "results": rows[:50]}, default=str)


def bench_urls() -> None:
    """The example project's URLs, the stock admin and the bare views, as the URLconf."""
    import types

    from django.conf import settings
    from django.http import HttpRequest, HttpResponse, HttpResponseForbidden
    from django.urls import clear_url_caches, path
    from rest_framework.authtoken.models import Token

    from symfonic_django.scopes import reviewer_scope_keys
    from tests.testapp import urls

    def admin_bare(request: HttpRequest) -> HttpResponse:
        if not request.user.is_authenticated:
            return HttpResponseForbidden()
        return HttpResponse(admin_rows(reviewer_scope_keys(request.user)),
                            content_type="application/json")

    def api_bare(request: HttpRequest) -> HttpResponse:
        key = request.headers.get("Authorization", "").removeprefix("Token ")
        token = Token.objects.select_related("user").filter(key=key).first()
        if token is None:
            return HttpResponseForbidden()
        return HttpResponse(api_rows(reviewer_scope_keys(token.user)),
                            content_type="application/json")

    module = types.ModuleType("bench_pause_list_urls")
    module.urlpatterns = [  # type: ignore[attr-defined]
        path(ADMIN_BARE.lstrip("/"), admin_bare),
        path(API_BARE.lstrip("/"), api_bare),
        path(STOCK_PAGE.split("/")[1] + "/", stock_admin_site().urls),
        *urls.urlpatterns,
    ]
    sys.modules[module.__name__] = module
    settings.ROOT_URLCONF = module.__name__
    clear_url_caches()


def page_of(client: Any, path: str, **headers: Any) -> Callable[[], Any]:
    def get() -> Any:
        response = client.get(path, **headers)
        if response.status_code != 200:
            raise RuntimeError(f"GET {path} answered {response.status_code}: "
                               f"{response.content[:300]!r}")
        return response

    return get


def count_queries(fn: Callable[[], Any]) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        fn()
    return len(captured.captured_queries)


def medians(sides: list[Callable[[], Any]], rounds: int) -> list[float]:
    """Median seconds of each side, in an order that rotates so drift hits all alike."""
    for fn in sides:
        fn()
    times: list[list[float]] = [[] for _ in sides]
    for i in range(rounds):
        for k in range(len(sides)):
            side = (i + k) % len(sides)
            started = time.perf_counter()
            sides[side]()
            times[side].append(time.perf_counter() - started)
    return [statistics.median(t) for t in times]


@dataclass
class Page:
    """A page under test, what it is compared with, and the most it may take of that."""

    name: str
    subject: Callable[[], Any]
    compared_name: str
    compared: Callable[[], Any]
    goal: float | None  # None: the ratio is reported, not judged
    view: Callable[[], Any]  # the bare queryset view
    bare: Callable[[], Any]  # the bare queryset, no request

    def measure(self, size: int, rounds: int) -> dict[str, Any]:
        sides = {"ours": self.subject, "compared": self.compared, "view": self.view,
                 "bare": self.bare}
        if self.compared is self.view:
            del sides["compared"]
        ms = {side: seconds * 1000 for side, seconds in
              zip(sides, medians(list(sides.values()), rounds), strict=True)}
        ms.setdefault("compared", ms["view"])
        result = {"page": self.name, "size": size, "goal": self.goal,
                  "compared_name": self.compared_name,
                  "queries": count_queries(self.subject),
                  "compared_queries": count_queries(self.compared), "ms": ms,
                  "ratio": ms["ours"] / ms["compared"], "view_ratio": ms["ours"] / ms["view"]}
        print(f"  {size:>9,} pauses  {self.name:<32} {result['queries']:>2} queries "
              f"{ms['ours']:6.1f} ms | {self.compared_name} {result['compared_queries']:>2} "
              f"queries {ms['compared']:6.1f} ms x{result['ratio']:.2f} | bare view "
              f"{ms['view']:.1f} ms x{result['view_ratio']:.2f} | bare queryset "
              f"{ms['bare']:.1f} ms", flush=True)
        return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21, help="timed rounds per page")
    parser.add_argument("--only", default="",
                        help="measure only the pages whose name contains this (e.g. inbox)")
    parser.add_argument("--keep", action="store_true",
                        help=f"keep the database {DB_NAME} at the end (to look at it)")
    parser.add_argument("--quick", action="store_true",
                        help=f"sizes {QUICK_SIZES} and one round: proves the benchmark runs to "
                             "its end (make test runs it); its figures mean nothing")
    args = parser.parse_args()
    sizes = QUICK_SIZES if args.quick else SIZES
    rounds = 1 if args.quick else args.rounds
    started = time.monotonic()

    pg("dropdb", "--if-exists", "--force", DB_NAME)
    pg("createdb", DB_NAME)
    try:
        results = run(rounds, args.only, sizes)
    finally:
        from django.db import connections

        connections.close_all()
        if not args.keep:
            pg("dropdb", "--if-exists", "--force", DB_NAME)
    report(results, time.monotonic() - started, sizes)
    return 0


def run(rounds: int, only: str = "", sizes: tuple[int, ...] = SIZES) -> list[dict[str, Any]]:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    from symfonic_django.scopes import reviewer_scope_keys
    from tests.testapp.models import Tenant
    from tests.testapp.seed import seed_users

    call_command("migrate", verbosity=0, interactive=False)
    tokens = seed_users()
    Tenant.objects.bulk_create([Tenant(slug=f"tenant-{i:02d}", name=f"Tenant {i:02d}")
                                for i in range(3, SCOPES + 1)])
    scopes = list(Tenant.objects.order_by("pk").values_list("slug", flat=True))
    assert len(scopes) == SCOPES and "acme" in scopes
    users = {u.username: u for u in get_user_model().objects.all()}
    answerers = [users[name].pk for name in ("admin", "alice", "bob")]

    bench_urls()
    pages = []
    for who in ("admin", "alice"):
        label = "superuser" if who == "admin" else "reviewer of 1 scope"
        client = Client()
        client.force_login(users[who])
        keys = reviewer_scope_keys(users[who])
        token = {"HTTP_AUTHORIZATION": f"Token {tokens[who]['token']}"}
        admin_view = page_of(client, ADMIN_BARE)
        # The stock admin's cost is its counts and its scope list over the rows the
        # user sees: 1,000,000 for the superuser, a fiftieth of them for the reviewer.
        # There both pages are mostly Django rendering the same 100 rows: reported.
        pages.append(Page(f"admin list, {label}", page_of(client, ADMIN_PAGE), "stock admin",
                          page_of(client, STOCK_PAGE), STOCK_GOAL if who == "admin" else None,
                          admin_view, lambda keys=keys: admin_rows(keys)))
        api_view = page_of(Client(), API_BARE, **token)
        pages.append(Page(f"API pauses/, {label}", page_of(Client(), API_PAGE, **token),
                          "bare view", api_view, API_GOAL, api_view,
                          lambda keys=keys: api_rows(keys)))
        # The inbox against the app's own list, both as this user, in the same rounds.
        pages.append(Page(f"inbox, {label}", page_of(client, INBOX_PAGE), "app's pause list",
                          page_of(client, ADMIN_PAGE), INBOX_GOAL, admin_view,
                          lambda keys=keys: admin_rows(keys)))
    pages = [page for page in pages if only in page.name]

    results: list[dict[str, Any]] = []
    loaded = 0
    for size in sizes:
        t0 = time.monotonic()
        load_pauses(loaded + 1, size, scopes, answerers)
        loaded = size
        print(f"loaded {size:,} pauses over {SCOPES} scopes in {time.monotonic() - t0:.1f}s",
              flush=True)
        results += [page.measure(size, rounds) for page in pages]
    return results


def report(results: list[dict[str, Any]], elapsed: float, sizes: tuple[int, ...]) -> None:
    small = {r["page"]: r for r in results if r["size"] == sizes[0]}
    large = {r["page"]: r for r in results if r["size"] == sizes[-1]}
    at = f"@{sizes[-1]:,}"
    print()
    print(f"| page | queries @{sizes[0]:,} | queries {at} | ms @{sizes[0]:,} | ms {at} "
          f"| compared with | its queries {at} | its ms {at} | ratio {at} (goal) "
          f"| bare view ms {at} (ratio) | bare queryset ms {at} | verdict |")
    print("|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|")
    ok = True
    for page, big in large.items():
        little, goal = small[page], big["goal"]
        constant = little["queries"] == big["queries"]
        within = goal is None or big["ratio"] <= goal
        ok = ok and constant and within
        verdict = "ok" if constant and within else ", ".join(
            ([] if constant else ["queries grow"]) + ([] if within else [f"over {goal:g}x"]))
        print(f"| {page} | {little['queries']} | {big['queries']} | {little['ms']['ours']:.1f} "
              f"| {big['ms']['ours']:.1f} | {big['compared_name']} | {big['compared_queries']} "
              f"| {big['ms']['compared']:.1f} "
              f"| {big['ratio']:.2f}x ({'reported' if goal is None else f'<= {goal:g}x'}) "
              f"| {big['ms']['view']:.1f} ({big['view_ratio']:.2f}x) | {big['ms']['bare']:.1f} "
              f"| {verdict} |")
    print()
    print(f"Goals: every page makes as many queries at {sizes[-1]:,} pauses as at "
          f"{sizes[0]:,}. At {sizes[-1]:,}, the superuser's admin list (all of them) takes "
          f"<= {STOCK_GOAL:g}x the stock admin's time; the reviewer's (one scope's "
          f"{sizes[-1] // SCOPES:,}, which the stock admin counts cheaply) is reported. Each "
          f"API page takes <= {API_GOAL:g}x its bare view, each inbox <= {INBOX_GOAL:g}x the "
          f"app's pause list as the same user. Bare view: the same rows as one "
          f"queryset dumped to JSON by a bare Django view through the same client; bare "
          f"queryset: that queryset alone, no request. Total {elapsed:.0f}s.")
    print("PASS" if ok else "FAIL")


if __name__ == "__main__":
    sys.exit(main())
