"""Agents: the LangGraph adapter and its fenced tools, which drive a turn.

``agents.langgraph`` (a compiled graph as an ``Agent``) and ``agents.fencing``
(``fenced_tool``) need the ``[langgraph]`` extra and drive a turn, so they sit
above ``turns`` (see ``.importlinter``); import them by their own names, this
package does not. It re-exports the agent protocol, which lives below the turn
(``symfonic_django.agent_protocol``): ``Agent``, and what an agent is handed.
"""

from ..agent_protocol import Agent, AnsweredPause, NewTurn, ResumedTurn, ReviewedAction

__all__ = ["Agent", "AnsweredPause", "NewTurn", "ResumedTurn", "ReviewedAction"]
