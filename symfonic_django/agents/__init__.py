"""Agents: the protocol the turn driver types against, and adapters (LangGraph, later)."""

from .base import Agent, Continuation, TurnContext

__all__ = ["Agent", "Continuation", "TurnContext"]
