"""JSON Schema checks, with ``multipleOf`` exact on the decimals numbers are written as.

Every JSON Schema of the app (a proposal's and an edit's ``args_schema``, a
question's ``answer_schema``, a run's input schema) is checked by the one
validator of this module, whose ``multipleOf`` is exact on decimals (see
``_multiple_of``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from functools import cache
from typing import Any

import jsonschema
from jsonschema.protocols import Validator

from ..exceptions import InvalidRequest, SymfonicError


def _as_written(number: Any) -> Fraction | None:
    """The exact value of a JSON number as its text spells it; ``None`` if not finite.

    A float parsed from ``19.99`` is the nearest binary fraction, not 19.99, but its
    shortest repr gives the text back: ``Decimal(str(19.99)) == Decimal("19.99")``.
    Amounts are stored through that same conversion, so a number is a multiple of
    0.01 here exactly when a two-place ``DecimalField`` stores it without rounding.
    """
    if isinstance(number, int):
        return Fraction(number)  # exact, where str() of a huge int may be refused
    try:
        value = Decimal(str(number))
    except InvalidOperation:
        return None
    return Fraction(value) if value.is_finite() else None


def _multiple_of(validator: Validator, divisor: Any, instance: Any,
                 schema: Any) -> Iterator[jsonschema.ValidationError]:
    """``multipleOf`` on the decimal values, where jsonschema divides binary floats.

    jsonschema finds ``19.99 / 0.01 == 1998.9999999999998`` and refuses 19.99, as it
    refuses about one cent value in six below 10,000 (0.07, 0.29, 1234.56), and it
    raises on NaN and Infinity. ``multipleOf: 0.01`` then says what JSON Schema means
    by it: at most two decimal places.
    """
    if not validator.is_type(instance, "number"):
        return
    value, step = _as_written(instance), _as_written(divisor)
    # check_schema() made the divisor a positive number before any instance gets here.
    if value is None or step is None or (value / step).denominator != 1:
        yield jsonschema.ValidationError(f"{instance!r} is not a multiple of {divisor!r}")


@cache
def _exact(cls: type[Validator]) -> type[Validator]:
    # jsonschema's documented way to replace one keyword; it ships extend() unannotated.
    extended: type[Validator] = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        cls, {"multipleOf": _multiple_of})
    return extended


def schema_validator(schema: Any, what: str, refusal: type[SymfonicError]) -> Validator:
    """A validator for ``schema`` (its own ``$schema`` draft, 2020-12 by default).

    A schema that is not valid JSON Schema is refused with ``refusal``, naming ``what``.
    """
    cls = (jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
           if isinstance(schema, dict) else jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise refusal(f"{what} is not a valid JSON Schema: {exc.message}.") from exc
    return _exact(cls)(schema)


#: jsonschema quotes the offending value; a long one is cut where the reason is stored.
VIOLATION_CHARS = 500


def violation(validator: Validator, instance: Any) -> str | None:
    """The most relevant way ``instance`` breaks the schema, with where; ``None`` if it fits."""
    error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
    if error is None:
        return None
    text = error.message if error.json_path == "$" else f"{error.json_path}: {error.message}"
    return text if len(text) <= VIOLATION_CHARS else text[:VIOLATION_CHARS - 1] + "…"


def not_json(value: Any) -> str | None:
    """Why ``value`` is not JSON (NaN, Infinity, a Decimal, a set), or ``None`` if it is.

    Checked before a schema: NaN passes ``maximum`` and ``exclusiveMinimum`` (every
    comparison with it is false), and PostgreSQL's jsonb refuses it when stored.
    """
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return str(exc)
    return None


def schema_violation(schema: Any, value: Any, *, what: str) -> str | None:
    """Why ``value`` does not fit ``schema`` (not JSON, or the violation and where), or ``None``.

    A ``schema`` that is not valid JSON Schema raises ``InvalidRequest`` naming ``what``.
    """
    problem = not_json(value)
    if problem:
        return f"it is not JSON: {problem}"
    return violation(schema_validator(schema, what, InvalidRequest), value)


def check_schema(schema: Any, what: str = "answer_schema") -> None:
    """``InvalidRequest``, naming ``what``, unless ``schema`` is valid JSON Schema (or None)."""
    if schema is not None:
        schema_validator(schema, what, InvalidRequest)

