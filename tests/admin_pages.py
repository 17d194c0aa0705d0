"""The admin as the tests drive it: a reviewer's logged-in client, a pause's review page,
the messages a response leaves, and pauses to review (a refund agent's, or a row written
directly in any shape)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from symfonic_django import pauses
from symfonic_django.binding import PauseBinding
from symfonic_django.models import Pause, PauseKind, Run, RunStatus
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run


def page(pause: Pause) -> str:
    return reverse("admin:symfonic_django_pause_change", args=[pause.pk])


def login(name: str) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.get(username=name))
    return client


def messages_of(response: Any) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def refund_pause(scope: str = "acme", amount: float = 40, order: str = "A-1") -> Pause:
    """A pending approval from the test app's refund agent (its first turn, in-process)."""
    run = start_run("refund", {"order_id": order, "amount": amount}, scope=scope, dispatch=False)
    assert execute_run(run.pk) == RunStatus.PAUSED
    return Pause.objects.get(run=run)


def bare_pause(scope: str = "acme", *, kind: str = PauseKind.APPROVAL, prompt: Any = None,
               answer_schema: Any = None, agent: str = "refund") -> Pause:
    """A pause row on a paused run, written directly (fast, for shapes the agents don't ask)."""
    run = Run(agent=agent, scope_key=scope, status=RunStatus.PAUSED, input={})
    run.root_id = run.id
    run.save(force_insert=True)
    binding = PauseBinding(pin=None, scope=None, run_id=str(run.id), root_run_id=str(run.id),
                           session_id="", thread_id="", checkpoint_id=None)
    if prompt is None:
        prompt = ({"question": "Which colour?"} if kind == PauseKind.QUESTION else
                  {"action_requests": [{"name": "refund", "args": {"order_id": "B-2", "amount": 5}}]})
    pause, _ = pauses.create_pause(run=run, binding=binding, kind=kind, prompt=prompt,
                                   answer_schema=answer_schema)
    return pause


#: A ship action's schema with nested, bounded and optional arguments (the review page's forms).
SHIPPING = {
    "type": "object",
    "properties": {
        "carrier": {"enum": ["ups", "dhl"]},
        "express": {"type": "boolean"},
        "parcels": {"type": "integer", "minimum": 1, "maximum": 9},
        "address": {"type": "object", "properties": {
            "city": {"type": "string", "minLength": 1},
            "zip": {"type": "string"},
        }, "required": ["city"], "additionalProperties": False},
    },
    "required": ["carrier", "parcels", "address"],
    "additionalProperties": False,
}
SHIP_ARGS = {"carrier": "ups", "express": False, "parcels": 2,
             "address": {"city": "Lyon", "zip": "69001"}}


def ship_pause(schema: Any = SHIPPING, args: Any = None) -> Pause:
    """An approval of one ``ship`` action, held to ``schema`` (None: to no schema)."""
    config: dict[str, Any] = {"action_name": "ship", "allowed_decisions": ["approve", "edit",
                                                                            "reject"]}
    if schema is not None:
        config["args_schema"] = schema
    return bare_pause(prompt={"action_requests": [{"name": "ship", "args": args or SHIP_ARGS,
                                                   "description": "Ship the replacement"}],
                              "review_configs": [config]})
