"""The API's one parser: JSON, bounded before it is parsed, storable once parsed.

DRF's ``JSONParser`` hands the body to ``json.load``, which recurses once per
nesting level: a body of a thousand ``[`` raised ``RecursionError``, a 500.
Here the body is read up to the size cap, its nesting depth is counted by a
linear scan of the raw bytes (no recursion, brackets inside strings ignored),
and only a body within ``SYMFONIC["MAX_JSON_DEPTH"]`` is parsed.

Once parsed, a body must be storable as it is: PostgreSQL's ``jsonb`` refuses
the NUL character and lone UTF-16 surrogates (``\\u0000``, ``\\ud800``), and
every database refuses ``Infinity`` (a number like ``1e400`` parses to it).
Such a body is a 400 ``invalid_request`` here, never a database error later.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from rest_framework.parsers import JSONParser

from ..conf import settings
from ..exceptions import InvalidRequest, PayloadTooLarge

#: Room for the envelope around an answer (``{"token": ..., "answer": ...}``, a comment).
ENVELOPE_BYTES = 8192

#: The bytes that can change the nesting depth or the string state of JSON text.
_STRUCTURE = re.compile(rb'[\[\]{}"\\]')
_OPEN, _CLOSE = frozenset(b"[{"), frozenset(b"]}")
_QUOTE, _BACKSLASH = ord('"'), ord("\\")

#: Characters no JSON column stores: NUL, and a surrogate code point (after parsing, only
#: a lone one can be left: ``json`` joins an escaped pair into the character it encodes).
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def max_body_bytes() -> int:
    """The largest request body the API reads: the answer cap plus its envelope."""
    limit: int = settings.MAX_ANSWER_BYTES + ENVELOPE_BYTES
    return limit


def too_deep(raw: bytes, limit: int) -> bool:
    """Whether the arrays and objects of the JSON text ``raw`` nest more than ``limit`` deep.

    One pass over the bytes that matter, so the cost is linear whatever the
    input. Text that is not JSON may be miscounted; ``json`` refuses it next.
    """
    depth, in_string, escaped = 0, False, -1
    for match in _STRUCTURE.finditer(raw):
        at = match.start()
        byte = raw[at]
        if in_string:
            if at == escaped:
                continue  # the character after a backslash is never structure
            if byte == _BACKSLASH:
                escaped = at + 1
            elif byte == _QUOTE:
                in_string = False
        elif byte == _QUOTE:
            in_string = True
        elif byte in _OPEN:
            depth += 1
            if depth > limit:
                return True
        elif byte in _CLOSE:
            depth -= 1
    return False


def unstorable(value: Any) -> str | None:
    """Why a parsed body cannot be stored (a NUL or a lone surrogate), or ``None``.

    Walks keys and values with a stack; the depth was bounded before parsing.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            found = UNSTORABLE.search(item)
            if found is not None:
                what = ("a NUL character (\\u0000)" if found.group() == "\x00"
                        else f"a lone surrogate (\\u{ord(found.group()):04x})")
                return f"The request body contains {what}, which no text can hold"
    return None


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"the number {text[:40]} is too large to store")
    return number


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


class BoundedJSONParser(JSONParser):
    """``application/json`` bodies, refused before parsing when too large or too deep."""

    def parse(self, stream: Any, media_type: str | None = None,
              parser_context: Mapping[str, Any] | None = None) -> Any:
        limit = max_body_bytes()
        raw: bytes = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge(
                f"The request body is over {limit} bytes; this deployment accepts answers of "
                f"at most {settings.MAX_ANSWER_BYTES} bytes (SYMFONIC['MAX_ANSWER_BYTES']).")
        depth = settings.MAX_JSON_DEPTH
        if too_deep(raw, depth):
            raise InvalidRequest(
                f"The request body nests arrays and objects more than {depth} levels deep "
                "(SYMFONIC['MAX_JSON_DEPTH']).")
        try:
            # RFC 8259: JSON between systems is UTF-8, whatever charset a client names.
            data = json.loads(raw.decode("utf-8"), parse_float=_finite,
                              parse_constant=_no_constants)
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an oversized integer
            raise InvalidRequest(f"The request body is not valid JSON: {exc}") from None
        problem = unstorable(data)
        if problem is not None:
            raise InvalidRequest(problem)
        return data
