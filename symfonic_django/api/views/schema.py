"""The OpenAPI declarations the views share: the error answers, the 202, the claim's 200."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.serializers import Serializer

from .. import serializers as s

F = TypeVar("F", bound=Callable[..., Any])

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



def described(view: Callable[..., Any]) -> str:
    """An endpoint's description: its view's docstring, on one line."""
    return " ".join((view.__doc__ or "").split())


def answer_schema(serializer: type[Serializer[Any]], summary: str) -> Callable[[F], F]:
    """The schema of an endpoint answering a pause: a ``serializer`` body, an optional
    ``Idempotency-Key``, the 202 or an error; described by the view's docstring."""
    def decorate(view: F) -> F:
        return extend_schema(summary=summary, description=described(view), request=serializer,
                             responses=ACCEPTED, parameters=[IDEMPOTENCY_HEADER])(view)
    return decorate
