"""The example project's tests run under its URLs, agents and scope routes.

The suite's settings (``tests.settings``) install the example's app beside the tests'
own, so its tables are there; each test here switches to the example's ``ROOT_URLCONF``
and ``SYMFONIC``, keeping what the suite changes for every test (one approver, no scope
cache) and the test agents beside the example's.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

# The example's settings as the demo reads them (its built-in key, its site URL).
os.environ.setdefault("SYMFONIC_DEMO", "1")

from example_project import settings as example  # noqa: E402


@pytest.fixture(autouse=True)
def example_project_settings(settings: Any) -> Any:
    settings.ROOT_URLCONF = example.ROOT_URLCONF
    settings.SYMFONIC = {
        **example.SYMFONIC,
        "AGENTS": {**settings.SYMFONIC["AGENTS"], **example.SYMFONIC["AGENTS"]},
        "SCOPE_CACHE_SECONDS": settings.SYMFONIC["SCOPE_CACHE_SECONDS"],
        "APPROVAL_POLICY": None,
    }
    return settings


@pytest.fixture
def tenants(db: Any) -> dict[str, Any]:
    """The example's tenants (the suite's own fixture makes the test app's)."""
    from example_project.shop.models import Tenant

    return {slug: Tenant.objects.get_or_create(slug=slug, defaults={"name": slug.title()})[0]
            for slug in ("acme", "globex")}
