"""Small agents the tests drive through the real runner."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from asgiref.sync import sync_to_async
from django.utils import timezone

from symfonic_django import afenced, request_pause, runs
from symfonic_django.binding import PauseBinding
from symfonic_django.events import MessageDelta, ToolCompleted, ToolStarted, TurnCompleted

APPROVE_PROMPT = {
    "action_requests": [{"name": "ship", "args": {"qty": 1}}],
    "review_configs": [{"action_name": "ship", "allowed_decisions": ["approve", "edit", "reject"],
                        "args_schema": {"type": "object",
                                        "properties": {"qty": {"type": "integer", "minimum": 1}},
                                        "required": ["qty"]}}],
}


class EchoAgent:
    """Pauses once for approval, then echoes the answers it was resumed with."""

    async def start_typed(self, context: Any, input: Any):
        yield MessageDelta(text="asking")
        await request_pause(kind="approval", prompt=APPROVE_PROMPT, idempotency_key="ship",
                            ttl=(input or {}).get("ttl"))

    async def continue_recovered_typed(self, continuation: Any, *, prepared_plan: Any = None,
                                       event_guard: Any = None):
        yield MessageDelta(text="resumed")
        yield TurnCompleted(output={"answers": continuation.answers,
                                    "prepared_plan": prepared_plan,
                                    "guarded": event_guard is not None})


class QuestionAgent(EchoAgent):
    async def start_typed(self, context: Any, input: Any):
        await request_pause(kind="question", prompt={"question": "Which color?"},
                            answer_schema={"type": "object",
                                           "properties": {"color": {"enum": ["red", "blue"]}},
                                           "required": ["color"]})
        yield MessageDelta(text="asked")


class SiblingsAgent(EchoAgent):
    """Pauses with several pauses at once (one per pending tool call)."""

    async def start_typed(self, context: Any, input: Any):
        for i in range(int((input or {}).get("n", 2))):
            await request_pause(kind="approval", idempotency_key=f"call-{i}", prompt={
                "action_requests": [{"name": f"tool{i}", "args": {"i": i}}]})
        yield MessageDelta(text="waiting")


class BoomAgent(EchoAgent):
    async def start_typed(self, context: Any, input: Any):
        yield MessageDelta(text="about to fail")
        raise RuntimeError("boom")


class AsksThenFailsOnceAgent(EchoAgent):
    """Asks as the echo agent does, then fails its first attempt after the pause is stored."""

    async def start_typed(self, context: Any, input: Any):
        async for event in super().start_typed(context, input):
            yield event
        if context.run.attempts == 1:
            raise RuntimeError("the worker's host went away after asking")


class SlowAgent(EchoAgent):
    """Streams slowly so a test can kill its worker mid-turn."""

    async def continue_recovered_typed(self, continuation: Any, **kwargs: Any):
        for i in range(600):
            yield MessageDelta(text=f"tick {i} ")
            await asyncio.sleep(0.1)
        yield TurnCompleted(output="slow done")


class ForgedBindingAgent(EchoAgent):
    """Binds its pause to a run id nobody issued (rule B6)."""

    async def start_typed(self, context: Any, input: Any):
        await request_pause(kind="approval", prompt=APPROVE_PROMPT, binding=lambda: PauseBinding(
            pin=None, scope=None, run_id="00000000-0000-0000-0000-000000000000",
            root_run_id="00000000-0000-0000-0000-000000000000", session_id="",
            thread_id="", checkpoint_id=None))
        yield MessageDelta(text="forged")


class NoopAgent(EchoAgent):
    async def start_typed(self, context: Any, input: Any):
        yield TurnCompleted(output="noop")

    async def continue_recovered_typed(self, continuation: Any, **kwargs: Any):
        yield TurnCompleted(output="noop")


class WhereAgent(EchoAgent):
    """Completes at once, telling where it ran: its event loop and thread."""

    async def start_typed(self, context: Any, input: Any):
        import threading

        yield TurnCompleted(output={"loop": id(asyncio.get_running_loop()),
                                    "thread": threading.get_ident()})


class ScopeAgent(EchoAgent):
    """Completes at once, telling which scope it was given, then marks that scope."""

    def __init__(self, scope: Any) -> None:
        self.scope = scope

    async def start_typed(self, context: Any, input: Any):
        seen = {"slug": getattr(self.scope, "slug", None), "pk": getattr(self.scope, "pk", None),
                "mark": getattr(self.scope, "mark", None)}
        self.scope.mark = "left by an earlier turn"
        yield TurnCompleted(output=seen)


class StreamAgent(EchoAgent):
    """Pauses like ``echo``, then resumes into a stream of ``n`` message deltas.

    The paused run's input sets ``n`` (default 50), ``sleep`` (seconds between
    deltas, default 0), ``pad`` (characters added to each delta's text, default 0)
    and ``gate``: a file the continuation waits for (at most 60 s) before it
    streams, so a test can connect its watchers first.
    """

    async def continue_recovered_typed(self, continuation: Any, **kwargs: Any):
        options = await sync_to_async(_run_input)(continuation.paused_run_id)
        gate, n, sleep = options.get("gate"), int(options.get("n", 50)), options.get("sleep", 0)
        pad = "x" * int(options.get("pad", 0))
        deadline = time.monotonic() + 60
        while gate and not os.path.exists(gate) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        for i in range(n):
            yield MessageDelta(text=f"{i} {pad}" if pad else f"{i} ")
            if sleep:
                await asyncio.sleep(sleep)
        yield TurnCompleted(output={"streamed": n})


class FencedAgent(EchoAgent):
    """Moves money through ``afenced``; ``{"lose_lease": true}`` has the reaper fail it first,
    ``{"fail_inside": true}`` raises inside the fenced block after the effect."""

    async def start_typed(self, context: Any, input: Any):
        input = input or {}
        yield ToolStarted(tool_call_id="t1", name="refund", args={"amount": 5})
        if input.get("lose_lease"):
            await sync_to_async(_lose_lease)(context.run_id)
        await afenced(_refund, context.run_id, bool(input.get("fail_inside")),
                      event=lambda result: ToolCompleted(tool_call_id="t1", name="refund",
                                                         args={"amount": 5}, result=result))
        yield MessageDelta(text="refunded")


def _refund(run_id: str, fail_inside: bool) -> dict[str, Any]:
    from tests.testapp.models import Refund

    refund = Refund.objects.create(order_id=f"T-{run_id[:8]}", amount=5, run_id=run_id)
    if fail_inside:
        raise RuntimeError("the card network refused")
    return {"refund_id": refund.pk}


def _lose_lease(run_id: str) -> None:
    """What a frozen worker wakes up to: its lease lapsed and the reaper failed the run."""
    from symfonic_django.models import Run

    Run.objects.filter(pk=run_id).update(lease_until=timezone.now())
    assert runs.reap_stale_runs() == 1


def _run_input(run_id: str) -> Any:
    from symfonic_django.models import Run

    return Run.objects.values_list("input", flat=True).get(pk=run_id) or {}


def echo_agent(scope: Any) -> EchoAgent: return EchoAgent()
def question_agent(scope: Any) -> QuestionAgent: return QuestionAgent()
def siblings_agent(scope: Any) -> SiblingsAgent: return SiblingsAgent()
def boom_agent(scope: Any) -> BoomAgent: return BoomAgent()
def slow_agent(scope: Any) -> SlowAgent: return SlowAgent()
def asks_then_fails_once_agent(scope: Any) -> AsksThenFailsOnceAgent:
    return AsksThenFailsOnceAgent()
def forged_binding_agent(scope: Any) -> ForgedBindingAgent: return ForgedBindingAgent()
def noop_agent(scope: Any) -> NoopAgent: return NoopAgent()
def fenced_agent(scope: Any) -> FencedAgent: return FencedAgent()
def stream_agent(scope: Any) -> StreamAgent: return StreamAgent()
def where_agent(scope: Any) -> WhereAgent: return WhereAgent()
def scope_agent(scope: Any) -> ScopeAgent: return ScopeAgent(scope)


class ProposalAgent(EchoAgent):
    """Proposes ``ship`` with its input's ``args``, held to ``APPROVE_PROMPT``'s args_schema
    (or to the input's ``schema``, which may itself be broken)."""

    async def start_typed(self, context: Any, input: Any):
        yield MessageDelta(text="proposing")
        config = dict(APPROVE_PROMPT["review_configs"][0])
        if "schema" in input:
            config["args_schema"] = input["schema"]
        await request_pause(kind="approval", idempotency_key="ship", prompt={
            "action_requests": [{"name": "ship", "args": input["args"]}],
            "review_configs": [config]})


def proposal_agent(scope: Any) -> ProposalAgent: return ProposalAgent()
