"""The endpoint: ``POST ag-ui/{agent}/`` answered as an AG-UI server-sent event stream.

Everything a request is judged on happens synchronously, as for every view of
the API (``SymfonicAPIView``: authentication by session with CSRF or
``Authorization: Token``, the size cap, the bounded JSON parser); then the
response streams the turn from the database (``stream.follow``) through an
async iterator, which Django's ASGI handler serves as it is produced.

Every refusal is a stream of one ``RUN_ERROR`` with the app's error code, and
the HTTP status 200: ``@ag-ui/client``'s ``HttpAgent`` turns any other status
into a transport error that hides the code, and its event verifier takes a
``RUN_ERROR`` as a stream's first event. The HTTP status the same refusal has
elsewhere in the API is in the event's ``metadata.symfonic.status``.

Which request is which, in this order: ``resume`` entries resume the
interrupted run (``resume.py``); ``forwardedProps.after`` (or
``Last-Event-ID``) reconnects to a run's stream after the last event seen;
anything else is a new input, which starts a run of the caller's scope on the
thread, unless the thread has pending interrupts (``thread_paused``: the spec's
"pending blocks input") or a turn queued or running (``thread_paused`` too: a
thread takes one input at a time), checked under a lock of the thread so that two
inputs sent at once cannot both pass.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from ag_ui.core import RunAgentInput
from django.db import transaction
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from ... import pg
from ...exceptions import NotFound, ThreadPaused
from ...models import Pause, Run, RunStatus
from ...scopes import may_read_run, scope_key
from ..errors import exception_handler
from ..views.base import SymfonicAPIView
from ..views.runs import requested_scope, start_requested_run
from . import resume, stream
from .inputs import After, agent_input, read_after, read_input
from .wire import MEDIA_TYPE, run_error

#: One server-sent event of the stream, as the OpenAPI document describes it: ``data`` is
#: an AG-UI event as JSON, ``id`` the app's run and the stored row's ``seq``.
SSE_EVENT = {"type": "object", "required": ["data"], "properties": {
    "data": {"type": "string", "description": "An AG-UI event, as JSON."},
    "id": {"type": "string", "description": "<app run id>:<seq> of the stored event."},
    "event": {"type": "string"}}}


def refuse_if_busy(key: str, thread_id: str) -> None:
    """``ThreadPaused`` while the thread has pending interrupts (the spec's "pending blocks
    input") or a turn queued or running: a thread takes one input at a time."""
    if Pause.objects.pending().filter(scope_key=key, run__thread_id=thread_id).exists():
        raise ThreadPaused("This thread has pending interrupts: resume them (all at once) "
                           "before sending new input.")
    if Run.objects.filter(scope_key=key, thread_id=thread_id,
                          status__in=[RunStatus.QUEUED, RunStatus.RUNNING]).exists():
        raise ThreadPaused("This thread has a turn in progress: wait for its end (reconnect "
                           "to its stream) before sending new input.")


def sse(chunks: AsyncIterator[str]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(chunks, content_type=MEDIA_TYPE)
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx: pass each event on as it comes
    return response


class AgUiView(SymfonicAPIView):
    """``POST ag-ui/{agent}/``: start, resume or reconnect to a run as AG-UI (module doc)."""

    permission_classes = [IsAuthenticated]

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        # An AG-UI client accepts text/event-stream, which no DRF renderer offers; the
        # response is the stream itself, never a rendered body, so any renderer will do.
        return super().perform_content_negotiation(request, force=True)

    def handle_exception(self, exc: Exception) -> Any:
        """Any refusal, before the stream starts, as a stream of one ``RUN_ERROR``."""
        answered = exception_handler(exc, self.get_exception_handler_context())
        body: dict[str, Any] = answered.data or {}
        event = run_error(str(body.get("code", "server_error")), str(body.get("detail", "")),
                          status=answered.status_code, run_id=getattr(self, "client_run_id", None))
        return sse(stream.refused(event))

    @extend_schema(
        summary="Run an agent over AG-UI",
        description="A `RunAgentInput` of AG-UI 1.0, answered as a server-sent event stream of "
                    "AG-UI events (`docs/ag-ui.md`): a new input starts a run of the caller's "
                    "scope; `resume` answers the interrupts that ended the thread's last run; "
                    "`forwardedProps.after` reconnects. Every refusal is a `RUN_ERROR` whose "
                    "`code` is the app's error code.",
        request={"application/json": OpenApiTypes.OBJECT},
        responses={(200, "text/event-stream"): SSE_EVENT})
    def post(self, request: Request, agent: str) -> Any:
        given = read_input(request.data)
        self.client_run_id = given.run_id
        if given.resume:
            return self.resumed(request, given, agent)
        after = read_after(given, request.headers.get("Last-Event-ID"))
        if after is not None:
            return self.reconnected(request, given, after)
        return self.started(request, given, agent)

    def started(self, request: Request, given: RunAgentInput, agent: str) -> Any:
        scope = requested_scope(request)
        key = scope_key(scope)
        # The check and the new run in one transaction, under a lock of the thread: two
        # inputs sent at once are one run and one refusal, never two runs on the thread.
        with transaction.atomic():
            pg.lock_for_transaction(f"symfonic:thread:{key}:{given.thread_id}")
            refuse_if_busy(key, given.thread_id)
            run = start_requested_run(request, agent, agent_input(given), scope=scope,
                                      thread_id=given.thread_id)
        return sse(stream.follow(run.pk, thread_id=given.thread_id, run_id=given.run_id))

    def resumed(self, request: Request, given: RunAgentInput, agent: str) -> Any:
        assert given.resume is not None
        answered: Response = resume.answer(request.user, given.resume,
                                           thread_id=given.thread_id, agent=agent)
        body = answered.data or {}
        if body.get("continuation_id"):
            return sse(stream.follow(body["continuation_id"], thread_id=given.thread_id,
                                     run_id=given.run_id))
        run = Run.objects.get(pk=body["run_id"])
        return sse(stream.still_interrupted(run, thread_id=given.thread_id,
                                            run_id=given.run_id))

    def reconnected(self, request: Request, given: RunAgentInput, after: After) -> Any:
        run = Run.objects.filter(pk=after.run_id).first()
        if run is None or not may_read_run(request.user, run) or (
                run.thread_id != given.thread_id):
            raise NotFound("No such run on this thread.")
        return sse(stream.follow(run.pk, thread_id=given.thread_id, run_id=given.run_id,
                                 after=after.seq))



