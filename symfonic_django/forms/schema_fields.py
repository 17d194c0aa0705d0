"""A Django form field for one JSON Schema (``field_for``), and a choice schema's labels."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.utils.translation import gettext as _

from .json_input import JSONAnswerField

#: A string field longer than this is edited in a textarea.
LONG_TEXT = 200


def main_type(schema: dict[str, Any]) -> str | None:
    """The schema's ``type``; of a list of types, the first that is not ``"null"``."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    return kind


def choice_labels(schema: Any) -> list[tuple[Any, str]] | None:
    """``(value, label)`` per value a choice schema allows, or ``None`` if it is not one:
    an ``enum`` (each value its own label), or a ``oneOf`` / ``anyOf`` of ``const`` values,
    each labelled by its ``title`` (JSON Schema's way to name a choice: "DHL" for "dhl")."""
    if not isinstance(schema, dict):
        return None
    if isinstance(schema.get("enum"), list):
        return [(v, str(v)) for v in schema["enum"]]
    options = schema.get("oneOf", schema.get("anyOf"))
    if not (isinstance(options, list) and options
            and all(isinstance(o, dict) and "const" in o for o in options)):
        return None
    return [(o["const"], str(o.get("title") or o["const"])) for o in options]


def field_for(schema: Any, *, required: bool, label: str) -> forms.Field:
    """A form field for one JSON Schema: enum → select, boolean → checkbox,
    integer / number → number inputs, string → text (textarea when long),
    anything else → a JSON textarea."""
    schema = schema if isinstance(schema, dict) else {}
    common: dict[str, Any] = {"label": schema.get("title") or label,
                              "help_text": schema.get("description", "")}
    if "default" in schema:
        common["initial"] = schema["default"]
    labels = choice_labels(schema)
    if labels is not None:
        # An empty first choice even when required: the reviewer picks, nothing is preselected.
        choices = [("", "---------"), *((json.dumps(v), label) for v, label in labels)]
        if "initial" in common:
            common["initial"] = json.dumps(common["initial"])
        return forms.TypedChoiceField(choices=choices, coerce=json.loads, empty_value=None,
                                      required=required, **common)
    kind = main_type(schema)
    if kind == "boolean":
        # A checkbox always answers: unticked is False, never "missing".
        return forms.BooleanField(required=False, **common)
    if kind == "integer":
        return forms.IntegerField(required=required, min_value=schema.get("minimum"),
                                  max_value=schema.get("maximum"), **common)
    if kind == "number":
        return forms.FloatField(required=required, min_value=schema.get("minimum"),
                                max_value=schema.get("maximum"),
                                widget=forms.NumberInput(attrs={"step": "any"}), **common)
    if kind == "string":
        max_length = schema.get("maxLength")
        long = schema.get("format") == "textarea" or (max_length or 0) > LONG_TEXT
        return forms.CharField(required=required, max_length=max_length,
                               min_length=schema.get("minLength"),
                               widget=forms.Textarea(attrs={"rows": 4}) if long else None,
                               **common)
    common["help_text"] = common["help_text"] or _("A JSON value.")
    return JSONAnswerField(required=required,
                           widget=forms.Textarea(attrs={"rows": 4, "class": "symfonic-json"}),
                           **common)
