"""``runs/``: the runs a caller may review, starting one, and reading its stored events."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from ...conf import settings
from ...delivery import may_hold_tokens, wire_events
from ...events import rows_after
from ...exceptions import InvalidRequest, PermissionDenied
from ...models import Run, RunStatus
from ...runs import start_run
from ...scopes import readable_runs
from .. import serializers as s
from ..permissions import START_PERMISSION
from .base import accepted, query_int, query_text, read_body
from .lists import ListAndReadViewSet, list_and_read
from .schema import ACCEPTED, ERRORS

#: Events per page of ``GET runs/{id}/events/``.
EVENTS_PAGE = 1000
#: Exact-match text filters of ``GET runs/``, and their columns' lengths.
RUN_TEXT_FILTERS = {"agent": 100, "session_id": 200, "thread_id": 200}


@list_and_read(
    s.RunSerializer,
    [OpenApiParameter("status", str, enum=RunStatus.values),
     OpenApiParameter("agent", str, description="Only runs of this agent."),
     OpenApiParameter("session_id", str, description="Only runs of this session."),
     OpenApiParameter("thread_id", str, description="Only runs of this thread.")],
    listing=("List the runs you may review",
             "The runs (agent turns) of every scope the caller may review, newest first, as a "
             "cursor page `{next, previous, results}` like `GET pauses/`. A resumed turn is a run "
             "of its own, with `parent_run_id` and `resumed_from_pause_id`. Filter by `status`, "
             "`agent`, `session_id` and `thread_id` (exact values)."),
    reading=("Read one run",
             "One turn: its agent, status (queued, running, paused, completed, failed), input, "
             "output or error, attempts, and its place in the chain (root, parent, the pause it "
             "resumed from). A run of a scope the caller may not review is 404 `not_found`."))
class RunViewSet(ListAndReadViewSet[Run]):
    """List turns, start one, read one, and read its stored events."""

    def get_queryset(self) -> QuerySet[Run]:
        runs = readable_runs(self.request.user)
        # The filters are the list's; a run read by id is found whatever the query says.
        return self._filtered(runs) if self.action == "list" else runs

    def _filtered(self, queryset: QuerySet[Run]) -> QuerySet[Run]:
        if (wanted := self.request.query_params.get("status")) is not None:
            if wanted not in RunStatus.values:
                raise InvalidRequest(f"status must be one of {RunStatus.values}.")
            queryset = queryset.filter(status=wanted)
        for name, max_length in RUN_TEXT_FILTERS.items():
            value = query_text(self.request, name, max_length=max_length)
            if value is not None:
                queryset = queryset.filter(**{name: value})
        return queryset

    @extend_schema(
        summary="Start a run",
        description="Queue a turn of a registered agent in the caller's own scope, with `input` "
                    "checked against the agent's input schema. Needs the `start_run` "
                    "permission. The 202 names the run and a watch ticket for its websocket "
                    "stream; `pause` is null.",
        request=s.RunCreateRequestSerializer, responses=ACCEPTED)
    def create(self, request: Request) -> Response:
        scope = requested_scope(request)  # a caller who may not start runs: 403 before 400
        data = read_body(s.RunCreateRequestSerializer, request)
        run = start_requested_run(request, data["agent"], data["input"], scope=scope,
                                  session_id=data.get("session_id", ""),
                                  thread_id=data.get("thread_id", ""))
        return accepted(None, run, caller=request.user)

    @extend_schema(
        summary="Read a run's stored events",
        description="The run's events with `seq` above `after`, oldest first, at most 1000 per "
                    "call: ask again with `after` set to the last `seq` seen. The same events "
                    "the websocket streams; `pause.requested` carries a `token` only for a "
                    "caller who may answer that pause.",
        parameters=[OpenApiParameter("after", int, description="Only events with "
                                     "seq greater than this.")],
        responses={200: s.EventPageSerializer, **ERRORS})
    @action(detail=True, methods=["get"])
    def events(self, request: Request, pk: str | None = None) -> Response:
        run = self.get_object()
        after = query_int(request, "after", 0)
        return Response({"results": wire_events(
            rows_after(run.pk, after, EVENTS_PAGE), run,
            with_tokens=may_hold_tokens(request.user, run))})


def requested_scope(request: Request) -> Any:
    """The scope a run started by ``request`` belongs to, or ``PermissionDenied`` saying why
    there is none: the ``start_run`` permission first, then ``SYMFONIC['REQUEST_SCOPE']``.

    ``POST runs/`` and the AG-UI endpoint (``agui``) ask it alike, before anything else.
    """
    if not request.user.has_perm(START_PERMISSION):
        raise PermissionDenied("You may not start runs (you lack the start_run permission).")
    resolver = settings.REQUEST_SCOPE
    scope = resolver(request) if resolver else None
    if scope is None:
        why = ("SYMFONIC['REQUEST_SCOPE'] found no scope for you" if resolver else
               "this deployment sets no SYMFONIC['REQUEST_SCOPE'] to find the scope of "
               "a request")
        raise PermissionDenied(
            f"You belong to no scope a run could be started in: {why}. Reviewing every "
            "scope (a superuser) is not belonging to one: a run is started in the scope "
            "REQUEST_SCOPE gives the request.")
    return scope


def start_requested_run(request: Request, agent: str, input: Any, *, session_id: str = "",
                        thread_id: str = "", scope: Any = None) -> Run:
    """Start a run of ``agent`` for the caller of ``request``, in their scope: the one way
    ``POST runs/`` and the AG-UI endpoint start runs (``requested_scope``, then
    ``runs.start_run``, which checks the agent and its input schema)."""
    if scope is None:
        scope = requested_scope(request)
    return start_run(agent, input, scope=scope, session_id=session_id,
                     thread_id=thread_id, started_by=request.user)
