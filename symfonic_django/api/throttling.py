"""Rate limits of ``resume/``: per client address, and per pause for failed tokens.

Both are counted in the cache ``SYMFONIC["THROTTLE_CACHE"]`` names, which
every process of a deployment must share (Redis in the example): a
per-process cache grants each process a budget of its own (check W007).

The client address is DRF's ``get_ident``, which honours
``REST_FRAMEWORK["NUM_PROXIES"]``: with 0, ``X-Forwarded-For`` is ignored; with
``None`` (DRF's default) a client picks its own address by sending one, so
check W008 asks for the setting.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from django.core.cache import BaseCache, caches
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import ScopedRateThrottle

from ..conf import settings
from ..exceptions import InvalidPauseToken, PauseTokenExpired, Throttled
from ..tokens import claimed_pause_id, verify_token

log = logging.getLogger(__name__)


def throttle_cache() -> BaseCache:
    return caches[settings.THROTTLE_CACHE]


class ResumeThrottle(ScopedRateThrottle):
    """``ScopedRateThrottle`` for ``resume/``, with a default when the project sets no rate."""

    scope_attr = "throttle_scope"
    default_rate = "60/min"

    def __init__(self) -> None:
        # DRF's documented way to count elsewhere than the default cache.
        self.cache = throttle_cache()
        super().__init__()

    def allow_request(self, request: Request, view: Any) -> bool:
        try:
            return super().allow_request(request, view)
        except Exception:  # noqa: BLE001 - any backend's connection error
            # The cache is down (Redis restarting): answering pauses matters more than
            # counting; the token's signature still guards every answer.
            log.warning("rate limit not counted: the throttle cache failed", exc_info=True)
            return True

    def get_rate(self) -> str:
        # Read the rates now, not at import (DRF's THROTTLE_RATES is a class
        # attribute), so a changed REST_FRAMEWORK setting takes effect.
        rate = api_settings.DEFAULT_THROTTLE_RATES.get(self.scope or "")
        return str(rate) if rate else self.default_rate

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        # The identity part is client text when NUM_PROXIES > 0 (an X-Forwarded-For entry):
        # hashed, a key has one length and one alphabet whatever a client sends.
        key = super().get_cache_key(request, view)
        return None if key is None else "symfonic:throttle:" + hashlib.sha256(
            key.encode("utf-8", "surrogatepass")).hexdigest()


class FailedTokenAttempts:
    """Failed ``resume/`` attempts against one pause, from any address, in a window.

    A token names its pause in readable claims, so failures are counted per
    pause whoever sends them and from wherever. Once ``TOKEN_FAILURE_LIMIT``
    failures are counted within ``TOKEN_FAILURE_WINDOW`` seconds, further
    attempts for that pause whose token does not verify are refused 429
    before anything else is looked at. A token that does verify still goes
    through: anybody who knows a pause's id (a view-only reviewer does) could
    otherwise lock its rightful holder out by sending forgeries.
    """

    def __init__(self, token: Any) -> None:
        self.pause_id = claimed_pause_id(token)
        self.key = f"symfonic:failed-token:{self.pause_id}"

    def refuse_when_spent(self, token: Any) -> None:
        """``Throttled`` if the budget is spent and ``token`` does not verify."""
        if self.pause_id is None or settings.TOKEN_FAILURE_LIMIT > self.failures():
            return
        try:
            verify_token(token)
        except InvalidPauseToken:
            window = settings.TOKEN_FAILURE_WINDOW
            raise Throttled(
                f"Too many failed attempts to answer this pause; try again within {window} "
                "seconds.", wait=window) from None
        except PauseTokenExpired:
            return  # genuine, if late: the redeem refuses it as expired

    def failures(self) -> int:
        try:
            return int(throttle_cache().get(self.key) or 0)
        except Exception:  # noqa: BLE001 - as ResumeThrottle: a cache outage counts nothing
            log.warning("failed tokens not read: the throttle cache failed", exc_info=True)
            return 0

    def count(self) -> None:
        """Count one failure; the window starts with the first one."""
        if self.pause_id is None:
            return
        cache, window = throttle_cache(), settings.TOKEN_FAILURE_WINDOW
        try:
            cache.add(self.key, 0, timeout=window)
            try:
                failures = cache.incr(self.key)
            except ValueError:  # the window ended between add() and incr()
                cache.add(self.key, 1, timeout=window)
                failures = 1
        except Exception:  # noqa: BLE001 - as ResumeThrottle: a cache outage counts nothing
            log.warning("failed token not counted: the throttle cache failed", exc_info=True)
            return
        if failures == settings.TOKEN_FAILURE_LIMIT:
            log.warning("pause %s: %d failed token attempts within %d s; further forged "
                        "tokens for it are refused 429", self.pause_id, failures, window)
