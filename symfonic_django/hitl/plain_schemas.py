"""A tool's argument schema, rewritten in the terms the review form draws inputs from."""

from __future__ import annotations

import json
import logging
from typing import Any

from ..exceptions import InvalidRequest
from .schemas import check_schema

log = logging.getLogger(__name__)

#: Keywords that only annotate a schema: merging or dropping them changes no check.
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment"})
#: Keywords whose value is a subschema, or a list or map of subschemas: the ones
#: ``plain_schema`` walks. A schema with any other subschema keyword is left as it is.
_SUBSCHEMA = frozenset({"items", "additionalProperties", "not"})
_SUBSCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_UNWALKED = frozenset({"patternProperties", "propertyNames", "if", "then", "else",
                       "dependentSchemas", "contains", "unevaluatedItems",
                       "unevaluatedProperties", "$dynamicRef", "$anchor", "$id"})


class _NotPlain(Exception):
    """The schema cannot be written in the form's terms without changing what it checks."""


def plain_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (a tool's argument schema, as pydantic writes it) checking exactly the
    same values, in the terms the review form draws inputs from, as far as it can be.

    - Local references (``"$ref": "#/$defs/Color"``) are replaced by what they name
      (``$defs`` then goes), when the reference has only annotations beside it and no
      definition refers to itself.
    - ``Optional[X]`` (``{"anyOf": [X, {"type": "null"}]}``) becomes X with ``"null"``
      added to its ``type`` (or ``None`` to its ``enum``), when X is a plain value
      (a string, number, integer or boolean, not an object or an array).
    - ``default`` is dropped: it annotates, checks nothing, and an input prefilled with
      it would send it as an edit nobody made (the tool applies it anyway).

    Anything else (arrays, nested ``anyOf``, ``Decimal``'s number-or-string, a
    recursive model) is kept as it is: it is still checked, and the form shows the
    JSON editor, with the schema, where it cannot draw an input. A schema it cannot
    walk (``patternProperties``, ``if``/``then``, a reference outside ``$defs``) is
    returned unchanged.
    """
    defs = schema.get("$defs") or {}
    try:
        plain = _plain(schema, defs, frozenset())
    except _NotPlain:
        return schema
    if '"$ref"' in json.dumps(plain):  # a reference in a place not walked: keep $defs
        return schema
    return plain


def _plain(node: Any, defs: dict[str, Any], seen: frozenset[str]) -> dict[str, Any]:
    """``node`` written plain; ``seen`` are the definitions it is inside of."""
    if not isinstance(node, dict) or set(node) & _UNWALKED:
        raise _NotPlain
    if node.get("$ref") is not None:
        return _dereferenced(node, defs, seen)
    return _nullable({key: _plain_keyword(key, value, defs, seen)
                      for key, value in node.items() if key not in ("default", "$defs")})


def _dereferenced(node: dict[str, Any], defs: dict[str, Any],
                  seen: frozenset[str]) -> dict[str, Any]:
    """A ``$ref`` to ``#/$defs/...`` as what it names, with the annotations beside it."""
    ref = node["$ref"]
    name = ref.removeprefix("#/$defs/") if isinstance(ref, str) else ""
    if (not isinstance(ref, str) or not ref.startswith("#/$defs/") or name in seen
            or not isinstance(defs.get(name), dict) or set(node) - _ANNOTATIONS - {"$ref"}):
        raise _NotPlain
    target = _plain(defs[name], defs, seen | {name})
    return {**target, **_plain({k: v for k, v in node.items() if k != "$ref"}, defs, seen)}


def _plain_keyword(key: str, value: Any, defs: dict[str, Any], seen: frozenset[str]) -> Any:
    """The value of one keyword of a schema, its subschemas written plain."""
    if key == "properties":
        if not isinstance(value, dict):
            raise _NotPlain
        return {name: _plain(sub, defs, seen) for name, sub in value.items()}
    if key in _SUBSCHEMA and isinstance(value, dict):
        return _plain(value, defs, seen)
    if key in _SUBSCHEMA_LISTS:
        if not isinstance(value, list):
            raise _NotPlain
        return [_plain(sub, defs, seen) for sub in value]
    return value


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    """``{"anyOf": [X, {"type": "null"}], ...annotations}`` as X that also allows null."""
    branches = node.get("anyOf")
    if not (isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches
            and not set(node) - _ANNOTATIONS - {"anyOf"}):
        return node
    [value] = [b for b in branches if b != {"type": "null"}]
    kind = value.get("type")
    if kind not in ("string", "number", "integer", "boolean") or "const" in value:
        return node
    merged = {**value, **{k: v for k, v in node.items() if k != "anyOf"},
              "type": [kind, "null"]}
    if isinstance(merged.get("enum"), list) and None not in merged["enum"]:
        merged["enum"] = [*merged["enum"], None]
    return merged


def tool_args_schema(schema: dict[str, Any], tool_name: str, *, left_out: str
                     ) -> dict[str, Any] | None:
    """A tool's own argument schema as an approval action's ``args_schema``: made plain
    for the review form (``plain_schema``) and checked as every proposal's schema is;
    ``None``, with a warning that says what follows (``left_out``), when the app could
    not check edits against it. The framework adapters all take their tools' schemas so."""
    plain = plain_schema(schema)
    try:
        check_schema(plain, what=f"The argument schema of tool {tool_name!r}")
    except InvalidRequest as exc:
        log.warning("%s It is left out%s.", exc.detail, left_out)
        return None
    return plain
