"""``pauses/``: the pauses a caller may review, answering one, claiming one."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer

from ... import pauses
from ...exceptions import InvalidRequest
from ...models import AnsweredVia, Pause, PauseKind, PauseStatus
from ...scopes import readable_pauses, reviewer_scope_keys
from .. import serializers as s
from ..idempotency import idempotent
from ..permissions import CanAnswerPauses
from .base import accepted_resolution, read_body
from .lists import ListAndReadViewSet, list_and_read
from .schema import CLAIMED, answer_schema, described

if TYPE_CHECKING:
    from rest_framework.decorators import ViewSetAction

F = TypeVar("F", bound=Callable[..., Any])

#: Who may answer or claim a pause: a login with the ``answer_pause`` permission.
ANSWERING = [IsAuthenticated, CanAnswerPauses]


def answering(serializer: type[Serializer[Any]],
              summary: str) -> Callable[[F], ViewSetAction[F]]:
    """A ``pauses/{id}/<name>/`` POST answering the pause with a ``serializer`` body."""
    def decorate(view: F) -> ViewSetAction[F]:
        return answer_schema(serializer, summary)(
            action(detail=True, methods=["post"], permission_classes=ANSWERING)(view))
    return decorate


def claiming(summary: str) -> Callable[[F], ViewSetAction[F]]:
    """A ``pauses/{id}/<name>/`` POST about the pause's claim, without a body."""
    def decorate(view: F) -> ViewSetAction[F]:
        return extend_schema(summary=summary, description=described(view), request=None,
                             responses=CLAIMED)(
            action(detail=True, methods=["post"], permission_classes=ANSWERING)(view))
    return decorate


@list_and_read(
    s.PauseSerializer,
    [OpenApiParameter("status", str, enum=PauseStatus.values),
     OpenApiParameter("kind", str, enum=PauseKind.values),
     OpenApiParameter("run", str, description="Only the pauses of this run.")],
    listing=("List the pauses you may review",
             "The pauses of every scope the caller may review, newest first, as a cursor page "
             "`{next, previous, results}`: follow `next` and `previous` as given. Filter by "
             "`status` (e.g. `pending`), `kind` and `run`. A pause of another scope is never "
             "listed."),
    reading=("Read one pause",
             "One pause: what the agent asks (`prompt`, and `answer_schema` for a question), its "
             "status and expiry, its scope, and once answered who answered what and the run that "
             "continues. A pause of a scope the caller may not review is 404 `not_found`, "
             "exactly as an unknown id."))
class PauseViewSet(ListAndReadViewSet[Pause]):
    """Pauses the caller may review, and the three ways to answer one."""

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

    def _transition(self, request: Request, body: type[Serializer[Any]],
                    move: Callable[..., pauses.Resolution]) -> Response:
        """Look the pause up in the caller's scopes, then ``move`` it through the state machine.

        ``move(pause_id, data, common)`` calls one transition of ``pauses``;
        ``common`` is the caller, the surface and the scopes they may see.
        """
        pause = self.get_object()
        common = {"actor": request.user, "via": AnsweredVia.API, "visible": self._visible()}

        def handle() -> Response:
            return accepted_resolution(move(pause.pk, read_body(body, request), common),
                                       caller=request.user)

        return idempotent(request, self._caller(), handle)

    @answering(s.AnswerRequestSerializer, "Answer a pause in full")
    def answer(self, request: Request, pk: str | None = None) -> Response:
        """Answer an approval with a `HITLResponse` (one decision per action request, each one
        its action allows: approve, edit, reject or respond) or a question with a value that
        fits its `answer_schema`. Needs the `answer_pause` permission. A pause answers once: a
        second answer is 409 `already_answered`. The 202 names the continuation run and its
        stream when this was the run's last pending pause, else they are null."""
        return self._transition(request, s.AnswerRequestSerializer, lambda pk, data, common:
                                pauses.answer_pause(pk, data["answer"], **common))

    @answering(s.ApproveRequestSerializer, "Approve every action of a pause")
    def approve(self, request: Request, pk: str | None = None) -> Response:
        """Approve each action the agent proposed, with an optional `comment`. `edited_args`
        replaces the arguments of a pause with one action (checked against the action's
        `args_schema`), which records an edit. Needs the `answer_pause` permission; only for
        approvals (a question is 400 `invalid_answer`)."""
        return self._transition(request, s.ApproveRequestSerializer, lambda pk, data, common:
                                pauses.approve(pk, comment=data.get("comment", ""),
                                               edited_args=data.get("edited_args"), **common))

    @answering(s.RejectRequestSerializer, "Reject every action of a pause")
    def reject(self, request: Request, pk: str | None = None) -> Response:
        """Reject each action the agent proposed, with the optional `comment` as the message the
        agent reads; the agent continues knowing it was refused and performs none of them. Needs
        the `answer_pause` permission; only for approvals."""
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

    @claiming("Claim a pause: tell other reviewers you are reviewing it")
    def claim(self, request: Request, pk: str | None = None) -> Response:
        """Marks the pause as being reviewed by the caller until `CLAIM_SECONDS` from now (other
        reviewers' pages say "Being reviewed by alice"); the holder claims again to extend it. A
        claim informs, it locks nothing: anyone who may answer still can. Needs the
        `answer_pause` permission. Refused with 409 `claimed` while another reviewer's claim has
        not lapsed, and for a closed pause (409 `already_answered`, 410 `expired`). Audited."""
        return self._claim(pauses.claim)

    @claiming("Release your claim on a pause")
    def release(self, request: Request, pk: str | None = None) -> Response:
        """Ends the caller's claim before it lapses. Refused with 409 `not_claimed` when the
        caller holds no live claim on it. Audited."""
        return self._claim(pauses.release)
