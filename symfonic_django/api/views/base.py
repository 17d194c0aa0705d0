"""What every view of the HTTP API shares: the base view, the request body, the 202.

The views are thin, over the pause and run state machines.
Every view answers errors as ``{"code", "detail"}`` (``errors.py``); every
object lookup goes through ``get_object()`` on a queryset already narrowed to
the caller's scopes, then the state machine re-reads the row under
``select_for_update``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import status
from rest_framework.exceptions import NotAuthenticated, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.views import APIView

from ... import pauses
from ...conf import settings
from ...exceptions import InvalidRequest, PayloadTooLarge
from ...models import Pause, Run
from ...tokens import mint_watch_ticket
from .. import serializers as s
from ..authentication import not_authenticated_detail
from ..errors import exception_handler
from ..parsers import BoundedJSONParser, max_body_bytes

#: ``after`` and other counters in a query are ``seq`` values: ASCII digits, 32-bit.
MAX_QUERY_INT = 2**31 - 1


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


def read_body(serializer_class: type[Serializer[Any]], request: Request) -> dict[str, Any]:
    """The request's JSON object, validated by ``serializer_class``; a 400 when it is not."""
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


@csrf_exempt
def not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Any path under the API's mount that names nothing, such as an id the router does not
    take (``pauses/0.5/``: DRF's ids stop at a dot): the pinned JSON 404, never Django's
    HTML page, whatever the method and whoever asks (``urls.py`` routes the rest here)."""
    return JsonResponse({"code": "not_found", "detail": "Not found."}, status=404)
