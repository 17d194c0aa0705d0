"""The live-turn viewer: a staff page that follows one run's websocket as it streams.

A project mounts it beside the admin, before ``admin.site.urls`` so the
admin's catch-all does not swallow it::

    from symfonic_django.viewer import viewer_urlpatterns

    path("admin/symfonic/", include(viewer_urlpatterns)),

The page is then ``/admin/symfonic/runs/<run_id>/live/`` (URL name
``symfonic_run_live``); ``viewer_url(run)`` reverses it. It is plain
JavaScript (``static/symfonic_django/viewer.js``, no build step) reading
``/ws/symfonic/runs/<run_id>/`` with the reviewer's session. The read rule is
the API's (``scopes.may_read_run``): the view permission for runs in the run's
scope, or being the run's starter; any other run is a 404. Who answered a
pause is named only to a user who may read the scope's pauses.

Its words are translated: the page loads Django's JavaScript catalog of this
app, mounted here as ``jsi18n/`` (URL name ``symfonic_jsi18n``), before
``viewer.js``, which calls ``gettext`` / ``ngettext`` / ``interpolate``. The
review page loads the same catalog for ``review.js`` when it is mounted.

Beside it, ``runs/<run_id>/live/state/`` (URL name ``symfonic_run_live_state``)
says where a paused run stands: each of its pauses, and the continuation
once the last one is resolved. The socket closes after ``turn.paused``
(docs/design.md section 6), so the page asks this after that event, at a short
interval, until the pauses are resolved, and then opens the continuation's
stream. Whichever surface answered (admin, API, token, expiry), the answer is
in the pause row, so the page learns of it the same way.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import admin
from django.contrib.admin.views.decorators import staff_member_required
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, JsonResponse
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, path, reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from django.views.i18n import JavaScriptCatalog

from .models import Decision, Pause, PauseStatus, Run
from .scopes import VIEW_PAUSE_PERMISSION, readable_runs

VIEWER_URL_NAME = "symfonic_run_live"
STATE_URL_NAME = "symfonic_run_live_state"
#: Django's JavaScript catalog of this app's ``djangojs`` messages (viewer.js, review.js).
CATALOG_URL_NAME = "symfonic_jsi18n"
#: Must match ``routing.websocket_urlpatterns``.
STREAM_PATH = "/ws/symfonic/runs/{run_id}/"
_PLACEHOLDER = uuid.UUID(int=0)


def viewer_url(run: Any) -> str | None:
    """The viewer of ``run`` (a ``Run`` or its id); ``None`` for no run, or if not mounted."""
    return _reverse(VIEWER_URL_NAME, run)


def state_url(run: Any) -> str | None:
    """Where the viewer of ``run`` asks how its pauses stand; ``None`` if not mounted."""
    return _reverse(STATE_URL_NAME, run)


def _reverse(name: str, run: Any) -> str | None:
    if run is None:
        return None
    try:
        return reverse(name, kwargs={"run_id": getattr(run, "pk", run)})
    except NoReverseMatch:
        return None


def _admin_url_template(model: str) -> str | None:
    """The admin change URL of ``model`` with ``{id}`` for the object, if the admin has it."""
    try:
        url = reverse(f"admin:symfonic_django_{model}_change", args=[_PLACEHOLDER])
    except NoReverseMatch:
        return None
    return url.replace(str(_PLACEHOLDER), "{id}")


def _visible_run(request: HttpRequest, run_id: uuid.UUID) -> Run | None:
    """The run if the user may read it; ``None`` for unknown and unseen alike."""
    return readable_runs(request.user).filter(pk=run_id).first()


def _pauses_of(run: Run) -> list[Pause]:
    """The run's pauses, oldest first, with what the viewer shows of each: one query."""
    approvals = Count("decisions", filter=Q(decisions__action=Decision.Action.APPROVE))
    return list(Pause.objects.filter(run=run).select_related("answered_by", "continuation")
                .annotate(approvals_have=approvals).order_by("created_at", "pk"))


def follow_state(run: Run, pauses: list[Pause], *, show_answerers: bool = True
                 ) -> dict[str, Any]:
    """Where ``run`` stands for its viewer: its status, its pauses, and its continuation.

    ``pending`` counts the pauses still waiting. ``continuation`` is ``None``
    until the last pause is resolved and the run continues (an expiry that
    fails the run, or a cancellation, resolves them with none). Without
    ``show_answerers`` (a starter who may not read the scope's pauses) no pause
    names who answered it.
    """
    continuations = [p.continuation for p in pauses if p.continuation is not None]
    continuation = max(continuations, key=lambda c: c.created_at) if continuations else None
    return {
        "run": {"id": str(run.pk), "status": run.status, "status_label": run.get_status_display()},
        "pending": sum(1 for p in pauses if p.status == PauseStatus.PENDING),
        "pauses": [_pause_state(p, show_answerer=show_answerers) for p in pauses],
        "continuation": continuation and {
            "id": str(continuation.pk),
            "status": continuation.status,
            "status_label": continuation.get_status_display(),
            "created_at": continuation.created_at.isoformat(),
            "resumed_from_pause_id": continuation.resumed_from_id and str(continuation.resumed_from_id),
            "stream_path": STREAM_PATH.format(run_id=continuation.pk),
            "viewer_url": viewer_url(continuation),
            "state_url": state_url(continuation),
        },
    }


def _state_for(request: HttpRequest, run: Run) -> dict[str, Any]:
    """``follow_state`` of a run the user may read, for that user.

    Who answered is shown to a user who may read the scope's pauses. The run is
    readable, so its scope is one of the user's (``scopes.may_read_run``): the
    pause permission is all that is left to ask, without reading the scopes again.
    """
    return follow_state(run, _pauses_of(run),
                        show_answerers=request.user.has_perm(VIEW_PAUSE_PERMISSION))


def _pause_state(pause: Pause, *, show_answerer: bool) -> dict[str, Any]:
    need = pause.approvals_needed
    answerer = pause.answered_by if show_answerer else None
    return {
        "id": str(pause.pk),
        "status": pause.status,
        "status_label": pause.get_status_display(),
        "answered_at": pause.answered_at and pause.answered_at.isoformat(),
        "answered_by": answerer and answerer.get_username(),
        "answered_via": pause.answered_via,
        "answered_via_label": pause.get_answered_via_display() if pause.answered_via else "",
        "continuation_run_id": pause.continuation_id and str(pause.continuation_id),
        # Only a pause that still waits for several approvers has a count worth showing.
        "approvals": ({"have": getattr(pause, "approvals_have", 0), "need": need}
                      if need > 1 and pause.status == PauseStatus.PENDING else None),
    }


@staff_member_required
def run_live(request: HttpRequest, run_id: uuid.UUID) -> TemplateResponse:
    """The viewer page of one run the user may read (404 otherwise: no existence leak)."""
    run = _visible_run(request, run_id)
    if run is None:
        raise Http404("No such run.")
    state = _state_for(request, run)
    run_admin = _admin_url_template("run")
    continuation = state["continuation"]
    context = {
        **admin.site.each_context(request),
        "title": _("Run %(id)s live") % {"id": str(run.pk)[:8]},
        "run": run,
        "run_admin_url": run_admin and run_admin.format(id=run.pk),
        "parent_viewer_url": viewer_url(run.parent_id) if run.parent_id else None,
        "continuation": continuation,
        "time_zone": timezone.get_current_timezone_name(),
        "viewer_config": {
            "runId": str(run.pk),
            "streamPath": STREAM_PATH.format(run_id=run.pk),
            "stateUrl": state_url(run),
            "pauseUrl": _admin_url_template("pause"),
            "runUrl": run_admin,
            # The zone every time on the page is shown in, as the admin shows it.
            "timeZone": timezone.get_current_timezone_name(),
            # Where the run's pauses stood when the page was made: a run whose pauses were
            # answered already never shows a "waiting" line, not even for a moment.
            "state": state,
        },
    }
    return TemplateResponse(request, "symfonic_django/viewer.html", context)


def _refusal(status: int, code: str, detail: str) -> JsonResponse:
    return JsonResponse({"code": code, "detail": detail}, status=status)


@never_cache
@require_safe
def run_live_state(request: HttpRequest, run_id: uuid.UUID) -> JsonResponse:
    """``follow_state`` of one run the user may read, as JSON, for the viewer page.

    The page's rule in the API's error shape: 401 without a session, 403 for a
    user who is not staff, 404 for an unknown run or one the user may not read. A constant number of queries, whatever the run holds.
    """
    user = request.user
    if not user.is_authenticated:
        return _refusal(401, "not_authenticated", "Log in to the admin to follow this run.")
    if not (user.is_active and user.is_staff):
        return _refusal(403, "permission_denied", "The live viewer is for staff users.")
    run = _visible_run(request, run_id)
    if run is None:
        return _refusal(404, "not_found", "No such run.")
    return JsonResponse(_state_for(request, run))


viewer_urlpatterns = [
    # Public like Django's own admin catalog: it holds the app's words, nothing else.
    path("jsi18n/", JavaScriptCatalog.as_view(packages=["symfonic_django"]),
         name=CATALOG_URL_NAME),
    path("runs/<uuid:run_id>/live/", run_live, name=VIEWER_URL_NAME),
    path("runs/<uuid:run_id>/live/state/", run_live_state, name=STATE_URL_NAME),
]
