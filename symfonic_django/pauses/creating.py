"""Creating a pause: its row, its claims (the token is minted from them), its approvers."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from .. import hitl, jsontext, signals
from ..binding import PauseBinding
from ..conf import settings
from ..exceptions import InteractionConfigurationError, InvalidProposal, InvalidRequest
from ..models import Pause, PauseKind, PauseSearch, Run
from ..scopes import scope_key
from ..tokens import PauseClaims, mint_token, pin_hash, scope_hash

#: The most approvers a policy may ask for (``Pause.approvals_needed`` is a small integer).
MAX_APPROVERS = 20


def claims_for(pause: Pause) -> PauseClaims:
    """The claims of ``pause``, rebuilt from its row (the token is never stored)."""
    return PauseClaims(
        jti=str(pause.id), run_id=pause.bound_run_id, root_run_id=pause.bound_root_run_id,
        scope_hash=scope_hash(pause.scope_key), session_id=pause.session_id,
        thread_id=pause.thread_id, checkpoint_id=pause.checkpoint_id, pin_hash=pause.pin_hash,
        kind=pause.kind, iat=int(pause.created_at.timestamp()),
        # Rounded up: the token never dies before the row; the row's expiry is exact.
        exp=math.ceil(pause.expires_at.timestamp()),
    )


def token_for(pause: Pause) -> str:
    return mint_token(claims_for(pause))


def create_pause(
    *, run: Run, binding: PauseBinding, kind: str, prompt: Any, answer_schema: Any = None,
    ttl: float | timedelta | None = None, idempotency_key: str | None = None,
) -> tuple[Pause, bool]:
    """Persist a pause of ``run`` (or return the one with the same idempotency key).

    An approval whose action args do not fit their own ``args_schema`` is refused
    with ``InvalidProposal`` before anything is written.
    """
    prompt, digest = _checked_prompt(kind, prompt, answer_schema, idempotency_key)
    root_run_id = run.root_id or run.id
    if idempotency_key:
        existing = _existing(root_run_id, idempotency_key)
        if existing is not None:
            return existing, False
    seconds = _ttl_seconds(ttl)
    now = timezone.now()
    pause = Pause(
        run=run, root_run_id=root_run_id,
        scope_key=scope_key(binding.scope) if binding.scope is not None else run.scope_key,
        kind=kind, prompt=prompt, action_digest=digest, answer_schema=answer_schema,
        pin_hash=pin_hash(binding.pin), session_id=binding.session_id,
        thread_id=binding.thread_id, checkpoint_id=binding.checkpoint_id,
        idempotency_key=idempotency_key or "", bound_run_id=binding.run_id,
        bound_root_run_id=binding.root_run_id, created_at=now,
        expires_at=now + timedelta(seconds=seconds),
    )
    pause.approvals_needed = approvals_needed(pause)
    try:
        with transaction.atomic():
            pause.save(force_insert=True)
            PauseSearch.objects.create(pause=pause, text=hitl.search_text(
                kind, prompt, binding.session_id, binding.thread_id))
            signals.send_on_commit(signals.pause_requested, Pause, pause=pause)
    except IntegrityError:
        # A concurrent re-execution of the same step created it first.
        existing = _existing(pause.root_run_id, idempotency_key)
        if existing is None:
            raise
        return existing, False
    return pause, True


def _checked_prompt(kind: str, prompt: Any, answer_schema: Any,
                    idempotency_key: str | None) -> tuple[Any, str]:
    """The prompt of a pause of ``kind`` as it is stored, and its action digest (an
    approval's; a question has none); refused before anything is written."""
    if kind not in PauseKind.values:
        raise InvalidRequest(f"kind must be one of {PauseKind.values}, not {kind!r}.")
    jsontext.refuse_unstorable([prompt, answer_schema, idempotency_key or ""],
                               "The pause's prompt",
                               InvalidProposal if kind == PauseKind.APPROVAL else InvalidRequest)
    if kind == PauseKind.APPROVAL:
        prompt = hitl.validate_proposal(prompt)
        return prompt, hitl.action_digest(prompt)
    hitl.check_schema(answer_schema)
    return prompt, ""


def _existing(root_run_id: Any, idempotency_key: str | None) -> Pause | None:
    """The pause of the run tree ``root_run_id`` created with ``idempotency_key``, if any."""
    return Pause.objects.filter(root_run_id=root_run_id,
                                idempotency_key=idempotency_key).first()


def _ttl_seconds(ttl: float | timedelta | None) -> float:
    """A pause's time to live in seconds (``TOKEN_MAX_AGE`` by default); positive."""
    ttl = settings.TOKEN_MAX_AGE if ttl is None else ttl
    seconds = ttl.total_seconds() if isinstance(ttl, timedelta) else float(ttl)
    if seconds <= 0:
        raise InvalidRequest("A pause's ttl must be positive.")
    return seconds


def approvals_needed(pause: Pause) -> int:
    """How many distinct people must approve ``pause``: ``APPROVAL_POLICY``'s say, else 1."""
    policy = settings.APPROVAL_POLICY
    if pause.kind != PauseKind.APPROVAL or policy is None:
        return 1
    needed = policy(pause)
    if not isinstance(needed, int) or isinstance(needed, bool) or not 1 <= needed <= MAX_APPROVERS:
        raise InteractionConfigurationError(
            f"SYMFONIC['APPROVAL_POLICY'] must return a whole number from 1 to "
            f"{MAX_APPROVERS}, not {needed!r}.")
    return needed
