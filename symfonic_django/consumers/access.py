"""Who may open a run's stream: the query, watch tickets, and the close codes of a refusal.

A socket names its run in the path and may carry ``?after=N`` and ``?ticket=...``;
the read rule is ``scopes.may_read_run``, and whether tokens go with the events is
``delivery.may_hold_tokens``, both read afresh whenever a watcher's access is.
"""

from __future__ import annotations

import re
import uuid
from typing import Any
from urllib.parse import parse_qsl

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError

from ..delivery import may_hold_tokens
from ..models import Pause, Run
from ..scopes import is_active_user, may_read_run, reads_anything
from ..tokens import MAX_TOKEN_LENGTH, WatchTicket

CLOSE_NORMAL = 1000
CLOSE_BAD_REQUEST = 4400
CLOSE_NOT_AUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
CLOSE_TOO_FAR_BEHIND = 4408

#: ``after`` is a ``seq``, a positive 32-bit integer column: ASCII digits, at most this.
MAX_AFTER = 2**31 - 1
#: A watch ticket is ``<claims>:<timestamp>:<signature>`` in URL-safe base64.
TICKET = re.compile(r"[A-Za-z0-9_:-]+")
QUERY_KEYS = frozenset({"after", "ticket"})


class BadQuery(ValueError):
    """A websocket query this consumer cannot read; its message is the close reason."""


def read_query(raw: bytes) -> tuple[int, str]:
    """``(after, ticket)`` from a query string; ``BadQuery`` says why it cannot be read.

    Strict, since a query is typed by hand or by an attacker: ASCII only, each
    known parameter at most once, ``after`` ASCII digits within a ``seq``, and a
    ticket made of the characters a ticket is made of. Unknown parameters are
    ignored, as a URL's tracking junk would be.
    """
    try:
        text = raw.decode("ascii")
        pairs = parse_qsl(text, keep_blank_values=True, strict_parsing=False,
                          max_num_fields=20, errors="strict")
    except (UnicodeDecodeError, ValueError):
        raise BadQuery("The query string is not ASCII and URL-encoded.") from None
    seen: dict[str, str] = {}
    for key, value in pairs:
        if key in QUERY_KEYS and key in seen:
            raise BadQuery(f"The query gives {key} more than once.")
        seen[key] = value
    after = seen.get("after", "0")
    if not (after.isascii() and after.isdigit() and len(after) <= 10 and int(after) <= MAX_AFTER):
        raise BadQuery(f"after must be a whole number from 0 to {MAX_AFTER}.")
    ticket = seen.get("ticket", "")
    if ticket and (len(ticket) > MAX_TOKEN_LENGTH or not TICKET.fullmatch(ticket)):
        raise BadQuery("The ticket is malformed.")
    return int(after), ticket


def authorize(user: Any, run: Run | None) -> int | None:
    """A close code refusing ``user``, or ``None`` when they may watch ``run``.

    The read rule is ``scopes.may_read_run``. A run the user may not read is
    4404, exactly as an unknown one (no existence leak); a user who may read no
    run at all is 4403, whatever run they ask for.
    """
    if not is_active_user(user):
        return CLOSE_NOT_AUTHENTICATED
    if run is not None and may_read_run(user, run):
        return None
    return CLOSE_NOT_FOUND if reads_anything(user) else CLOSE_FORBIDDEN


def active_user(user_pk: Any) -> Any:
    """The active user of primary key ``user_pk`` (as a ticket names it), or ``None``."""
    try:
        return get_user_model().objects.filter(pk=user_pk, is_active=True).first()
    except (ValueError, ValidationError):  # not a key of this user model
        return None


def access(user_pk: Any, run: Run) -> tuple[int | None, bool]:
    """A watcher's access now: a close code refusing them (or ``None``), and whether they
    are still sent tokens. Read afresh: a user removed from the scope, deactivated or
    stripped of a permission loses it at once, whether they watch with their session or
    with a ticket issued to them."""
    user = active_user(user_pk)
    if user is None:
        return CLOSE_NOT_AUTHENTICATED, False
    code = authorize(user, run)
    return code, code is None and may_hold_tokens(user, run)


def ticket_opens(ticket: WatchTicket, run_id: uuid.UUID, run: Run | None) -> bool:
    """Whether ``ticket`` opens ``run_id``: the run it was issued for, or (for a user's
    ticket) a run of the same tree; a spent pause's ticket opens only its continuation."""
    if str(run_id) == ticket.run_id:
        return True
    if run is None or ticket.user_pk is None:
        return False
    return str(run.root_id) == ticket.root_run_id


def watcher(run: Run | None, run_id: uuid.UUID, user: Any,
            ticket: WatchTicket | None) -> tuple[int | None, Any]:
    """Who watches: a close code refusing them (or ``None``), and the user to judge
    (``None`` for the holder of a spent pause's ticket, who is sent no token)."""
    if ticket is None:
        return authorize(user, run), user
    if not ticket_opens(ticket, run_id, run):
        return CLOSE_NOT_AUTHENTICATED, None  # the ticket is not for this run
    if ticket.pause_id is None:
        holder = active_user(ticket.user_pk)
        return (authorize(holder, run) if holder is not None else CLOSE_NOT_AUTHENTICATED,
                holder)
    if run is None:
        return CLOSE_NOT_FOUND, None
    spent = Pause.objects.filter(pk=ticket.pause_id, continuation_id=run.pk).exists()
    return (None if spent else CLOSE_FORBIDDEN), None
