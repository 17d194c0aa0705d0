"""What every transition of a pause checks first: that the caller sees it, that it is
still open, and that whoever answers may; and the words of the refusals."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from django.contrib.auth import get_user_model

from ..datetimes import format_datetime
from ..exceptions import (
    AlreadyAnswered,
    NotFound,
    PauseCancelled,
    PauseExpired,
    PermissionDenied,
)
from ..models import Pause, PauseStatus
from ..scopes import may_answer, may_read_pauses


def label(actor: Any) -> str:
    """How the audit names ``actor``: a user's username, anything else as text."""
    if actor is None:
        return ""
    return actor.get_username() if hasattr(actor, "get_username") else str(actor)


def clock(moment: datetime) -> str:
    """A time of day in a refusal's words, as every page shows times: ``07:40:00 UTC``."""
    return format_datetime(moment, "time")


def refuse_closed(pause: Pause, now: datetime, *, caller: Any = None) -> None:
    """Raise the refusal for a pause that can no longer be answered.

    Who answered, and when, is told only to a ``caller`` who may read the pause's
    scope: a token holder who may not learns only that it was answered.
    """
    when = clock(pause.answered_at) if pause.answered_at else ""
    if pause.status == PauseStatus.ANSWERED:
        if not may_read_pauses(caller, pause.scope_key):
            raise AlreadyAnswered("This pause has already been answered.")
        who = pause.answered_by.get_username() if pause.answered_by else pause.answered_via
        raise AlreadyAnswered(f"Already answered by {who} at {when}.")
    if pause.status == PauseStatus.CANCELLED:
        raise PauseCancelled(f"This pause was cancelled at {when}.")
    if pause.status == PauseStatus.EXPIRED or pause.expires_at <= now:
        raise PauseExpired(f"This pause expired at {clock(pause.expires_at)}.")


def lookup(pause_id: Any, visible: Any) -> Pause:
    """The pause ``pause_id`` among the scopes ``visible``; ``NotFound`` otherwise."""
    try:
        UUID(str(pause_id))
    except ValueError:
        raise NotFound("No such pause.") from None
    pause = Pause.objects.filter(pk=pause_id).in_scopes(visible).first()
    if pause is None:
        raise NotFound("No such pause.")
    return pause


def reviewer_now(actor: Any, key: str) -> bool:
    """Whether ``actor`` is, as the database has it now, an active user who may answer the
    pauses of scope ``key``.

    The user is read again rather than trusted as the caller holds it: a reviewer
    deactivated or revoked since the caller loaded them (a page opened before, a
    long bulk action, a process's cached permissions) no longer answers.
    """
    if getattr(actor, "pk", None) is None or not getattr(actor, "is_authenticated", False):
        return False
    user = get_user_model().objects.filter(pk=actor.pk).first()
    return bool(user is not None and user.is_active and may_answer(user, key))


def reviewers_now(user_ids: set[Any], key: str) -> set[Any]:
    """Those of ``user_ids`` who are, as the database has it now, active users who may
    answer the pauses of scope ``key``."""
    users = get_user_model().objects.filter(pk__in=user_ids - {None}, is_active=True)
    return {user.pk for user in users if may_answer(user, key)}


def refuse_unless_reviewer(pause: Pause, actor: Any, *, counts: bool) -> None:
    """Refuse an answer from anyone but a reviewer of the pause's scope, as of now.

    Asked of every answer through a reviewer surface, and of every answer that
    would count toward a quorum whatever its surface: a token alone, a token held by
    a user without the answer permission, or a user of another scope never counts.
    """
    if reviewer_now(actor, pause.scope_key):
        return
    if counts:
        who = ("an answer that names nobody (a token alone)"
               if getattr(actor, "pk", None) is None else "your answer")
        raise PermissionDenied(
            f"This approval needs {pause.approvals_needed} different reviewers who may answer "
            f"this pause; {who} cannot count as one of them.")
    raise PermissionDenied("You may not answer this pause.")
