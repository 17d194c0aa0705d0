"""``Idempotency-Key`` as the IETF httpapi idempotency-key draft and Stripe have it.

A key names one request of one caller: the authenticated user, or for an
anonymous ``resume/`` the pause its token names (``views.resume_caller``). A
record belongs to its caller: anyone else sending the same key, path and body
is never replayed its response (which may carry the pause's scope, who
answered, and a watch ticket issued to that caller); their request is judged
on its own. The record is written and committed *before* the work starts,
with a fingerprint of the method, the path and the body:

- a duplicate while the first is in flight gets 409 ``idempotency_in_progress``
  (it never races the first for the pause, so it never sees ``already_answered``);
- a duplicate after the first finished gets the first 2xx again;
- the same key with another method, path or body gets 422 ``idempotency_key_reused``;
- a first request that is refused (any error) deletes its record, so a retry
  may succeed.

A record left in flight by a process that died mid-request is taken over
after ``IN_FLIGHT_SECONDS``; ``symfonic_prune`` deletes records after
``IDEMPOTENCY_RETENTION``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response

from ..exceptions import IdempotencyInProgress, IdempotencyKeyReused, InvalidRequest
from ..models import IdempotentResponse

HEADER = "Idempotency-Key"
#: Stripe's bound; the draft leaves it to the server.
MAX_KEY_LENGTH = 255
#: An answer takes milliseconds; a record in flight for this long lost its process.
IN_FLIGHT_SECONDS = 60


def fingerprint(request: Request) -> str:
    """SHA-256 of the method, the path and the body as canonical JSON."""
    body = json.dumps(request.data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(f"{request.method}\n{request.path}\n{body}".encode()).hexdigest()


def _given_key(request: Request) -> str | None:
    given = request.headers.get(HEADER, "").strip()
    if not given:
        return None
    if len(given) > MAX_KEY_LENGTH or not (given.isascii() and given.isprintable()):
        raise InvalidRequest(f"The {HEADER} header must be 1 to {MAX_KEY_LENGTH} printable "
                             "ASCII characters.")
    return hashlib.sha256(given.encode()).hexdigest()


def _record_or_replay(caller: str, key: str, digest: str) -> IdempotentResponse | Response:
    """Record ``key`` as in flight, or answer for the request that already holds it."""
    for _ in range(2):
        try:
            with transaction.atomic():
                return IdempotentResponse.objects.create(caller=caller, key=key,
                                                         fingerprint=digest)
        except IntegrityError:
            pass
        held = IdempotentResponse.objects.filter(caller=caller, key=key).first()
        if held is None:
            continue  # the holder was refused and let go of the key: record it again
        if held.fingerprint != digest:
            raise IdempotencyKeyReused()
        if held.status is not None:
            return Response(held.body, status=held.status)
        if held.created_at > timezone.now() - timedelta(seconds=IN_FLIGHT_SECONDS):
            raise IdempotencyInProgress()
        # Abandoned in flight by a process that died: let go of it, then record it anew.
        IdempotentResponse.objects.filter(pk=held.pk, status__isnull=True).delete()
    raise IdempotencyInProgress()


def idempotent(request: Request, caller: str, handle: Callable[[], Response]) -> Response:
    """``handle()`` once per ``Idempotency-Key`` of ``caller``; without the header, just once."""
    key = _given_key(request)
    if key is None:
        return handle()
    return once(caller, key, fingerprint(request), handle)


def once(caller: str, key: str, digest: str, handle: Callable[[], Response]) -> Response:
    """``handle()`` once per ``(caller, key)``: the record, the replay and the refusals above.

    ``key`` is a SHA-256 hex digest naming the request (``idempotent`` hashes the
    header; the AG-UI endpoint hashes the resume itself, so a replayed resume is
    one request whatever header it carries) and ``digest`` its fingerprint.
    """
    held = _record_or_replay(caller, key, digest)
    if isinstance(held, Response):
        return held
    try:
        response = handle()
    except BaseException:
        IdempotentResponse.objects.filter(pk=held.pk).delete()
        raise
    if 200 <= response.status_code < 300:
        IdempotentResponse.objects.filter(pk=held.pk).update(
            status=response.status_code, body=response.data)
    else:
        IdempotentResponse.objects.filter(pk=held.pk).delete()
    return response
