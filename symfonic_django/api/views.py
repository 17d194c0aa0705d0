"""The HTTP API: thin views over the pause and run state machines.

Every view answers errors as ``{"code", "detail"}`` (``errors.py``); every
object lookup goes through ``get_object()`` on a queryset already narrowed to
the caller's scopes, then the state machine re-reads the row under
``select_for_update``.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Callable
from typing import Any, NoReturn

from asgiref.sync import async_to_sync
from django.db.models import QuerySet
from django.http import HttpRequest, JsonResponse
from django.utils.dateparse import parse_datetime
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotAuthenticated, NotFound, ValidationError
from rest_framework.pagination import CursorPagination
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.views import APIView

from .. import pauses
from ..conf import settings
from ..continuation import redeem_token
from ..delivery import may_hold_tokens, wire_events
from ..events import rows_after
from ..exceptions import (
    InvalidPauseToken,
    InvalidRequest,
    LineageRefused,
    PauseTokenExpired,
    PayloadTooLarge,
    PermissionDenied,
    ScopeMismatch,
    ScopeUnknown,
)
from ..exceptions import (
    NotFound as PauseNotFound,
)
from ..models import AnsweredVia, Pause, PauseKind, PauseStatus, Run, RunStatus
from ..runs import start_run
from ..scopes import may_read_pauses, readable_pauses, readable_runs, reviewer_scope_keys
from ..tokens import claimed_pause_id, mint_watch_ticket
from . import serializers as s
from .authentication import not_authenticated_detail
from .errors import exception_handler
from .idempotency import idempotent
from .parsers import BoundedJSONParser, max_body_bytes
from .permissions import START_PERMISSION, CanAnswerPauses
from .throttling import FailedTokenAttempts, ResumeThrottle

ERRORS = {code: OpenApiResponse(s.ErrorSerializer, description=text) for code, text in {
    400: "invalid_answer or invalid_request", 401: "not_authenticated",
    403: "permission_denied, invalid_token, scope_mismatch, scope_unknown, lineage_refused, or "
         "approval_not_counted (the run's starter approving its own several-approver pause)",
    404: "not_found (also for a pause of a scope the caller cannot see)",
    409: "already_answered, idempotency_in_progress, already_approved (you approved this "
         "pause already), or approval_mismatch (other approvers approved another decision "
         "list: the earlier list is in detail)", 410: "expired",
    413: "payload_too_large", 429: "throttled",
}.items()}
ACCEPTED = {202: s.AcceptedSerializer, **ERRORS, 422: OpenApiResponse(
    s.ErrorSerializer, description="idempotency_key_reused")}
CLAIMED = {200: s.ClaimSerializer, **ERRORS, 409: OpenApiResponse(
    s.ErrorSerializer, description="claimed (another reviewer holds it), not_claimed (a release "
                                   "of a claim you do not hold), or already_answered")}
IDEMPOTENCY_HEADER = OpenApiParameter(
    "Idempotency-Key", str, OpenApiParameter.HEADER, required=False,
    description="Repeat a request safely: the same key, path and body from the same caller get "
                "the original 202; while the first is in flight, 409 idempotency_in_progress; "
                "with another body or path, 422 idempotency_key_reused.")

#: ``after`` and other counters in a query are ``seq`` values: ASCII digits, 32-bit.
MAX_QUERY_INT = 2**31 - 1
#: Events per page of ``GET runs/{id}/events/``.
EVENTS_PAGE = 1000
#: Exact-match text filters of ``GET runs/``, and their columns' lengths.
RUN_TEXT_FILTERS = {"agent": 100, "session_id": 200, "thread_id": 200}
#: Refusals of ``resume/`` that say the token is no good (not the answer, not the pause's
#: state): each counts against the pause the token names (``FailedTokenAttempts``).
TOKEN_FAILURES = (InvalidPauseToken, PauseTokenExpired, ScopeMismatch, ScopeUnknown,
                  LineageRefused, PauseNotFound)


def query_int(request: Request, name: str, default: int, *, minimum: int = 0,
              maximum: int = MAX_QUERY_INT) -> int:
    """The query parameter ``name`` as an integer, or a 400 naming what it must be.

    ASCII digits only: ``str.isdigit()`` also takes ``²`` and other digits ``int()``
    refuses, and a thousand digits make an integer no column holds.
    """
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if raw.isascii() and raw.isdigit() and len(raw) <= len(str(maximum)):
        value = int(raw)
        if minimum <= value <= maximum:
            return value
    raise InvalidRequest(f"{name} must be a whole number from {minimum} to {maximum}.")


def query_text(request: Request, name: str, *, max_length: int) -> str | None:
    """The query parameter ``name`` as text a column can hold, or a 400 saying why not."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if len(raw) > max_length or "\x00" in raw:
        raise InvalidRequest(f"{name} must be at most {max_length} characters, without NUL.")
    return raw


class SymfonicAPIView(APIView):
    """Base of every view: the pinned error body, 401 for missing credentials, size cap.

    A view that needs a login answers a request no authenticator accepted with
    401 ``not_authenticated``, naming the credentials the deployment takes
    (``authentication.py``): no header, ``Authorization: Bearer ...`` and a
    header nobody can read alike. A view that needs none (``resume/``) ignores
    a header it does not understand, as DRF does.
    """

    # Bodies are JSON (docs/design.md section 6). Accepting forms too would document them
    # in the schema, and daphne refuses a malformed multipart body itself, with a
    # bare 400 that is not the pinned error body. The parser bounds size and depth
    # before parsing and refuses what no database stores (parsers.py).
    parser_classes = [BoundedJSONParser]

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

    def permission_denied(self, request: Request, message: str | None = None,
                          code: str | None = None) -> NoReturn:
        if request.authenticators and not request.successful_authenticator:
            raise NotAuthenticated(not_authenticated_detail(request, self.get_authenticators()))
        super().permission_denied(request, message, code)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        length = request.META.get("CONTENT_LENGTH") or "0"
        if length.isascii() and length.isdigit() and int(length) > max_body_bytes():
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


def accepted(pause: Pause | None, run: Run | None, *, caller: Any,
             show_scope: bool = True) -> Response:
    """The pinned 202. ``show_scope=False`` gives the pause's ``scope`` as null.

    The stream's watch ticket is issued to ``caller``, the authenticated user; for an
    anonymous caller (``None``) it is bound to the answered ``pause`` instead
    (``tokens.mint_watch_ticket``), and carries no pause token, ever.
    """
    stream = None
    if run is not None:
        ticket = (mint_watch_ticket(run, user=caller) if caller is not None
                  else mint_watch_ticket(run, pause_id=pause.pk if pause is not None else None))
        stream = {"path": f"/ws/symfonic/runs/{run.pk}/", "ticket": ticket}
    shown = None
    if pause is not None:
        shown = s.PauseSerializer(pause, context={"show_scope": show_scope}).data
    body = {"pause": shown, "run_id": str(run.pk) if run is not None else None,
            "stream": stream}
    return Response(body, status=status.HTTP_202_ACCEPTED)


def accepted_resolution(resolution: pauses.Resolution, *, caller: Any,
                        show_scope: bool = True) -> Response:
    """The 202 for an answered pause: the turn that will run, if this was its last pause."""
    response = accepted(resolution.pause, resolution.continuation, caller=caller,
                        show_scope=show_scope)
    if resolution.approvals is not None:  # counted, and the quorum still needs more
        approvals = resolution.approvals
        response.data["approvals"] = {"have": approvals.have, "need": approvals.need,
                                      "by": approvals.by}
    return response


#: A cursor DRF issues: standard base64 of a short query string (position, offset, reverse).
CURSOR = re.compile(r"[A-Za-z0-9+/]{1,500}={0,2}")


class NewestFirstPagination(CursorPagination):
    """Cursor pages, newest first, of the pause and the run lists."""

    ordering = "-created_at"
    page_size = 50
    max_page_size = 200
    page_size_query_param = "page_size"

    def get_page_size(self, request: Request) -> int:
        # DRF silently falls back to the default for a page_size it cannot read;
        # a malformed query is the client's mistake and is said so (400).
        size = query_int(request, self.page_size_query_param, self.page_size, minimum=1)
        return min(size, self.max_page_size)

    def decode_cursor(self, request: Request) -> Any:
        """A cursor this API did not issue is a malformed request (400), never a 500.

        DRF checks a cursor's offset but not its position, which goes straight
        into ``created_at__lt``: an unparsable one raised a database-side error.
        """
        encoded = request.query_params.get(self.cursor_query_param)
        # Base64, as DRF writes it; DRF's decoder skips any other character, so "%00"
        # would read as a cursor with no position.
        if encoded is not None and not CURSOR.fullmatch(encoded):
            raise InvalidRequest("The cursor is malformed; follow the next and previous links.")
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
    pagination_class = NewestFirstPagination
    permission_classes = [IsAuthenticated]

    def get_queryset(self) -> QuerySet[Pause]:
        qs = readable_pauses(self.request.user).select_related("answered_by")
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
                run_id = uuid.UUID(params["run"])
            except ValueError:
                raise InvalidRequest("run must be a run id (a UUID).") from None
            qs = qs.filter(run_id=run_id)
        return qs

    def _visible(self) -> Any:
        return reviewer_scope_keys(self.request.user)

    def _caller(self) -> str:
        return f"user:{self.request.user.pk}"

    @extend_schema(
        summary="List the pauses you may review",
        description="The pauses of every scope the caller may review, newest first, as a "
                    "cursor page `{next, previous, results}`: follow `next` and `previous` as "
                    "given. Filter by `status` (e.g. `pending`), `kind` and `run`. A pause of "
                    "another scope is never listed.",
        parameters=[OpenApiParameter("status", str, enum=PauseStatus.values),
                    OpenApiParameter("kind", str, enum=PauseKind.values),
                    OpenApiParameter("run", str, description="Only the pauses of this run."),
                    OpenApiParameter("page_size", int, description="At most 200.")],
        responses={200: s.PauseSerializer(many=True), **ERRORS})
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(
        summary="Read one pause",
        description="One pause: what the agent asks (`prompt`, and `answer_schema` for a "
                    "question), its status and expiry, its scope, and once answered who answered "
                    "what and the run that continues. A pause of a scope the caller may not "
                    "review is 404 `not_found`, exactly as an unknown id.",
        responses={200: s.PauseSerializer, **ERRORS})
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
            return accepted_resolution(move(pause.pk, _body(body, request), common),
                                       caller=request.user)

        return idempotent(request, self._caller(), handle)

    @extend_schema(
        summary="Answer a pause in full",
        description="Answer an approval with a `HITLResponse` (one decision per action request, "
                    "each one its action allows: approve, edit, reject or respond) or a question "
                    "with a value that fits its `answer_schema`. Needs the `answer_pause` "
                    "permission. A pause answers once: a second answer is 409 "
                    "`already_answered`. The 202 names the continuation run and its stream when "
                    "this was the run's last pending pause, else they are null.",
        request=s.AnswerRequestSerializer, responses=ACCEPTED, parameters=[IDEMPOTENCY_HEADER])
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated, CanAnswerPauses])
    def answer(self, request: Request, pk: str | None = None) -> Response:
        return self._transition(request, s.AnswerRequestSerializer, lambda pk, data, common:
                                pauses.answer_pause(pk, data["answer"], **common))

    @extend_schema(
        summary="Approve every action of a pause",
        description="Approve each action the agent proposed, with an optional `comment`. "
                    "`edited_args` replaces the arguments of a pause with one action (checked "
                    "against the action's `args_schema`), which records an edit. Needs the "
                    "`answer_pause` permission; only for approvals (a question is 400 "
                    "`invalid_answer`).",
        request=s.ApproveRequestSerializer, responses=ACCEPTED, parameters=[IDEMPOTENCY_HEADER])
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated, CanAnswerPauses])
    def approve(self, request: Request, pk: str | None = None) -> Response:
        return self._transition(request, s.ApproveRequestSerializer, lambda pk, data, common:
                                pauses.approve(pk, comment=data.get("comment", ""),
                                               edited_args=data.get("edited_args"), **common))

    @extend_schema(
        summary="Reject every action of a pause",
        description="Reject each action the agent proposed, with the optional `comment` as the "
                    "message the agent reads; the agent continues knowing it was refused and "
                    "performs none of them. Needs the `answer_pause` permission; only for "
                    "approvals.",
        request=s.RejectRequestSerializer, responses=ACCEPTED, parameters=[IDEMPOTENCY_HEADER])
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated, CanAnswerPauses])
    def reject(self, request: Request, pk: str | None = None) -> Response:
        return self._transition(request, s.RejectRequestSerializer, lambda pk, data, common:
                                pauses.reject(pk, comment=data.get("comment", ""), **common))

    def _claim(self, move: Callable[..., Pause]) -> Response:
        pause = self.get_object()
        held = move(pause.pk, actor=self.request.user, via=AnsweredVia.API,
                    visible=self._visible())
        holder = held.claimed_by
        return Response({"pause_id": str(held.pk),
                         "claimed_by": holder.get_username() if holder is not None else None,
                         "claimed_until": held.claimed_until})

    @extend_schema(
        summary="Claim a pause: tell other reviewers you are reviewing it",
        description="Marks the pause as being reviewed by the caller until `CLAIM_SECONDS` from "
                    "now (other reviewers' pages say \"Being reviewed by alice\"); the holder "
                    "claims again to extend it. A claim informs, it locks nothing: anyone who "
                    "may answer still can. Needs the `answer_pause` permission. Refused with "
                    "409 `claimed` while another reviewer's claim has not lapsed, and for a "
                    "closed pause (409 `already_answered`, 410 `expired`). Audited.",
        request=None, responses=CLAIMED)
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated, CanAnswerPauses])
    def claim(self, request: Request, pk: str | None = None) -> Response:
        return self._claim(pauses.claim)

    @extend_schema(
        summary="Release your claim on a pause",
        description="Ends the caller's claim before it lapses. Refused with 409 `not_claimed` "
                    "when the caller holds no live claim on it. Audited.",
        request=None, responses=CLAIMED)
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated, CanAnswerPauses])
    def release(self, request: Request, pk: str | None = None) -> Response:
        return self._claim(pauses.release)


def resume_caller(actor: Any, token: str) -> str:
    """Whose ``Idempotency-Key`` a ``resume/`` uses: the authenticated user's, or for an
    anonymous caller the token's pause's. Another caller sending the same key and
    body is judged on its own, never replayed what was answered to this one."""
    if actor is not None:
        return f"user:{actor.pk}"
    pause_id = claimed_pause_id(token)
    return (f"pause:{pause_id}" if pause_id is not None
            else "token:" + hashlib.sha256(token.encode()).hexdigest()[:40])


class ResumeView(SymfonicAPIView):
    """Answer a pause with its signed token: the token is the credential.

    A caller who also sends credentials (a session, an API token) is
    authenticated, and recorded as the one who answered; the token alone
    decides whether the answer is taken.
    """

    permission_classes = [AllowAny]
    throttle_classes = [ResumeThrottle]
    throttle_scope = "symfonic_resume"

    @extend_schema(
        summary="Answer a pause with its signed token",
        description="The pause's signed, single-use token is the credential: no login is "
                    "needed (one that is sent is recorded as the one who answered). The answer "
                    "is as for `pauses/{id}/answer/`. A bad, expired or foreign token is "
                    "refused and changes nothing; rate limited per client (429 `throttled`). "
                    "The pause's `scope` in the 202 is null unless the caller may review it.",
        request=s.ResumeRequestSerializer, responses=ACCEPTED, parameters=[IDEMPOTENCY_HEADER])
    def post(self, request: Request) -> Response:
        data = _body(s.ResumeRequestSerializer, request)
        token, answer = data["token"], data["answer"]
        attempts = FailedTokenAttempts(token)
        attempts.refuse_when_spent(token)
        actor = request.user if request.user and request.user.is_authenticated else None

        def handle() -> Response:
            try:
                res = async_to_sync(redeem_token)(token, answer, actor=actor)
            except TOKEN_FAILURES:
                attempts.count()
                raise
            # A token holder need not be a reviewer; the tenant's key is for reviewers
            # (tokens carry only its keyed hash, rule C4).
            return accepted_resolution(res, caller=actor, show_scope=actor is not None and (
                may_read_pauses(actor, res.pause.scope_key)))

        return idempotent(request, resume_caller(actor, token), handle)


class RunViewSet(SymfonicAPIView, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                 viewsets.GenericViewSet[Run]):
    """List turns, start one, read one, and read its stored events."""

    serializer_class = s.RunSerializer
    pagination_class = NewestFirstPagination
    permission_classes = [IsAuthenticated]

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
        summary="List the runs you may review",
        description="The runs (agent turns) of every scope the caller may review, newest first, "
                    "as a cursor page `{next, previous, results}` like `GET pauses/`. A resumed "
                    "turn is a run of its own, with `parent_run_id` and "
                    "`resumed_from_pause_id`. Filter by `status`, `agent`, `session_id` and "
                    "`thread_id` (exact values).",
        parameters=[OpenApiParameter("status", str, enum=RunStatus.values),
                    OpenApiParameter("agent", str, description="Only runs of this agent."),
                    OpenApiParameter("session_id", str, description="Only runs of this session."),
                    OpenApiParameter("thread_id", str, description="Only runs of this thread."),
                    OpenApiParameter("page_size", int, description="At most 200.")],
        responses={200: s.RunSerializer(many=True), **ERRORS})
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(
        summary="Start a run",
        description="Queue a turn of a registered agent in the caller's own scope, with `input` "
                    "checked against the agent's input schema. Needs the `start_run` "
                    "permission. The 202 names the run and a watch ticket for its websocket "
                    "stream; `pause` is null.",
        request=s.RunCreateRequestSerializer, responses=ACCEPTED)
    def create(self, request: Request) -> Response:
        if not request.user.has_perm(START_PERMISSION):
            raise PermissionDenied("You may not start runs (you lack the start_run permission).")
        data = _body(s.RunCreateRequestSerializer, request)
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
        run = start_run(data["agent"], data["input"], scope=scope,
                        session_id=data.get("session_id", ""),
                        thread_id=data.get("thread_id", ""), started_by=request.user)
        return accepted(None, run, caller=request.user)

    @extend_schema(
        summary="Read one run",
        description="One turn: its agent, status (queued, running, paused, completed, failed), "
                    "input, output or error, attempts, and its place in the chain (root, parent, "
                    "the pause it resumed from). A run of a scope the caller may not review is "
                    "404 `not_found`.",
        responses={200: s.RunSerializer, **ERRORS})
    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().retrieve(request, *args, **kwargs)

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



@csrf_exempt
def not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Any path under the API's mount that names nothing, such as an id the router does not
    take (``pauses/0.5/``: DRF's ids stop at a dot): the pinned JSON 404, never Django's
    HTML page, whatever the method and whoever asks (``urls.py`` routes the rest here)."""
    return JsonResponse({"code": "not_found", "detail": "Not found."}, status=404)
