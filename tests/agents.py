"""Small agents the tests drive through the real runner."""

from __future__ import annotations

import asyncio
from typing import Any

from symfonic_django import request_pause
from symfonic_django.binding import PauseBinding
from symfonic_django.events import MessageDelta, TurnCompleted

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


def echo_agent(scope: Any) -> EchoAgent: return EchoAgent()
def question_agent(scope: Any) -> QuestionAgent: return QuestionAgent()
def siblings_agent(scope: Any) -> SiblingsAgent: return SiblingsAgent()
def boom_agent(scope: Any) -> BoomAgent: return BoomAgent()
def slow_agent(scope: Any) -> SlowAgent: return SlowAgent()
def forged_binding_agent(scope: Any) -> ForgedBindingAgent: return ForgedBindingAgent()
def noop_agent(scope: Any) -> NoopAgent: return NoopAgent()
