"""The LangGraph adapter: a compiled graph, or a factory of one, as an ``Agent``.

A ``create_agent`` agent behind the app::

    from langchain.agents import create_agent
    from langchain.agents.middleware import HumanInTheLoopMiddleware
    from symfonic_django.agents.langgraph import langgraph_agent
    from symfonic_django.checkpoint import DjangoSaver

    def build(scope):
        return create_agent(model, tools=[refund],
                            middleware=[HumanInTheLoopMiddleware({"refund": True})])

    refund_graph = langgraph_agent(build, checkpointer=DjangoSaver())
    # SYMFONIC["AGENTS"]["refund_graph"] = "myproject.agents.refund_graph"

Each module's docstring says its part:

- ``agent``: a turn on the run's thread and the checkpointer (``langgraph_agent``,
  ``LangGraphAgent``), and the refusal of a new run on a thread still paused;
- ``prompts``: the pause each interrupt becomes (``pause_request``), and the
  argument schemas of the graph's own tools (``tool_args_schemas``);
- ``resume``: the continuation's answers checked against the thread's pending
  interrupts, resumed under strict resume (``resume_value``, ``refusal_message``);
- ``stream``: the graph's stream as typed events (``Transcript``).
"""

from ...exceptions import ThreadPaused
from .agent import (
    Checkpointer,
    LangGraphAgent,
    LangGraphAgentFactory,
    SaverFactory,
    langgraph_agent,
)
from .prompts import (
    DEFAULT_DESCRIPTION_PREFIX,
    PauseRequest,
    pause_request,
    tool_args_schema,
    tool_args_schemas,
)
from .resume import STRICT_RESUME, refusal_message, resume_value
from .stream import Transcript, last_message_text

__all__ = ["Checkpointer", "DEFAULT_DESCRIPTION_PREFIX", "LangGraphAgent",
           "LangGraphAgentFactory", "PauseRequest", "STRICT_RESUME", "SaverFactory",
           "ThreadPaused", "Transcript", "langgraph_agent", "last_message_text",
           "pause_request", "refusal_message", "resume_value", "tool_args_schema",
           "tool_args_schemas"]
