"""Composing a continuation service the way a host does, and reading its stream.

Shared by the specification tests of the seed contract (``test_binding``,
``test_continuation``, ``test_bad_input``). pytest-asyncio is not a
dependency: an async stream is drained from sync test code through
``async_to_sync``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from typing import Any

from asgiref.sync import async_to_sync

from symfonic_django.conf import settings
from symfonic_django.continuation import (
    DjangoHumanInteraction,
    HumanContinuationService,
    human_continuation,
)
from symfonic_django.scopes import scope_for_claims as default_scope_for_claims

APPROVE = {"decisions": [{"type": "approve"}]}


def registered_agent(name: str) -> Callable[[Any], Any]:
    """The host's ``agent_for(scope)``: the agent registered as ``name``."""

    async def agent_for(scope: Any) -> Any:
        return settings.agent_factory(name)(scope)

    return agent_for


def compose(*, scope_for_claims: Callable[..., Any] = default_scope_for_claims,
            agent_for: Callable[[Any], Any] | None = None,
            capability: Any = None) -> HumanContinuationService:
    """``human_continuation(...)`` bound to an agent lookup, as a host composes it."""
    factory = human_continuation(capability=capability or DjangoHumanInteraction(),
                                 scope_for_claims=scope_for_claims)
    return factory.bind(agent_for or registered_agent("echo"))


def drain(stream: AsyncIterator[Any],
          stop_when: Callable[[Any], bool] | None = None) -> list[Any]:
    """Read ``stream`` to its end (or until ``stop_when(event)``), closing it either way."""

    async def consume() -> list[Any]:
        seen: list[Any] = []
        async with aclosing(stream):  # type: ignore[type-var]
            async for event in stream:
                seen.append(event)
                if stop_when is not None and stop_when(event):
                    break
        return seen

    return async_to_sync(consume)()


def resume(token: str, answer: Any = APPROVE, *, service: HumanContinuationService | None = None,
           **kwargs: Any) -> list[Any]:
    """Redeem ``token`` with ``answer`` and return every event of the resumed turn."""
    return drain((service or compose()).resume_stream(token, answer, **kwargs))
