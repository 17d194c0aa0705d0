"""The OpenAI Agents SDK adapter: an SDK ``Agent``, unchanged, as an app ``Agent``.

An agent behind the app::

    from agents import Agent
    from symfonic_django.agents.openai_agents import fenced_function_tool, openai_agent

    @fenced_function_tool(needs_approval=True)
    def refund(order_id: str, amount: float) -> dict:
        ...

    refund_openai = openai_agent(Agent(name="desk", model=model, tools=[refund]))
    # SYMFONIC["AGENTS"]["refund_openai"] = "myproject.agents.refund_openai"

Each module's docstring says its part:

- ``agent``: a turn, the state stored before the pause and taken once by the
  continuation (``openai_agent``, ``OpenAIAgent``);
- ``prompts``: the one pause a step's approval items become, keyed by their call
  ids, with the tools' own argument schemas and no ``edit`` (and why);
- ``resume``: the answers checked against the stored state and applied once, the
  SDK's silent failures refused (``decide``);
- ``stream``: the SDK's stream events as typed events (``Transcript``);
- ``tools``: ``fenced_function_tool``, a ``function_tool`` whose call runs once per
  root run and call id.

It needs the ``[openai-agents]`` extra (tested with openai-agents 0.24); docs in
``docs/openai-agents.md``.
"""

from .agent import FRAMEWORK, OpenAIAgent, OpenAIAgentFactory, openai_agent
from .prompts import ALLOWED_DECISIONS, approval_prompt, pause_key, tool_args_schema
from .resume import TIMEOUT_MESSAGE, Decided, decide, refusal_message
from .stream import Transcript
from .tools import fenced_function_tool

__all__ = ["ALLOWED_DECISIONS", "Decided", "FRAMEWORK", "OpenAIAgent", "OpenAIAgentFactory",
           "TIMEOUT_MESSAGE", "Transcript", "approval_prompt", "decide", "fenced_function_tool",
           "openai_agent", "pause_key", "refusal_message", "tool_args_schema"]
