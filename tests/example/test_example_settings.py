"""The example project is secure by default: only the demo runs with DEBUG and a known key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READ = ("import json, example_project.settings as s; "
        "print(json.dumps({'debug': s.DEBUG, 'key': s.SECRET_KEY}))")


def run_with(argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    """``python <argv>`` in the project with ``env`` and none of the demo's own variables."""
    clean = {k: v for k, v in os.environ.items()
             if k not in ("SYMFONIC_DEMO", "SECRET_KEY", "DEBUG", "DJANGO_SETTINGS_MODULE")}
    return subprocess.run([sys.executable, *argv], cwd=ROOT, env={**clean, **env},
                          capture_output=True, text=True, timeout=60)


def settings_with(**env: str) -> subprocess.CompletedProcess[str]:
    return run_with(["-c", READ], **env)


def test_outside_the_demo_it_refuses_to_start_with_its_built_in_key():
    """Outside the demo there is no key at all: the server and the workers refuse to start,
    and commands that sign nothing (``makemigrations``, ``migrate``, ``check``) still run."""
    assert json.loads(settings_with().stdout)["key"] == ""
    server = run_with(["-c", "import example_project.asgi"])
    worker = run_with(["-m", "celery", "-A", "example_project", "worker", "--pool", "solo"])
    for refused in (server, worker):
        assert refused.returncode != 0
        assert "ImproperlyConfigured: Set SECRET_KEY in the environment" in refused.stderr
    checked = run_with(["manage.py", "makemigrations", "--check", "--dry-run"])
    assert checked.returncode == 0, checked.stderr


def test_a_deployment_with_its_own_key_runs_with_debug_off():
    loaded = json.loads(settings_with(SECRET_KEY="k" * 50).stdout)
    assert loaded == {"debug": False, "key": "k" * 50}


def test_the_demo_runs_with_debug_and_a_key_django_flags_as_insecure():
    loaded = json.loads(settings_with(SYMFONIC_DEMO="1").stdout)
    assert loaded["debug"] is True and loaded["key"].startswith("django-insecure-")
    assert json.loads(settings_with(SYMFONIC_DEMO="1", DEBUG="0").stdout)["debug"] is False
