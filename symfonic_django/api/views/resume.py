"""``resume/``: answering a pause with its signed token, the token being the credential."""

from __future__ import annotations

import hashlib
from typing import Any

from asgiref.sync import async_to_sync
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from ...continuation import redeem_token
from ...exceptions import (
    InvalidPauseToken,
    LineageRefused,
    PauseTokenExpired,
    ScopeMismatch,
    ScopeUnknown,
)
from ...exceptions import (
    NotFound as PauseNotFound,
)
from ...scopes import may_read_pauses
from ...tokens import claimed_pause_id
from .. import serializers as s
from ..idempotency import idempotent
from ..throttling import FailedTokenAttempts, ResumeThrottle
from .base import SymfonicAPIView, accepted_resolution, read_body
from .schema import answer_schema

#: Refusals of ``resume/`` that say the token is no good (not the answer, not the pause's
#: state): each counts against the pause the token names (``FailedTokenAttempts``).
TOKEN_FAILURES = (InvalidPauseToken, PauseTokenExpired, ScopeMismatch, ScopeUnknown,
                  LineageRefused, PauseNotFound)



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

    @answer_schema(s.ResumeRequestSerializer, "Answer a pause with its signed token")
    def post(self, request: Request) -> Response:
        """The pause's signed, single-use token is the credential: no login is needed (one that
        is sent is recorded as the one who answered). The answer is as for
        `pauses/{id}/answer/`. A bad, expired or foreign token is refused and changes nothing;
        rate limited per client (429 `throttled`). The pause's `scope` in the 202 is null unless
        the caller may review it."""
        data = read_body(s.ResumeRequestSerializer, request)
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
