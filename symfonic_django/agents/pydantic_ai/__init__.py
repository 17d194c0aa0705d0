"""The Pydantic AI adapter: a Pydantic AI ``Agent``, unchanged, as an agent of the app.

A Pydantic AI agent with an approval behind the app::

    from pydantic_ai import Agent
    from pydantic_ai.tools import DeferredToolRequests
    from symfonic_django.agents.pydantic_ai import fenced_tool, pydantic_ai_agent

    @fenced_tool(requires_approval=True)
    def refund(order_id: str, amount: float) -> dict:
        ...

    agent = Agent(model, tools=[refund], output_type=[str, DeferredToolRequests])
    refunds = pydantic_ai_agent(agent)
    # SYMFONIC["AGENTS"]["refunds"] = "myproject.agents.refunds"

Each module's docstring says its part:

- ``agent``: a turn (``pydantic_ai_agent``, ``PydanticAIAgent``): the run streamed,
  its state stored when it pauses, and taken once by the continuation;
- ``prompts``: the one approval pause a step's ``DeferredToolRequests`` becomes;
- ``approvals``: the stored state, and the answers checked against it as
  ``DeferredToolResults`` (edits by the tool's own validator);
- ``stream``: the run's events as the app's typed events;
- ``tools``: exactly-once tools (``fenced_tool``) and the agent's tools with their
  validators (``agent_tools``).

docs/pydantic-ai.md says which of Pydantic AI's silent failures the app refuses, and how.
"""

from .agent import PydanticAIAgent, PydanticAIAgentFactory, pydantic_ai_agent
from .approvals import FRAMEWORK, ApprovedCallsGuard, dump_state, load_state, resumption
from .prompts import approval_prompt, check_requests, pause_key
from .stream import Transcript
from .tools import agent_tools, args_schema, fenced_tool, may_edit

__all__ = ["FRAMEWORK", "ApprovedCallsGuard", "PydanticAIAgent", "PydanticAIAgentFactory",
           "Transcript", "agent_tools", "approval_prompt", "args_schema", "check_requests",
           "dump_state", "fenced_tool", "load_state", "may_edit", "pause_key",
           "pydantic_ai_agent", "resumption"]
