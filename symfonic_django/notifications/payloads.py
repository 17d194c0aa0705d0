"""What a notification says about its pause or its run (``data`` of its payload)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django.urls import NoReverseMatch, reverse
from django.utils.text import Truncator

from .. import hitl
from ..models import Pause, PauseKind, Run
from .settings import NotifySettings

#: How much of a pause's words a notification carries.
SUMMARY_CHARS = 200


def iso(moment: datetime | None) -> str | None:
    """A moment as every payload writes it: UTC, milliseconds, ``Z``."""
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _link(config: NotifySettings, view: str, pk: Any) -> str | None:
    """The absolute URL of an admin page (relative without ``SITE_URL``; check W101)."""
    try:
        path = reverse(view, args=[pk])
    except NoReverseMatch:  # the project does not mount the admin
        return None
    return f"{config.site_url}{path}"


def summary(pause: Pause) -> str:
    """One line: each proposed action's description (or name and arguments), or the question."""
    if pause.kind == PauseKind.APPROVAL and isinstance(pause.prompt, dict):
        parts = []
        for action in pause.prompt.get("action_requests") or []:
            description = action.get("description")
            if isinstance(description, str) and description.strip():
                parts.append(description)
            else:
                args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}"
                                 for k, v in (action.get("args") or {}).items())
                parts.append(f"{action.get('name')}({args})")
        text = "; ".join(parts)
    else:
        text = hitl.question_text(pause.prompt)
    return Truncator(" ".join(text.split())).chars(SUMMARY_CHARS)


def pause_data(pause: Pause, config: NotifySettings) -> dict[str, Any]:
    """What every pause event says about its pause (no token: see ``_with_token``)."""
    return {
        "pause_id": str(pause.pk), "run_id": str(pause.run_id),
        "root_run_id": str(pause.root_run_id), "scope": pause.scope_key, "kind": pause.kind,
        "status": pause.status, "summary": summary(pause),
        "created_at": iso(pause.created_at), "expires_at": iso(pause.expires_at),
        "review_url": _link(config, "admin:symfonic_django_pause_change", pause.pk),
    }


def run_data(run: Run, config: NotifySettings) -> dict[str, Any]:
    """What every run event says about its run (its output is fetched with the API)."""
    return {
        "run_id": str(run.pk), "root_run_id": run.root_run_id, "scope": run.scope_key,
        "agent": run.agent, "status": run.status,
        "review_url": _link(config, "admin:symfonic_django_run_change", run.pk),
    }
