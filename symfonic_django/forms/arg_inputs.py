"""An action's arguments as inputs: one per argument its ``args_schema`` can show as a
field (``arg_fields``), the arguments they spell (``args_from_inputs``), and each
input's own schema refusal in words (``input_problems``)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django import forms
from django.utils.translation import gettext as _

from .. import hitl
from .schema_fields import field_for

#: Property names that can name an input (``args_0.amount``); others get the JSON editor.
_INPUT_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: Keywords that constrain an object beyond its properties: fields cannot show them.
_OBJECT_ONLY = frozenset({"type", "properties", "required", "additionalProperties", "title",
                          "description", "$schema", "$id", "$comment", "default", "examples"})
_LEAF_TYPES = frozenset({"string", "number", "integer", "boolean"})
#: Integral floats below this are written as integers (a typed "50" is 50, not 50.0).
_EXACT_INTEGERS = 2 ** 53

MISSING: Any = object()


@dataclass(frozen=True)
class ArgInput:
    """One argument of an action, edited through its own input.

    ``path`` is where it sits in the arguments (nested objects are fieldsets:
    ``group`` names the enclosing ones), ``proposed`` what the agent proposed
    there (``MISSING`` when nothing), ``required`` whether its object requires it.
    """

    name: str
    path: tuple[str, ...]
    label: str
    field: forms.Field
    proposed: Any
    required: bool

    @property
    def depth(self) -> int:
        return len(self.path) - 1

    @property
    def group(self) -> tuple[str, ...]:
        return self.path[:-1]

    @property
    def proposed_text(self) -> str:
        """The proposed value as the diff shows it."""
        return _("(none)") if self.proposed is MISSING else hitl.shown(self.proposed)


def _leaf_type(schema: dict[str, Any]) -> str | None:
    """The input type of a property schema, or ``None`` if no input can express it."""
    if set(schema) - {"type", "enum", "title", "description", "default", "examples",
                      "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                      "multipleOf", "minLength", "maxLength", "pattern", "format", "const",
                      "$comment"}:
        return None
    if "enum" in schema:
        values = schema["enum"]
        ok = isinstance(values, list) and values and all(
            v is None or isinstance(v, str | int | float | bool) for v in values)
        return "enum" if ok else None
    kind = schema.get("type")
    if isinstance(kind, list) and len(kind) == 2 and "null" in kind:
        # Optional[X] (hitl.plain_schema): an input left empty leaves the argument out.
        kind = next(k for k in kind if k != "null")
    return kind if isinstance(kind, str) and kind in _LEAF_TYPES else None


def arg_fields(schema: Any, args: Any, *, prefix: str) -> list[ArgInput] | None:
    """Inputs for ``args`` under their object ``schema``, or ``None`` when fields cannot
    express it (no schema, arrays, ``oneOf``, ``$ref``, arguments the schema does not
    name, a property name no input can carry): the JSON editor edits those."""
    inputs: list[ArgInput] = []
    if not _collect(schema, args, (), prefix, inputs):
        return None
    return inputs or None


def _collect(schema: Any, args: Any, path: tuple[str, ...], prefix: str,
             inputs: list[ArgInput]) -> bool:
    """Add to ``inputs`` one per argument of the object at ``path``, nested objects
    walked; ``False`` as soon as one argument cannot be an input."""
    if not _drawable_object(schema, args):
        return False
    required = schema.get("required") or []
    for key, sub in schema["properties"].items():
        if not isinstance(key, str) or not _INPUT_NAME.match(key) or not isinstance(sub, dict):
            return False
        value = args.get(key, MISSING) if isinstance(args, dict) else MISSING
        where = (*path, key)
        if sub.get("type") == "object":
            if not _collect(sub, value, where, prefix, inputs):
                return False
            continue
        item = _arg_input(sub, value, where, prefix, required=key in required)
        if item is None:
            return False
        inputs.append(item)
    return True


def _drawable_object(schema: Any, args: Any) -> bool:
    """Whether ``schema`` is an object schema that only names its properties, and
    ``args`` (when proposed) an object of named properties: no argument goes unshown."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return False
    properties = schema.get("properties")
    if not isinstance(properties, dict) or set(schema) - _OBJECT_ONLY:
        return False
    if not isinstance(schema.get("additionalProperties", True), bool):
        return False
    # Otherwise an argument no input would show.
    return args is MISSING or (isinstance(args, dict) and not set(args) - set(properties))


def _arg_input(schema: dict[str, Any], value: Any, path: tuple[str, ...], prefix: str, *,
               required: bool) -> ArgInput | None:
    """The input of the argument at ``path``, prefilled with its proposed ``value``;
    ``None`` if no input can express its ``schema``."""
    kind = _leaf_type(schema)
    if kind is None:
        return None
    label = str(schema.get("title") or path[-1].replace("_", " ").capitalize())
    field = field_for(schema, required=False, label=label)
    if value is not MISSING:
        field.initial = json.dumps(value) if kind == "enum" else value
    return ArgInput(name=f"{prefix}.{'.'.join(path)}", path=path, label=label,
                    field=field, proposed=value, required=required)


def _property_schema(schema: Any, path: tuple[str, ...]) -> Any:
    """The schema of the argument at ``path`` of an object ``schema`` (``None`` if unnamed)."""
    for key in path:
        properties = schema.get("properties") if isinstance(schema, dict) else None
        schema = properties.get(key) if isinstance(properties, dict) else None
    return schema


def input_problems(schema: Any, inputs: list[ArgInput], args: dict[str, Any]
                   ) -> list[tuple[str, str]]:
    """``(input name, sentence)`` for each input whose value in ``args`` breaks its own
    schema (``leaf_problem``), to be shown on that input rather than the whole editor."""
    problems = []
    for item in inputs:
        value: Any = args
        for key in item.path:
            value = value.get(key, MISSING) if isinstance(value, dict) else MISSING
        problem = (leaf_problem(_property_schema(schema, item.path), value)
                   if value is not MISSING else None)
        if problem:
            problems.append((item.name, problem))
    return problems


def leaf_problem(schema: Any, value: Any) -> str | None:
    """Why one argument's ``value`` breaks its own ``schema``, as a sentence for its input,
    for the keywords a form field does not check itself; ``None`` if none of them does."""
    if not isinstance(schema, dict):
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        problem = _number_problem(schema, value)
        if problem:
            return problem
    if isinstance(value, str) and isinstance(schema.get("pattern"), str):
        try:
            if re.search(schema["pattern"], value) is None:
                return _("Enter a value of the expected form.")
        except re.error:
            return None
    if "const" in schema and value != schema["const"]:
        return _("Only %(value)s is accepted here.") % {"value": hitl.shown(schema["const"])}
    return None


def _number_problem(schema: dict[str, Any], value: int | float) -> str | None:
    """``leaf_problem`` of a number: ``multipleOf`` and the exclusive bounds."""
    step = schema.get("multipleOf")
    if isinstance(step, int | float) and step > 0 and (
            Decimal(str(value)) % Decimal(str(step)) != 0):
        return _("Enter a multiple of %(step)s.") % {"step": hitl.shown(step)}
    low, high = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if isinstance(low, int | float) and value <= low:
        return _("Enter more than %(limit)s.") % {"limit": hitl.shown(low)}
    if isinstance(high, int | float) and value >= high:
        return _("Enter less than %(limit)s.") % {"limit": hitl.shown(high)}
    return None


def _typed(value: Any) -> Any:
    """A number input's float as JSON writes it: 50.0 typed as "50" stays 50."""
    if isinstance(value, float) and value.is_integer() and abs(value) < _EXACT_INTEGERS:
        return int(value)
    return value


def args_from_inputs(inputs: list[ArgInput], cleaned: dict[str, Any]) -> dict[str, Any]:
    """The arguments the inputs spell. An input left empty is left out, unless the
    proposal had that very value; the schema then says whether it may be missing."""
    args: dict[str, Any] = {}
    for item in inputs:
        value = _typed(cleaned.get(item.name))
        if value is None or value == "" or (value is False and item.proposed is MISSING
                                             and not item.required):
            if item.proposed is MISSING or item.proposed != value:
                continue
        target = args
        for key in item.group:
            target = target.setdefault(key, {})
        target[item.path[-1]] = value
    return args
