"""symfonic_django: durable, single-use, tenant-scoped human pauses for agent runs.

The public API is imported lazily so that ``import symfonic_django`` works
before Django's app registry is ready (for example in settings files).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "PauseBinding", "current_run_binding", "InteractionConfigurationError", "PauseClaims",
    "request_pause", "HumanContinuationService", "HostContinuationFactory",
    "human_continuation", "start_run",
]

_EXPORTS = {
    "PauseBinding": "binding", "current_run_binding": "binding",
    "InteractionConfigurationError": "exceptions", "PauseClaims": "tokens",
    "request_pause": "pauses", "HumanContinuationService": "continuation",
    "HostContinuationFactory": "continuation", "human_continuation": "continuation",
    "start_run": "runner",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'symfonic_django' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"symfonic_django.{module}"), name)
