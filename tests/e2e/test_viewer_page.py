"""The live viewer's page, in-process: who may open it and what it hands its script.

The browser test (``test_viewer_browser.py``) watches it stream; these need no
services and run on SQLite as well.
"""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth import get_user_model

from symfonic_django.viewer import viewer_url

from ..conftest import paused_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(users):
    return get_user_model().objects.get(username="alice")


def config_of(response) -> dict:
    script = re.search(r'<script id="symfonic-viewer-config" type="application/json">(.*?)</script>',
                       response.content.decode(), re.S)
    return json.loads(script.group(1))


def test_viewer_url_reverses_the_mounted_page(tenants):
    run, _ = paused_run()
    assert viewer_url(run) == f"/admin/symfonic/runs/{run.pk}/live/"
    assert viewer_url(run.pk) == viewer_url(run)
    assert viewer_url(None) is None


def test_a_reviewer_gets_the_page_with_its_stream_and_answer_links(client, alice):
    run, pause = paused_run()
    client.force_login(alice)
    response = client.get(viewer_url(run))
    assert response.status_code == 200
    assert "admin/base_site.html" in [t.name for t in response.templates]
    config = config_of(response)
    assert {k: v for k, v in config.items() if k != "state"} == {
        "runId": str(run.pk),
        "streamPath": f"/ws/symfonic/runs/{run.pk}/",
        "stateUrl": f"/admin/symfonic/runs/{run.pk}/live/state/",
        "pauseUrl": "/admin/symfonic_django/pause/{id}/change/",
        "runUrl": "/admin/symfonic_django/run/{id}/change/",
        "timeZone": "UTC",
    }
    # Where the run's pauses stood when the page was made: what the state URL answers.
    assert config["state"]["pending"] == 1
    assert [p["id"] for p in config["state"]["pauses"]] == [str(pause.pk)]
    assert b"symfonic_django/viewer.js" in response.content


def test_a_run_of_a_scope_the_reviewer_cannot_see_is_a_404(client, alice):
    run, _ = paused_run(scope="globex")
    client.force_login(alice)
    assert client.get(viewer_url(run)).status_code == 404


def test_an_unknown_run_is_a_404(client, alice):
    client.force_login(alice)
    assert client.get("/admin/symfonic/runs/00000000-0000-0000-0000-000000000009/live/"
                      ).status_code == 404


def test_anonymous_and_non_staff_users_are_sent_to_the_admin_login(client, tenants):
    run, _ = paused_run()
    assert client.get(viewer_url(run))["Location"].startswith("/admin/login/")
    someone = get_user_model().objects.create_user("someone", password="x")
    client.force_login(someone)
    assert client.get(viewer_url(run))["Location"].startswith("/admin/login/")
