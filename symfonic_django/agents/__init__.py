"""Agents: the protocol the turn driver types against (``base``), and the LangGraph adapter.

``agents.langgraph`` (a compiled graph as an ``Agent``) and ``agents.fencing``
(``fenced_tool``) need the ``[langgraph]`` extra and drive a turn, so they sit
above ``turns`` (see ``.importlinter``); import them by their own names, this
package does not.
"""

from .base import Agent, AnsweredPause, Continuation, ReviewedAction, TurnContext

__all__ = ["Agent", "AnsweredPause", "Continuation", "ReviewedAction", "TurnContext"]
