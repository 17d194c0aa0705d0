"""Driving a run's turns in-process, as a worker would, and reading what they left: the
helpers the adapters' tests share (LangGraph, Pydantic AI, the OpenAI Agents SDK)."""

from __future__ import annotations

from typing import Any

from symfonic_django.models import Pause, Run, TurnEvent
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run


def run_turn(agent: str, input: Any = None, *, thread_id: str = "", scope: str = "acme",
             started_by: Any = None) -> Run:
    """Start a run and drive its first turn in-process, as a worker would."""
    run = start_run(agent, input if input is not None else {}, scope=scope,
                    thread_id=thread_id, started_by=started_by, dispatch=False)
    execute_run(run.pk)
    run.refresh_from_db()
    return run


def continue_run(run_id: Any) -> Run:
    """Drive a queued continuation (or a retried run) in-process."""
    execute_run(run_id)
    return Run.objects.get(pk=run_id)


def pauses_of(run: Run) -> list[Pause]:
    return list(Pause.objects.filter(run=run).order_by("created_at"))


def events_of(run: Run) -> list[tuple[str, dict[str, Any]]]:
    return [(e.type, e.data) for e in TurnEvent.objects.filter(run=run).order_by("seq")]


def types_of(run: Run) -> list[str]:
    return [kind for kind, _ in events_of(run)]
