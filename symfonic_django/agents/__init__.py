"""Agents: the framework adapters and their fenced tools, which drive a turn.

``agents.langgraph`` and ``agents.fencing`` (the ``[langgraph]`` extra),
``agents.pydantic_ai`` (``[pydantic-ai]``) and ``agents.openai_agents``
(``[openai-agents]``) put a framework's agent behind the app; ``agents.recorded``
(tool calls recorded once per conversation and call id) and ``agents.stored_state``
(a paused run's framework state, taken once) are what the adapters share. They
drive a turn, so they sit above ``turns`` (see ``.importlinter``); import them by
their own names, this package does not. It re-exports the agent protocol, which
lives below the turn (``symfonic_django.agent_protocol``): ``Agent``, and what an
agent is handed.
"""

from ..agent_protocol import Agent, AnsweredPause, NewTurn, ResumedTurn, ReviewedAction

__all__ = ["Agent", "AnsweredPause", "NewTurn", "ResumedTurn", "ReviewedAction"]
