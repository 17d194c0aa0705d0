"""The HTTP API: thin views over the pause and run state machines.

Every view answers errors as ``{"code", "detail"}`` (``errors.py``); every
object lookup goes through ``get_object()`` on a queryset already narrowed to
the caller's scopes, then the state machine re-reads the row under
``select_for_update``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from asgiref.sync import async_to_sync
from django.db import IntegrityError
from django.db.models import QuerySet
from django.utils.dateparse import parse_datetime
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import CursorPagination
from rest_framework.parsers import JSONParser
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.settings import api_settings
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from .. import pauses
from ..conf import settings
from ..continuation import redeem_token
from ..delivery import may_hold_tokens, wire_events
from ..exceptions import InvalidRequest, PayloadTooLarge, PermissionDenied
from ..models import AnsweredVia, IdempotentResponse, Pause, PauseKind, PauseStatus, Run
from ..runs import start_run
from ..scopes import reviewer_scope_keys
from ..tokens import mint_watch_ticket
from . import serializers as s
from .errors import exception_handler
from .permissions import CanAnswerPauses

ERRORS = {code: OpenApiResponse(s.ErrorSerializer, description=text) for code, text in {
    400: "invalid_answer or invalid_request", 401: "not_authenticated",
    403: "permission_denied, invalid_token, scope_mismatch, scope_unknown or lineage_refused",
    404: "not_found (also for a pause of a scope the caller cannot see)",
    409: "already_answered", 410: "expired", 413: "payload_too_large", 429: "throttled",
}.items()}
ACCEPTED = {202: s.AcceptedSerializer, **ERRORS}
IDEMPOTENCY_HEADER = OpenApiParameter(
    "Idempotency-Key", str, OpenApiParameter.HEADER, required=False,
    description="Repeat a request safely: the same key from the same caller gets the original 202.")


class SymfonicAPIView(APIView):
    """Base of every view: the pinned error body, 401 for missing credentials, size cap."""

    # Bodies are JSON (DESIGN section 6). Accepting forms too would document them
    # in the schema, and daphne refuses a malformed multipart body itself, with a
    # bare 400 that is not the pinned error body.
    parser_classes = [JSONParser]

    def get_exception_handler(self) -> Callable[[Exception, dict[str, Any]], Response | None]:
        return exception_handler

    def get_authenticate_header(self, request: Request) -> str:
        # DRF answers 403 when the first authenticator has no header (sessions);
        # the pinned contract says 401 for missing credentials.
        for authenticator in self.get_authenticators():
            header = authenticator.authenticate_header(request)
            if header:
                return header
        return 'Session realm="api"'

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        length = request.META.get("CONTENT_LENGTH") or "0"
        if length.isdigit() and int(length) > settings.MAX_ANSWER_BYTES + 8192:
            raise PayloadTooLarge(
                f"The request body is {length} bytes; this deployment accepts answers of at "
                f"most {settings.MAX_ANSWER_BYTES} bytes (SYMFONIC['MAX_ANSWER_BYTES'])."
            )
        super().initial(request, *args, **kwargs)


def _body(serializer_class: type[Serializer[Any]], request: Request) -> dict[str, Any]:
    if not isinstance(request.data, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    serializer = serializer_class(data=request.data)
    if not serializer.is_valid():
        raise ValidationError(serializer.errors)
    validated: dict[str, Any] = serializer.validated_data
    return validated


def accepted(pause: Pause | None, run_id: Any | None) -> Response:
    stream = None
    if run_id is not None:
        stream = {"path": f"/ws/symfonic/runs/{run_id}/", "ticket": mint_watch_ticket(str(run_id))}
    body = {"pause": s.PauseSerializer(pause).data if pause is not None else None,
            "run_id": str(run_id) if run_id is not None else None, "stream": stream}
    return Response(body, status=status.HTTP_202_ACCEPTED)


def accepted_resolution(resolution: pauses.Resolution) -> Response:
    """The 202 for an answered pause: the turn that will run, if this was its last pause."""
    continuation = resolution.continuation
    return accepted(resolution.pause, continuation.pk if continuation is not None else None)


def idempotent(request: Request, caller: str, handle: Callable[[], Response]) -> Response:
    """Replay the stored 202 for a repeated ``Idempotency-Key`` from the same caller.

    A key names one request: the same key sent to another pause (or endpoint)
    is a request of its own, never a replay of a 202 about something else.
    """
    given = request.headers.get("Idempotency-Key", "").strip()
    if not given:
        return handle()
    key = hashlib.sha256(f"{request.method} {request.path} {given}".encode()).hexdigest()
    stored = IdempotentResponse.objects.filter(caller=caller, key=key).first()
    if stored is not None:
        return Response(stored.body, status=int(stored.status))
    response = handle()
    if response.status_code == status.HTTP_202_ACCEPTED:
        try:
            IdempotentResponse.objects.create(caller=caller, key=key,
                                              status=response.status_code, body=response.data)
        except IntegrityError:
            pass  # a concurrent request with the same key stored its own 202 first
    return response


class PauseCursorPagination(CursorPagination):
    ordering = "-created_at"
    page_size = 50
    max_page_size = 200
    page_size_query_param = "page_size"

    def decode_cursor(self, request: Request) -> Any:
        """A cursor this API did not issue is a malformed request (400), never a 500.

        DRF checks a cursor's offset but not its position, which goes straight
        into ``created_at__lt``: an unparsable one raised a database-side error.
        """
        try:
            cursor = super().decode_cursor(request)
        except NotFound:
            cursor = None
        else:
            if cursor is None or cursor.position is None or _is_datetime(str(cursor.position)):
                return cursor
        raise InvalidRequest("The cursor is malformed; follow the next and previous links.")


def _is_datetime(value: str) -> bool:
    try:
        return parse_datetime(value) is not None
    except ValueError:
        return False


class PauseViewSet(SymfonicAPIView, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                   viewsets.GenericViewSet[Pause]):
    """Pauses the caller may review, and the three ways to answer one."""

    serializer_class = s.PauseSerializer
    pagination_class = PauseCursorPagination
    permission_classes = [IsAuthenticated]

    def get_queryset(self) -> QuerySet[Pause]:
        qs = Pause.objects.in_scopes(reviewer_scope_keys(self.request.user)).select_related(
            "answered_by")
        params = self.request.query_params
        if "status" in params:
            if params["status"] not in PauseStatus.values:
                raise InvalidRequest(f"status must be one of {PauseStatus.values}.")
            qs = qs.filter(status=params["status"])
        if "kind" in params:
            if params["kind"] not in PauseKind.values:
                raise InvalidRequest(f"kind must be one of {PauseKind.values}.")
            qs = qs.filter(kind=params["kind"])
        if "run" in params:
            try:
                qs = qs.filter(run_id=Run._meta.pk.to_python(params["run"]))
            except Exception as exc:
                raise InvalidRequest("run must be a run id (UUID).") from exc
        return qs

    def _visible(self) -> Any:
        return reviewer_scope_keys(self.request.user)

    def _caller(self) -> str:
        return f"user:{self.request.user.pk}"

    @extend_schema(
        parameters=[OpenApiParameter("status", str, enum=PauseStatus.values),
                    OpenApiParameter("kind", str, enum=PauseKind.values),
                    OpenApiParameter("run", str, description="Only the pauses of this run.")],
        responses={200: s.PauseSerializer(many=True), **ERRORS})
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(responses={200: s.PauseSerializer, **ERRORS})
    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().retrieve(request, *args, **kwargs)

    def _transition(self, request: Request, body: type[Serializer[Any]],
                    move: Callable[..., pauses.Resolution]) -> Response:
        """Look the pause up in the caller's scopes, then ``move`` it through the state machine.

        ``move(pause_id, data, common)`` calls one transition of ``pauses``;
        ``common`` is the caller, the surface and the scopes they may see.
        """
        pause = self.get_object()
        common = {"actor": request.user, "via": AnsweredVia.API, "visible": self._visible()}

        def handle() -> Response:
            return accepted_resolution(move(pause.pk, _body(body, request), common))

        return idempotent(request, self._caller(), handle)

    @extend_schema(request=s.AnswerRequestSerializer, responses=ACCEPTED,
                   parameters=[IDEMPOTENCY_HEADER])
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated, CanAnswerPauses])
    def answer(self, request: Request, pk: str | None = None) -> Response:
        return self._transition(request, s.AnswerRequestSerializer, lambda pk, data, common:
                                pauses.answer_pause(pk, data["answer"], **common))

    @extend_schema(request=s.ApproveRequestSerializer, responses=ACCEPTED,
                   parameters=[IDEMPOTENCY_HEADER])
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated, CanAnswerPauses])
    def approve(self, request: Request, pk: str | None = None) -> Response:
        return self._transition(request, s.ApproveRequestSerializer, lambda pk, data, common:
                                pauses.approve(pk, comment=data.get("comment", ""),
                                               edited_args=data.get("edited_args"), **common))

    @extend_schema(request=s.RejectRequestSerializer, responses=ACCEPTED,
                   parameters=[IDEMPOTENCY_HEADER])
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated, CanAnswerPauses])
    def reject(self, request: Request, pk: str | None = None) -> Response:
        return self._transition(request, s.RejectRequestSerializer, lambda pk, data, common:
                                pauses.reject(pk, comment=data.get("comment", ""), **common))


class ResumeThrottle(ScopedRateThrottle):
    """``ScopedRateThrottle`` for ``resume/``, with a default when the project sets no rate."""

    scope_attr = "throttle_scope"
    default_rate = "60/min"

    def get_rate(self) -> str:
        # Read the rates now, not at import (DRF's THROTTLE_RATES is a class
        # attribute), so a changed REST_FRAMEWORK setting takes effect.
        rate = api_settings.DEFAULT_THROTTLE_RATES.get(self.scope or "")
        return str(rate) if rate else self.default_rate


class ResumeView(SymfonicAPIView):
    """Answer a pause with its signed token: the token is the credential."""

    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    throttle_classes = [ResumeThrottle]
    throttle_scope = "symfonic_resume"

    @extend_schema(request=s.ResumeRequestSerializer, responses=ACCEPTED,
                   parameters=[IDEMPOTENCY_HEADER])
    def post(self, request: Request) -> Response:
        data = _body(s.ResumeRequestSerializer, request)
        caller = "token:" + hashlib.sha256(data["token"].encode()).hexdigest()[:40]

        def handle() -> Response:
            res = async_to_sync(redeem_token)(data["token"], data["answer"])
            return accepted_resolution(res)

        return idempotent(request, caller, handle)


class RunViewSet(SymfonicAPIView, mixins.RetrieveModelMixin, viewsets.GenericViewSet[Run]):
    """Start a turn, read it, and read its stored events."""

    serializer_class = s.RunSerializer
    permission_classes = [IsAuthenticated]

    def get_queryset(self) -> QuerySet[Run]:
        return Run.objects.in_scopes(reviewer_scope_keys(self.request.user))

    @extend_schema(request=s.RunCreateRequestSerializer, responses=ACCEPTED)
    def create(self, request: Request) -> Response:
        data = _body(s.RunCreateRequestSerializer, request)
        resolver = settings.REQUEST_SCOPE
        scope = resolver(request) if resolver else None
        if scope is None:
            raise PermissionDenied("You belong to no scope a run could be started in.")
        run = start_run(data["agent"], data["input"], scope=scope,
                        session_id=data.get("session_id", ""),
                        thread_id=data.get("thread_id", ""))
        return accepted(None, run.pk)

    @extend_schema(responses={200: s.RunSerializer, **ERRORS})
    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().retrieve(request, *args, **kwargs)

    @extend_schema(parameters=[OpenApiParameter("after", int, description="Only events with "
                                                "seq greater than this.")],
                   responses={200: s.EventPageSerializer, **ERRORS})
    @action(detail=True, methods=["get"])
    def events(self, request: Request, pk: str | None = None) -> Response:
        run = self.get_object()
        after = request.query_params.get("after", "0")
        if not after.isdigit():
            raise InvalidRequest("after must be a non-negative integer.")
        rows = list(run.events.filter(seq__gt=int(after)).order_by("seq")[:1000])
        return Response({"results": wire_events(
            rows, run, with_tokens=may_hold_tokens(request.user, run))})
