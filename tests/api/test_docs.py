"""The API documents itself: Swagger UI and Redoc served offline, and an
operation description per endpoint in the OpenAPI schema."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.staticfiles import finders
from django.templatetags.static import static
from rest_framework.test import APIClient

from .conftest import API

pytestmark = pytest.mark.django_db

#: Every ``src`` and ``href`` of a page.
LINKED = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']""")


def openapi() -> dict[str, Any]:
    response = APIClient().get(f"{API}schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema: dict[str, Any] = json.loads(response.content)
    return schema


@pytest.mark.parametrize("page, scripts", [
    ("schema/swagger-ui/", {"swagger-ui-dist/swagger-ui-bundle.js",
                            "swagger-ui-dist/swagger-ui-standalone-preset.js",
                            "swagger-ui-dist/swagger-ui.css"}),
    ("schema/redoc/", {"redoc/bundles/redoc.standalone.js"}),
], ids=["swagger-ui", "redoc"])
def test_docs_page_renders_and_loads_only_this_sites_static_files(page, scripts):
    response = APIClient().get(API + page)
    assert response.status_code == 200
    html = response.content.decode()
    linked = LINKED.findall(html)
    # Every asset is one of drf_spectacular_sidecar's static files, served by this site...
    prefix = static("drf_spectacular_sidecar/")
    assert prefix.startswith("/") and linked, linked
    assert all(url.startswith(prefix) for url in linked), linked
    assert {url.removeprefix(prefix) for url in linked} >= scripts
    for url in linked:
        assert finders.find("drf_spectacular_sidecar/" + url.removeprefix(prefix)), url
    # ...and nothing names another origin (no CDN, no web fonts).
    assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/", html), html
    # The page reads this API's schema.
    assert f"{API}schema/" in html


def test_every_operation_has_a_summary_and_a_description_of_its_own():
    operations = {f"{method.upper()} {path}": operation
                  for path, methods in openapi()["paths"].items()
                  for method, operation in methods.items()}
    assert {"GET /api/symfonic/pauses/", "POST /api/symfonic/pauses/{id}/approve/",
            "POST /api/symfonic/resume/", "POST /api/symfonic/runs/"} <= set(operations)
    descriptions = {label: (op.get("description") or "").strip()
                    for label, op in operations.items()}
    assert all(descriptions.values()), [label for label, d in descriptions.items() if not d]
    assert len(set(descriptions.values())) == len(descriptions), descriptions
    ours = {label: op.get("summary") for label, op in operations.items()
            if not label.endswith("/schema/")}
    assert all(ours.values()) and len(set(ours.values())) == len(ours), ours


def test_the_docs_pages_are_not_operations_of_the_schema():
    assert not [path for path in openapi()["paths"]
                if "swagger" in path or "redoc" in path]


@pytest.mark.parametrize("page", ["schema/", "schema/swagger-ui/", "schema/redoc/"])
@pytest.mark.parametrize("query", ["lang=%00", "lang=xx", "lang=" + "a" * 5000, "version=%00",
                                   "format=xml", "lang=%ED%A0%80", "lang=%22%3E%3Cscript%3E"],
                         ids=["nul", "unknown-lang", "long", "version-nul", "unknown-format",
                              "surrogate", "markup"])
def test_a_docs_page_answers_a_hostile_query_without_a_5xx_or_an_injection(page, query):
    response = APIClient().get(f"{API}{page}?{query}")
    assert response.status_code < 500
    assert b'"><script>' not in response.content  # the query is escaped wherever it is echoed
