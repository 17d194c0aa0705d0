"""JSON text from outside, bounded before it is parsed, and values a database can store.

Used by every surface that reads JSON a person or a client typed: the API's
parser and the admin's answer forms.

- Python's ``json`` recurses once per nesting level: a thousand ``[`` raised
  ``RecursionError``. ``loads`` counts the depth first, in one linear pass
  over the text that ignores brackets inside strings, and parses only text
  within the limit.
- It accepts ``NaN`` and ``Infinity`` by default, and reads ``1e400`` as
  Infinity; no JSON column stores them. ``loads`` refuses all three.
- It reads ``10000.0000000000001`` as ``10000.0``: a number with more digits
  than a float holds was silently changed, and a refund checked against
  "at most 10000" passed. ``loads`` refuses a number the float it becomes
  does not spell (``0.1`` is fine: the float prints back as ``0.1``).
- It keeps the last of two equal keys in one object (``{"amount": 50000,
  "amount": 1}``), where another reader may keep the first. ``loads``
  refuses a key given twice.
- PostgreSQL's ``jsonb`` and ``text`` refuse the NUL character and lone UTF-16
  surrogates (``\\u0000``, ``\\ud800``): ``unstorable`` says which, so a
  surface refuses with a 400 or a form error instead of a database error.
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any

from .exceptions import SymfonicError

# A JSON string (to its closing quote, or to the end if it has none) or a bracket: what
# lies inside a string never opens or closes a level.
_STRING_OR_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)
# In a parsed Python str every surrogate is a lone one (json joins an escaped pair).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


class TooDeep(ValueError):
    """The text nests arrays and objects deeper than the limit."""


def nests_deeper_than(text: str, limit: int) -> bool:
    """Whether the arrays and objects of ``text`` nest more than ``limit`` deep.

    Linear in the text. Text that is not JSON may be miscounted; ``loads``
    refuses it next anyway.
    """
    depth = 0
    for match in _STRING_OR_BRACKET.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return True
        elif token in "]}":
            depth -= 1
    return False


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _float(text: str) -> float:
    """The float ``text`` spells, if it is finite and spells exactly that float."""
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"the number {text[:40]} is too large to store")
    if Decimal(text) != Decimal(repr(number)):
        raise ValueError(f"the number {text[:40]} has more digits than can be stored "
                         f"(it would be stored as {number!r})")
    return number


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for key, item in pairs:
        if key in value:
            raise ValueError(f"the key {key[:40]!r} is given twice in one object")
        value[key] = item
    return value


def loads(text: str, *, max_depth: int) -> Any:
    """The JSON value ``text`` spells.

    Raises ``TooDeep`` past ``max_depth`` levels (before parsing), and
    ``ValueError`` for text that is not JSON, ``NaN``, ``Infinity``, a number
    too large for a float or with more digits than it holds, or a key given
    twice in one object.
    """
    if nests_deeper_than(text, max_depth):
        raise TooDeep(f"nested deeper than {max_depth} levels")
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_float,
                      object_pairs_hook=_object)


def unstorable(value: Any) -> str | None:
    """What in ``value`` (its strings and keys, at any depth) no database can store:
    "a NUL character" or "a lone surrogate (U+D800)"; ``None`` if nothing.

    Walks with a stack, not recursion.
    """
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, str):
            found = _UNSTORABLE.search(item)
            if found is not None:
                char = found.group()
                return ("a NUL character" if char == "\x00"
                        else f"a lone surrogate (U+{ord(char):04X})")
    return None


def refuse_unstorable(value: Any, what: str, refusal: type[SymfonicError]) -> None:
    """Raise ``refusal`` when ``value`` holds text no database column stores (a NUL, a lone
    surrogate): PostgreSQL refuses it with a database error, after the checks passed."""
    problem = unstorable(value)
    if problem:
        raise refusal(f"{what} contains {problem}, which cannot be stored.")


def jsonable(value: Any) -> Any:
    """``value`` as JSON can store it (an object that is not JSON becomes its ``str``)."""
    return json.loads(json.dumps(value, default=str))
