"""The reviewer's forms: the answer forms and the fields they are built from.

- ``answers``: ``ApprovalForm`` and ``QuestionForm`` (``answer_form_for`` picks one),
  ``BulkDecisionForm``.
- ``arg_inputs``: an action's arguments as one input each, from its ``args_schema``.
- ``schema_fields``: a Django form field for one JSON Schema (``field_for``).
- ``json_input``: JSON as a reviewer reads and types it.
"""

from .answers import (
    COMMENT_CHARS,
    DECISION_LABELS,
    ApprovalForm,
    BulkDecisionForm,
    QuestionForm,
    answer_form_for,
    decision_label,
)
from .arg_inputs import MISSING, ArgInput, arg_fields, args_from_inputs, leaf_problem
from .json_input import BoundedJSONDecoder, JSONAnswerField, parse_json, pretty_json
from .schema_fields import LONG_TEXT, choice_labels, field_for

__all__ = [
    "COMMENT_CHARS",
    "DECISION_LABELS",
    "LONG_TEXT",
    "MISSING",
    "ApprovalForm",
    "ArgInput",
    "BoundedJSONDecoder",
    "BulkDecisionForm",
    "JSONAnswerField",
    "QuestionForm",
    "answer_form_for",
    "arg_fields",
    "args_from_inputs",
    "choice_labels",
    "decision_label",
    "field_for",
    "leaf_problem",
    "parse_json",
    "pretty_json",
]
