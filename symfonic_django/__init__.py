"""symfonic_django: durable, single-use, tenant-scoped human pauses for agent runs.

The public API is imported lazily so that ``import symfonic_django`` works
before Django's app registry is ready (for example in settings files); type
checkers read the same names from the ``TYPE_CHECKING`` imports below.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .agent_protocol import AnsweredPause, ReviewedAction
    from .binding import PauseBinding, current_run_binding
    from .continuation import HostContinuationFactory, HumanContinuationService, human_continuation
    from .exceptions import InteractionConfigurationError
    from .runs import LeaseLost, retry, start_run
    from .tokens import PauseClaims, mint_watch_ticket
    from .turns import afenced, current_turn, fenced, request_pause

__all__ = [
    "PauseBinding", "current_run_binding", "InteractionConfigurationError", "PauseClaims",
    "request_pause", "HumanContinuationService", "HostContinuationFactory",
    "human_continuation", "start_run", "retry", "fenced", "afenced", "LeaseLost",
    "current_turn", "ReviewedAction", "AnsweredPause", "mint_watch_ticket",
]

_EXPORTS = {
    "PauseBinding": "binding", "current_run_binding": "binding",
    "InteractionConfigurationError": "exceptions", "PauseClaims": "tokens",
    "request_pause": "turns", "HumanContinuationService": "continuation",
    "HostContinuationFactory": "continuation", "human_continuation": "continuation",
    "start_run": "runs", "retry": "runs", "fenced": "turns", "afenced": "turns",
    "LeaseLost": "runs", "current_turn": "turns", "ReviewedAction": "agent_protocol",
    "AnsweredPause": "agent_protocol", "mint_watch_ticket": "tokens",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'symfonic_django' has no attribute {name!r}")
    return getattr(import_module(f"symfonic_django.{module}"), name)
