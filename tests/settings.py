"""Test settings: the example project plus the test agents in ``tests.agents``."""

import os as _os

# The suite runs the example as the demo does (its built-in key); so do the worker and
# server processes it starts with these settings.
_os.environ.setdefault("SYMFONIC_DEMO", "1")

from example_project.settings import *  # noqa: E402, F403
from example_project.settings import SYMFONIC  # noqa: E402

SYMFONIC = {
    **SYMFONIC,
    # Off unless asked for: a test database is made and dropped again and again, and a
    # worker process would keep serving a tenant row of a database that is gone.
    "SCOPE_CACHE_SECONDS": float(_os.environ.get("SYMFONIC_SCOPE_CACHE_SECONDS", "0")),
    # One approver unless a test asks for more (tests/test_approvals.py sets the example's
    # four-eyes policy itself): other tests approve refunds of any amount alone.
    "APPROVAL_POLICY": None,
    "AGENTS": {
        **SYMFONIC["AGENTS"],
        "echo": "tests.agents.echo_agent",
        "question": "tests.agents.question_agent",
        "siblings": "tests.agents.siblings_agent",
        "boom": "tests.agents.boom_agent",
        "slow": "tests.agents.slow_agent",
        "asks_then_fails_once": "tests.agents.asks_then_fails_once_agent",
        "forged": "tests.agents.forged_binding_agent",
        "noop": "tests.agents.noop_agent",
        "fenced": "tests.agents.fenced_agent",
        "stream": "tests.agents.stream_agent",
        "where": "tests.agents.where_agent",
        "scope": "tests.agents.scope_agent",
        "proposal": "tests.agents.proposal_agent",
    },
}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# On SQLite the test database is a file, as in a deployment, not Django's shared-cache
# in-memory default: shared-cache connections fail at once with "database table is
# locked" instead of waiting, so threaded tests would test that cache, not the claims.
if DATABASES["default"]["ENGINE"].endswith("sqlite3") and not DATABASES["default"].get(  # noqa: F405
        "TEST", {}).get("NAME"):
    import tempfile as _tempfile

    DATABASES["default"]["TEST"] = {"NAME": _os.path.join(  # noqa: F405
        _tempfile.gettempdir(), f"symfonic-test-{_os.getpid()}.sqlite3")}
