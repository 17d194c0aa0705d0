"""One error body everywhere: ``{"code": "<code>", "detail": "<human sentence>"}``.

Refusals of the state machine (``SymfonicError``) and DRF's own exceptions are
mapped to the pinned codes of docs/design.md section 6. Nothing else ever reaches
Django's error page, whatever ``DEBUG`` says: a value the database refuses
(``DataError``) is the client's malformed request, and anything unforeseen is
logged and answered in the same shape, without a word about the deployment.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.db import DataError
from django.http import Http404
from rest_framework import exceptions as drf
from rest_framework.response import Response
from rest_framework.views import set_rollback

from ..exceptions import SymfonicError, Throttled

log = logging.getLogger(__name__)

_DRF_CODES: list[tuple[type[Exception], int, str]] = [
    (drf.NotAuthenticated, 401, "not_authenticated"),
    (drf.AuthenticationFailed, 401, "not_authenticated"),
    (drf.PermissionDenied, 403, "permission_denied"),
    (drf.NotFound, 404, "not_found"),
    (Http404, 404, "not_found"),
    (drf.Throttled, 429, "throttled"),
    (drf.UnsupportedMediaType, 400, "invalid_request"),
    (drf.ParseError, 400, "invalid_request"),
    (drf.ValidationError, 400, "invalid_request"),
    (drf.MethodNotAllowed, 405, "method_not_allowed"),
    (drf.NotAcceptable, 406, "not_acceptable"),
]


def _sentence(detail: Any) -> str:
    if isinstance(detail, dict):
        return "; ".join(f"{k}: {_sentence(v)}" for k, v in detail.items())
    if isinstance(detail, list):
        return " ".join(_sentence(d) for d in detail)
    return str(detail)


def as_sentence(text: str) -> str:
    """``detail`` is read by people: a capital first letter and a closing full stop."""
    text = " ".join(str(text).split()) or "The request was refused."
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def error_response(code: str, detail: str, status: int,
                   headers: dict[str, str] | None = None) -> Response:
    return Response({"code": code, "detail": as_sentence(detail)}, status=status,
                    headers=headers)


def _drf_response(exc: Exception, status: int, code: str) -> Response:
    """The pinned body of one of DRF's (or Django's ``Http404``) refusals, with its headers."""
    headers: dict[str, str] = {}
    # ``Throttled.wait`` is set by DRF's constructor (DRF's own handler reads it the
    # same way); djangorestframework-stubs do not declare it.
    wait = getattr(exc, "wait", None)
    if isinstance(exc, drf.Throttled) and wait is not None:
        headers["Retry-After"] = str(int(wait))
    auth_header = getattr(exc, "auth_header", None)
    if auth_header:
        headers["WWW-Authenticate"] = auth_header
    detail = getattr(exc, "detail", None) or str(exc) or code.replace("_", " ")
    if isinstance(exc, Http404):
        detail = "Not found."
    detail = _sentence(detail)
    if isinstance(exc, drf.ValidationError):
        detail = f"The request body is invalid: {detail}"
    return error_response(code, detail, status, headers)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    # As DRF's own handler does: a request under ATOMIC_REQUESTS writes nothing it refused.
    set_rollback()
    if isinstance(exc, SymfonicError):
        retry = {"Retry-After": str(exc.wait)} if isinstance(exc, Throttled) and exc.wait else None
        return error_response(exc.code, exc.detail, exc.status, retry)
    for cls, status, code in _DRF_CODES:
        if isinstance(exc, cls):
            return _drf_response(exc, status, code)
    if isinstance(exc, RequestDataTooBig):
        return error_response("payload_too_large", "The request body is larger than this "
                              "deployment accepts (DATA_UPLOAD_MAX_MEMORY_SIZE).", 413)
    if isinstance(exc, SuspiciousOperation):
        # Django answers these 400 itself (too many fields, a malformed header) when they
        # reach its handler; here they surface inside the view, as request.GET is read.
        log.warning("a malformed request was refused: %s", exc)
        return error_response("invalid_request", f"The request is malformed: {exc}", 400)
    if isinstance(exc, DataError):
        log.warning("the database refused a value of a request: %s", exc)
        return error_response("invalid_request", "The request carries a value the database "
                              "cannot store.", 400)
    request = context.get("request")
    log.error("unexpected error answering %s %s", getattr(request, "method", "?"),
              getattr(request, "path", "?")[:200], exc_info=exc)
    return error_response("server_error", "The server failed to answer this request; the "
                          "failure was logged.", 500)
