"""Pause tokens and watch tickets, on ``django.core.signing``.

A pause token is an HMAC-SHA256-signed, expiring claim set naming one pause
(``jti``). It is never stored: the database holds the pause, the holder holds
the credential. Signed payloads are readable by whoever holds them, so the
claims carry a keyed hash of the scope key, never the key (rule C4).
``SECRET_KEY_FALLBACKS`` is honoured for signatures and scope hashes alike,
so rotating the secret does not strand pending pauses.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
import uuid
from dataclasses import asdict, dataclass, fields
from typing import Any

from django.conf import settings as django_settings
from django.core import signing
from django.utils.crypto import constant_time_compare, salted_hmac

from .exceptions import InvalidPauseToken, PauseTokenExpired

TOKEN_SALT = "symfonic_django.pause-token"
SCOPE_SALT = "symfonic_django.scope-hash"
PIN_SALT = "symfonic_django.pin-hash"
TICKET_SALT = "symfonic_django.watch-ticket"

#: Tokens longer than this are refused before any cryptography runs.
MAX_TOKEN_LENGTH = 2048
#: Watch tickets let a client follow one run's stream for this long.
TICKET_MAX_AGE = 3600

_FIELDS = ("jti", "run_id", "root_run_id", "scope_hash", "session_id", "thread_id",
           "checkpoint_id", "pin_hash", "kind", "iat", "exp")
#: Claims that name rows by id: canonical UUID text, as ``str(uuid)`` writes it.
_ID_FIELDS = ("jti", "run_id", "root_run_id")
#: Text no claim may hold: a NUL or a lone surrogate could not be compared with a stored
#: column, and no token this app mints has one.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class PauseClaims:
    """What a pause token asserts. Readable by its holder: nothing secret."""

    jti: str
    run_id: str
    root_run_id: str
    scope_hash: str
    session_id: str
    thread_id: str
    checkpoint_id: str | None
    pin_hash: str
    kind: str
    iat: int
    exp: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _signer() -> signing.Signer:
    return signing.Signer(salt=TOKEN_SALT, algorithm="sha256")


def _keyed_hash(salt: str, value: str, secret: str | None = None) -> str:
    return salted_hmac(salt, value, secret=secret, algorithm="sha256").hexdigest()


def scope_hash(key: str) -> str:
    """The keyed hash of a scope key that goes into a token (rule C4)."""
    return _keyed_hash(SCOPE_SALT, key)


def scope_hash_matches(key: str, digest: str) -> bool:
    """Constant-time check of ``digest`` against the current and fallback keys."""
    secrets = [django_settings.SECRET_KEY, *getattr(django_settings, "SECRET_KEY_FALLBACKS", [])]
    return any(constant_time_compare(_keyed_hash(SCOPE_SALT, key, s), digest) for s in secrets)


def pin_hash(pin: Any) -> str:
    if pin is None:
        return ""
    return _keyed_hash(PIN_SALT, json.dumps(pin, sort_keys=True, default=str))


def mint_token(claims: PauseClaims) -> str:
    return _signer().sign_object([getattr(claims, f) for f in _FIELDS])


def verify_token(token: Any, *, now: float | None = None) -> PauseClaims:
    """Authenticate ``token`` and return its claims.

    Raises ``InvalidPauseToken`` (malformed, oversized, tampered, wrong salt or
    key) or ``PauseTokenExpired``. Nothing else is consulted: no database row,
    no scope, so a bad token never reaches a deployment hook (rule C2).
    """
    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_LENGTH:
        raise InvalidPauseToken("The pause token is malformed.")
    try:
        values = _signer().unsign_object(token)
    except (signing.BadSignature, ValueError, UnicodeDecodeError) as exc:
        raise InvalidPauseToken("The pause token's signature does not verify.") from exc
    if not isinstance(values, list) or len(values) != len(_FIELDS):
        raise InvalidPauseToken("The pause token's claims are malformed.")
    claims = PauseClaims(*values)
    if not _well_typed(claims):
        raise InvalidPauseToken("The pause token's claims are malformed.")
    if claims.exp <= (time.time() if now is None else now):
        raise PauseTokenExpired()
    return claims


def _is_id(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


def _well_typed(claims: PauseClaims) -> bool:
    """Every claim of the type this app mints; the ids canonical UUIDs.

    A signature proves who signed, not what: claims signed with a leaked or
    test key, or by an older release, must still be refused as a token
    (``invalid_token``) rather than reach a query as a malformed id.
    """
    for field in fields(PauseClaims):
        value = getattr(claims, field.name)
        if field.name in ("iat", "exp"):
            if not isinstance(value, int) or isinstance(value, bool):
                return False
        elif field.name == "checkpoint_id" and value is None:
            continue
        elif not isinstance(value, str) or _UNSTORABLE.search(value):
            return False
    return all(_is_id(getattr(claims, name)) for name in _ID_FIELDS)


def claimed_pause_id(token: Any) -> str | None:
    """The pause a token *claims* to name, read without verifying it; ``None`` if none.

    Only for counting failed attempts per pause: nothing read here is trusted.
    A token is a ``Signer.sign_object`` value, ``<urlsafe base64 of the JSON
    claims>:<signature>`` (Django documents that signed values are readable,
    not encrypted), so the ``jti`` of a forged token is as readable as a real one's.
    """
    if not isinstance(token, str) or len(token) > MAX_TOKEN_LENGTH or ":" not in token:
        return None
    payload = token.rsplit(":", 1)[0]
    try:
        values = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (binascii.Error, ValueError):
        return None
    if not isinstance(values, list) or not values or not _is_id(values[0]):
        return None
    jti: str = values[0]
    return jti


@dataclass(frozen=True, slots=True)
class WatchTicket:
    """What a watch ticket asserts: whom it was issued to, and which run tree it opens.

    Exactly one of ``user_pk`` (the user it was issued to) and ``pause_id``
    (for an anonymous ``resume/``: the spent pause it came from) is set. It
    opens ``run_id`` (the run it was issued for) and, for a user, any run of the
    same tree (``root_run_id``). It proves nothing else: whether its holder may
    still watch is decided afresh at every connect (``consumers``).
    """

    root_run_id: str
    run_id: str
    user_pk: str | None
    pause_id: str | None


_TICKET_USER = "user"
_TICKET_PAUSE = "pause"


def _ticket_signer() -> signing.TimestampSigner:
    return signing.TimestampSigner(salt=TICKET_SALT, algorithm="sha256")


def mint_watch_ticket(run: Any, *, user: Any = None, pause_id: Any = None) -> str:
    """A short-lived credential to watch ``run``'s tree, issued to ``user`` or, for an
    anonymous ``resume/``, bound to the spent pause ``pause_id`` (exactly one of them).

    ``run`` is a ``Run`` (anything with ``pk`` and ``root_id``). The ticket is
    signed, not encrypted: it names ids, nothing secret.
    """
    if (user is None) == (pause_id is None):
        raise ValueError("A watch ticket names either a user or a spent pause.")
    subject = ([_TICKET_USER, str(user.pk)] if user is not None
               else [_TICKET_PAUSE, str(pause_id)])
    ticket = _ticket_signer().sign_object([str(run.root_id), str(run.pk), *subject])
    if len(ticket) > MAX_TOKEN_LENGTH:  # a user model with a very long primary key
        raise ValueError("This user's watch ticket would be longer than MAX_TOKEN_LENGTH.")
    return ticket


def _are_ticket_claims(values: Any) -> bool:
    """Whether ``values`` are a ticket's four claims: texts a column can store, the first
    two (the root run and the run) ids."""
    return (isinstance(values, list) and len(values) == 4
            and all(isinstance(v, str) and v and not _UNSTORABLE.search(v) for v in values)
            and _is_id(values[0]) and _is_id(values[1]))


def read_watch_ticket(ticket: Any, *, max_age: int = TICKET_MAX_AGE) -> WatchTicket | None:
    """The claims of a ticket this deployment issued within ``max_age`` seconds; ``None``
    for anything else (malformed, oversized, tampered, expired, or not a ticket)."""
    if not isinstance(ticket, str) or not ticket or len(ticket) > MAX_TOKEN_LENGTH:
        return None
    try:
        values = _ticket_signer().unsign_object(ticket, max_age=max_age)
    except (signing.BadSignature, ValueError, UnicodeDecodeError):
        return None
    if not _are_ticket_claims(values):
        return None
    root_run_id, run_id, kind, subject = values
    if kind == _TICKET_USER:
        return WatchTicket(root_run_id, run_id, user_pk=subject, pause_id=None)
    if kind == _TICKET_PAUSE and _is_id(subject):
        return WatchTicket(root_run_id, run_id, user_pk=None, pause_id=subject)
    return None
