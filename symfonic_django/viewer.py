"""The live-turn viewer: a staff page that follows one run's websocket as it streams.

A project mounts it beside the admin, before ``admin.site.urls`` so the
admin's catch-all does not swallow it::

    from symfonic_django.viewer import viewer_urlpatterns

    path("admin/symfonic/", include(viewer_urlpatterns)),

The page is then ``/admin/symfonic/runs/<run_id>/live/`` (URL name
``symfonic_run_live``); ``viewer_url(run)`` reverses it. It is plain
JavaScript (``static/symfonic_django/viewer.js``, no build step) reading
``/ws/symfonic/runs/<run_id>/`` with the reviewer's session. The scope rule is
the API's: a run of a scope the user may not review is a 404.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import admin
from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, path, reverse

from .models import Pause, Run
from .scopes import reviewer_scope_keys

VIEWER_URL_NAME = "symfonic_run_live"
#: Must match ``routing.websocket_urlpatterns``.
STREAM_PATH = "/ws/symfonic/runs/{run_id}/"
_PLACEHOLDER = uuid.UUID(int=0)


def viewer_url(run: Any) -> str | None:
    """The viewer of ``run`` (a ``Run`` or its id); ``None`` for no run, or if not mounted."""
    if run is None:
        return None
    try:
        return reverse(VIEWER_URL_NAME, kwargs={"run_id": getattr(run, "pk", run)})
    except NoReverseMatch:
        return None


def _admin_url_template(model: str) -> str | None:
    """The admin change URL of ``model`` with ``{id}`` for the object, if the admin has it."""
    try:
        url = reverse(f"admin:symfonic_django_{model}_change", args=[_PLACEHOLDER])
    except NoReverseMatch:
        return None
    return url.replace(str(_PLACEHOLDER), "{id}")


@staff_member_required
def run_live(request: HttpRequest, run_id: uuid.UUID) -> TemplateResponse:
    """The viewer page of one run the user may review (404 otherwise: no existence leak)."""
    run = (Run.objects.in_scopes(reviewer_scope_keys(request.user))
           .select_related("parent", "resumed_from").filter(pk=run_id).first())
    if run is None:
        raise Http404("No such run.")
    continuations = list(Pause.objects.filter(run=run, continuation__isnull=False)
                         .values_list("continuation_id", flat=True).distinct())
    run_admin = _admin_url_template("run")
    context = {
        **admin.site.each_context(request),
        "title": f"Run {str(run.pk)[:8]} live",
        "run": run,
        "run_admin_url": run_admin and run_admin.format(id=run.pk),
        "parent_viewer_url": viewer_url(run.parent_id) if run.parent_id else None,
        "continuations": [(str(c)[:8], viewer_url(c)) for c in continuations],
        "viewer_config": {
            "runId": str(run.pk),
            "streamPath": STREAM_PATH.format(run_id=run.pk),
            "pauseUrl": _admin_url_template("pause"),
            "runUrl": run_admin,
        },
    }
    return TemplateResponse(request, "symfonic_django/viewer.html", context)


viewer_urlpatterns = [
    path("runs/<uuid:run_id>/live/", run_live, name=VIEWER_URL_NAME),
]
