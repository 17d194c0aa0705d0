"""Approval prompts and answers in LangChain 1.x's HITL shapes.

A prompt is a ``HITLRequest``::

    {"action_requests": [{"name", "args", "description"?}],
     "review_configs": [{"action_name", "allowed_decisions", "args_schema"?}]}

and its answer a ``HITLResponse``: ``{"decisions": [...]}``, one decision per
action request, each one of that action's ``allowed_decisions``. LangGraph
Agent Inbox's older ``HumanInterrupt`` is accepted and converted.

- ``prompts``: the ``HITLRequest`` shape, normalized; a question's words.
- ``schemas``: the one JSON Schema validator, ``multipleOf`` exact on decimals.
- ``answers``: a proposal, an approval's decisions, a question's answer, checked.
- ``plain_schemas``: a tool's argument schema in the review form's terms.
- ``display``: values, calls and edits as a reviewer reads them.
- ``search``: a pause's words as reviewers search them.
"""

from .answers import validate_proposal, validate_question_answer, validate_response
from .display import ABSENT, args_changes, call_text, edit_changes, shown
from .plain_schemas import plain_schema, tool_args_schema
from .prompts import (
    DECISION_TYPES,
    action_digest,
    normalize_prompt,
    question_text,
    review_config,
)
from .schemas import VIOLATION_CHARS, check_schema, schema_violation
from .search import SEARCH_TEXT_CHARS, search_text, searchable

__all__ = [
    "ABSENT",
    "DECISION_TYPES",
    "SEARCH_TEXT_CHARS",
    "VIOLATION_CHARS",
    "action_digest",
    "args_changes",
    "call_text",
    "check_schema",
    "edit_changes",
    "normalize_prompt",
    "plain_schema",
    "question_text",
    "review_config",
    "schema_violation",
    "search_text",
    "searchable",
    "shown",
    "tool_args_schema",
    "validate_proposal",
    "validate_question_answer",
    "validate_response",
]
