"""The receivers of the app's signals: one delivery row per target of each event.

The signals arrive after the transition committed, through ``send_robust``: a
receiver that fails is logged and the transition stands.
"""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from .. import signals
from ..models import Pause, Run
from .outbox import announce
from .payloads import pause_data, run_data
from .settings import NotifySettings, notify_settings
from .types import PAUSE_ANSWERED, PAUSE_EXPIRED, PAUSE_REQUESTED, RUN_COMPLETED, RUN_FAILED


@receiver(signals.pause_requested, dispatch_uid="symfonic_django.notifications.requested")
def _pause_requested(sender: Any, pause: Pause, **arguments: Any) -> None:
    config = notify_settings()
    announce(PAUSE_REQUESTED, pause_data(pause, config), run_id=pause.run_id,
             scope_key=pause.scope_key, pause_id=pause.pk, config=config)


@receiver(signals.pause_answered, dispatch_uid="symfonic_django.notifications.answered")
def _pause_answered(sender: Any, pause: Pause, decision: Any, continuation: Run | None,
                    **arguments: Any) -> None:
    config = notify_settings()
    if not _has_webhooks(config, PAUSE_ANSWERED, pause.scope_key):
        return
    data = {**pause_data(pause, config), "decision": decision.action,
            "answered_by": decision.actor_label, "answered_via": pause.answered_via,
            "continuation_run_id": str(continuation.pk) if continuation else None}
    announce(PAUSE_ANSWERED, data, run_id=pause.run_id, scope_key=pause.scope_key,
             pause_id=pause.pk, config=config)


@receiver(signals.pause_expired, dispatch_uid="symfonic_django.notifications.expired")
def _pause_expired(sender: Any, pause: Pause, continuation: Run | None,
                   **arguments: Any) -> None:
    config = notify_settings()
    if not _has_webhooks(config, PAUSE_EXPIRED, pause.scope_key):
        return
    data = {**pause_data(pause, config),
            "continuation_run_id": str(continuation.pk) if continuation else None}
    announce(PAUSE_EXPIRED, data, run_id=pause.run_id, scope_key=pause.scope_key,
             pause_id=pause.pk, config=config)


@receiver(signals.run_completed, dispatch_uid="symfonic_django.notifications.completed")
def _run_completed(sender: Any, run: Run, **arguments: Any) -> None:
    config = notify_settings()
    if _has_webhooks(config, RUN_COMPLETED, run.scope_key):
        announce(RUN_COMPLETED, run_data(run, config), run_id=run.pk, scope_key=run.scope_key,
                 config=config)


@receiver(signals.run_failed, dispatch_uid="symfonic_django.notifications.failed")
def _run_failed(sender: Any, run: Run, code: str, message: str, **arguments: Any) -> None:
    config = notify_settings()
    if _has_webhooks(config, RUN_FAILED, run.scope_key):
        data = {**run_data(run, config), "error": {"code": code, "message": message}}
        announce(RUN_FAILED, data, run_id=run.pk, scope_key=run.scope_key, config=config)


def _has_webhooks(config: NotifySettings, event_type: str, scope_key: str) -> bool:
    return any(e.takes(event_type, scope_key) for e in config.webhooks)
