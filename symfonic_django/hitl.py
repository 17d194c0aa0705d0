"""Approval prompts and answers in LangChain 1.x's HITL shapes.

A prompt is a ``HITLRequest``::

    {"action_requests": [{"name", "args", "description"?}],
     "review_configs": [{"action_name", "allowed_decisions", "args_schema"?}]}

and its answer a ``HITLResponse``: ``{"decisions": [...]}``, one decision per
action request, each one of that action's ``allowed_decisions``. LangGraph
Agent Inbox's older ``HumanInterrupt`` is accepted and converted.

Every JSON Schema here (a proposal's and an edit's ``args_schema``, a
question's ``answer_schema``) is checked by the one validator of this module,
whose ``multipleOf`` is exact on decimals (see ``_multiple_of``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from functools import cache
from typing import Any

import jsonschema
from jsonschema.protocols import Validator

from .exceptions import InvalidAnswer, InvalidProposal, InvalidRequest, SymfonicError

DECISION_TYPES = ("approve", "edit", "reject", "respond")


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str).encode()


def action_digest(prompt: dict[str, Any]) -> str:
    """What the reviewer is shown, hashed: an answer is bound to these actions."""
    return hashlib.sha256(_canonical(prompt.get("action_requests", []))).hexdigest()


def _from_agent_inbox(interrupts: list[dict[str, Any]]) -> dict[str, Any]:
    requests, configs = [], []
    for item in interrupts:
        action = item.get("action_request") or {}
        config = item.get("config") or {}
        name = action.get("action")
        if not isinstance(name, str) or not name:
            raise InvalidRequest("A HumanInterrupt needs action_request.action.")
        request: dict[str, Any] = {"name": name, "args": dict(action.get("args") or {})}
        if item.get("description"):
            request["description"] = str(item["description"])
        allowed = [d for d, flag in (("approve", "allow_accept"), ("edit", "allow_edit"),
                                     ("respond", "allow_respond"), ("reject", "allow_ignore"))
                   if config.get(flag, False)]
        requests.append(request)
        configs.append({"action_name": name, "allowed_decisions": allowed or ["approve", "reject"]})
    return {"action_requests": requests, "review_configs": configs}


def normalize_prompt(prompt: Any) -> dict[str, Any]:
    """Return a validated ``HITLRequest``, converting Agent Inbox's shape."""
    if isinstance(prompt, dict) and "action_request" in prompt:
        prompt = [prompt]
    if isinstance(prompt, list):
        prompt = _from_agent_inbox(prompt)
    if not isinstance(prompt, dict) or not isinstance(prompt.get("action_requests"), list):
        raise InvalidRequest("An approval prompt must be a HITLRequest with action_requests.")
    requests = prompt["action_requests"]
    if not requests:
        raise InvalidRequest("An approval prompt needs at least one action request.")
    for request in requests:
        if not isinstance(request, dict) or not isinstance(request.get("name"), str):
            raise InvalidRequest("Each action request needs a name.")
        if not isinstance(request.get("args", {}), dict):
            raise InvalidRequest("Each action request's args must be an object.")
    configs = prompt.get("review_configs") or []
    for config in configs:
        if not isinstance(config, dict):
            raise InvalidRequest("Each review config must be an object.")
        bad = set(config.get("allowed_decisions", [])) - set(DECISION_TYPES)
        if bad:
            raise InvalidRequest(f"Unknown decision types in review_configs: {sorted(bad)}.")
    return {"action_requests": [dict(r, args=dict(r.get("args", {}))) for r in requests],
            "review_configs": list(configs)}


def review_config(prompt: dict[str, Any], action_name: str) -> dict[str, Any]:
    configs: list[dict[str, Any]] = prompt.get("review_configs") or []
    for config in configs:
        if config.get("action_name") == action_name:
            return config
    return {"action_name": action_name, "allowed_decisions": list(DECISION_TYPES)}


# --- JSON Schema, with multipleOf on the decimals numbers are written as ------------------

def question_text(prompt: Any) -> str:
    """The words of a question pause's prompt (its JSON when it has none)."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, dict):
        for key in ("question", "text", "message", "description"):
            value = prompt.get(key)
            if isinstance(value, str):
                return value
    return json.dumps(prompt, ensure_ascii=False, default=str)


#: How much of a pause's words its search text keeps.
SEARCH_TEXT_CHARS = 2000


#: Punctuation (and ``_``): what search text and search terms drop.
_PUNCTUATION = re.compile(r"[^\w\s]|_")


def searchable(text: str) -> str:
    """``text`` as search compares it: case-folded, punctuation dropped.

    ``ACME-1234``, ``acme_1234`` and ``acme1234`` are then one word, the same
    for the stored text and the term typed. That makes a trigram index
    selective: it splits words at punctuation, so ``ACME-12`` kept as two
    words, ``acme`` and ``12``, matched every row of the tenant with any
    word starting ``12`` (83,000 candidates at 1M pauses, for 1,110 matches).
    """
    return _PUNCTUATION.sub("", text.casefold())


def search_text(kind: str, prompt: Any, *ids: str) -> str:
    """What a reviewer searches a pause by, as one ``searchable`` text: each proposed
    action's name, description and arguments (an approval), or the question; then
    ``ids`` (the session and thread). At most ``SEARCH_TEXT_CHARS``."""
    if kind == "approval" and isinstance(prompt, dict):
        words = [text for request in prompt.get("action_requests") or []
                 for text in (request.get("name"), request.get("description"),
                              json.dumps(request.get("args"), ensure_ascii=False, default=str))
                 if isinstance(text, str) and text]
    else:
        words = [question_text(prompt)]
    return searchable("\n".join([*words, *(i for i in ids if i)]))[:SEARCH_TEXT_CHARS]


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


def _validator(schema: Any, what: str, refusal: type[SymfonicError]) -> Validator:
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


def _violation(validator: Validator, instance: Any) -> str | None:
    """The most relevant way ``instance`` breaks the schema, with where; ``None`` if it fits."""
    error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
    if error is None:
        return None
    text = error.message if error.json_path == "$" else f"{error.json_path}: {error.message}"
    return text if len(text) <= VIOLATION_CHARS else text[:VIOLATION_CHARS - 1] + "…"


def _not_json(value: Any) -> str | None:
    """Why ``value`` is not JSON (NaN, Infinity, a Decimal, a set), or ``None`` if it is.

    Checked before a schema: NaN passes ``maximum`` and ``exclusiveMinimum`` (every
    comparison with it is false), and PostgreSQL's jsonb refuses it when stored.
    """
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return str(exc)
    return None


# --- proposals and answers --------------------------------------------------------------

def validate_proposal(prompt: Any) -> dict[str, Any]:
    """Return ``prompt`` as a ``HITLRequest`` whose actions fit their own schemas.

    ``InvalidRequest`` if the prompt is malformed; ``InvalidProposal``, naming the
    action and the violation, if an action's ``args`` are not JSON, its review
    config's ``args_schema`` is not a valid JSON Schema, or the args do not fit it.
    A person is never asked to approve what the agent's own schema rules out.
    """
    proposal = normalize_prompt(prompt)
    for request in proposal["action_requests"]:
        name = request["name"]
        _check_args(request["args"], review_config(proposal, name).get("args_schema"), name,
                    InvalidProposal, subject=f"The proposed arguments of {name!r}",
                    schema_word="args_schema")
    return proposal


def _check_args(args: Any, schema: Any, name: str, refusal: type[SymfonicError], *,
                subject: str, schema_word: str) -> None:
    """Raise ``refusal`` unless ``args`` are JSON that fit ``schema`` (if there is one).

    One check for both sides of an approval: the agent's proposal
    (``InvalidProposal``) and a reviewer's edit of it (``InvalidAnswer``).
    """
    problem = _not_json(args)
    if problem:
        raise refusal(f"{subject} are not JSON: {problem}.")
    if schema is None:
        return
    violation = _violation(_validator(schema, f"The args_schema of {name!r}", refusal), args)
    if violation:
        raise refusal(f"{subject} do not fit its {schema_word}: {violation}.")


def _check_edited_args(args: Any, schema: Any, action_name: str) -> None:
    if not isinstance(args, dict):
        raise InvalidAnswer(f"Edited arguments for {action_name!r} must be an object.")
    _check_args(args, schema, action_name, InvalidAnswer,
                subject=f"Edited arguments for {action_name!r}", schema_word="schema")


def validate_response(prompt: dict[str, Any], answer: Any) -> dict[str, Any]:
    """Check a ``HITLResponse`` against its prompt; return it normalized."""
    if not isinstance(answer, dict) or not isinstance(answer.get("decisions"), list):
        raise InvalidAnswer('An approval is answered with {"decisions": [...]}.')
    requests = prompt["action_requests"]
    decisions = answer["decisions"]
    if len(decisions) != len(requests):
        raise InvalidAnswer(
            f"Expected {len(requests)} decision(s), one per action request; got {len(decisions)}."
        )
    out = []
    for request, decision in zip(requests, decisions, strict=True):
        name = request["name"]
        config = review_config(prompt, name)
        kind = decision.get("type") if isinstance(decision, dict) else None
        if kind not in DECISION_TYPES:
            raise InvalidAnswer(f"Decision for {name!r} needs a type among {list(DECISION_TYPES)}.")
        if kind not in config.get("allowed_decisions", DECISION_TYPES):
            raise InvalidAnswer(f"{kind!r} is not an allowed decision for {name!r}.")
        clean: dict[str, Any] = {"type": kind}
        if kind == "edit":
            edited = decision.get("edited_action")
            if not isinstance(edited, dict):
                raise InvalidAnswer(f"An edit of {name!r} needs edited_action {{name, args}}.")
            if edited.get("name", name) != name:
                raise InvalidAnswer(f"An edit may change {name!r}'s arguments, not its name.")
            _check_edited_args(edited.get("args"), config.get("args_schema"), name)
            clean["edited_action"] = {"name": name, "args": edited["args"]}
        elif kind in ("reject", "respond"):
            message = decision.get("message")
            if kind == "respond" and not (isinstance(message, str) and message.strip()):
                raise InvalidAnswer(f"A response to {name!r} needs a message.")
            if message is not None and not isinstance(message, str):
                raise InvalidAnswer("A decision's message must be a string.")
            if message is not None:
                clean["message"] = message
        out.append(clean)
    return {"decisions": out}


def validate_question_answer(schema: Any, answer: Any) -> Any:
    problem = _not_json(answer)
    if problem:
        raise InvalidAnswer(f"The answer is not JSON: {problem}.")
    if schema is not None:
        validator = _validator(schema, "The question's answer_schema", InvalidAnswer)
        violation = _violation(validator, answer)
        if violation:
            raise InvalidAnswer(f"The answer does not fit the question's schema: {violation}.")
    return answer


def schema_violation(schema: Any, value: Any, *, what: str) -> str | None:
    """Why ``value`` does not fit ``schema`` (not JSON, or the violation and where), or ``None``.

    A ``schema`` that is not valid JSON Schema raises ``InvalidRequest`` naming ``what``.
    """
    problem = _not_json(value)
    if problem:
        return f"it is not JSON: {problem}"
    return _violation(_validator(schema, what, InvalidRequest), value)


def check_schema(schema: Any, what: str = "answer_schema") -> None:
    """``InvalidRequest``, naming ``what``, unless ``schema`` is valid JSON Schema (or None)."""
    if schema is not None:
        _validator(schema, what, InvalidRequest)


# --- a tool's argument schema, as the review form draws it --------------------------------

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
    if not isinstance(node, dict) or set(node) & _UNWALKED:
        raise _NotPlain
    ref = node.get("$ref")
    if ref is not None:
        name = ref.removeprefix("#/$defs/") if isinstance(ref, str) else ""
        if (not isinstance(ref, str) or not ref.startswith("#/$defs/") or name in seen
                or not isinstance(defs.get(name), dict) or set(node) - _ANNOTATIONS - {"$ref"}):
            raise _NotPlain
        target = _plain(defs[name], defs, seen | {name})
        return {**target, **_plain({k: v for k, v in node.items() if k != "$ref"}, defs, seen)}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("default", "$defs"):
            continue
        if key == "properties":
            if not isinstance(value, dict):
                raise _NotPlain
            out[key] = {name: _plain(sub, defs, seen) for name, sub in value.items()}
        elif key in _SUBSCHEMA and isinstance(value, dict):
            out[key] = _plain(value, defs, seen)
        elif key in _SUBSCHEMA_LISTS:
            if not isinstance(value, list):
                raise _NotPlain
            out[key] = [_plain(sub, defs, seen) for sub in value]
        else:
            out[key] = value
    return _nullable(out)


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


def call_text(name: Any, args: Any) -> str:
    """One proposed call in words: ``refund(order_id=A-1, amount=99.99)``, each
    argument as ``shown`` writes it."""
    listed = (", ".join(f"{key}={shown(value)}" for key, value in args.items())
              if isinstance(args, dict) else shown(args))
    return f"{name}({listed})"


# --- what an edit changed ----------------------------------------------------------------

def shown(value: Any) -> str:
    """A JSON value as a reviewer reads it: a string bare, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           default=str)


#: What ``args_changes`` shows for an argument one side does not have.
ABSENT = "(none)"


def args_changes(proposed: Any, edited: Any, path: str = "") -> list[tuple[str, str, str]]:
    """Where ``edited`` differs from ``proposed``, as ``(argument, was, now)`` rows:
    nested objects by dotted path (``address.city``), an argument added or removed
    as ``ABSENT`` on the side without it; equal arguments are left out."""
    if isinstance(proposed, dict) and isinstance(edited, dict):
        rows = []
        for key in [*proposed, *(k for k in edited if k not in proposed)]:
            where = f"{path}.{key}" if path else str(key)
            if key not in edited:
                rows.append((where, shown(proposed[key]), ABSENT))
            elif key not in proposed:
                rows.append((where, ABSENT, shown(edited[key])))
            else:
                rows += args_changes(proposed[key], edited[key], where)
        return rows
    if _canonical(proposed) == _canonical(edited):
        return []
    return [(path or "(arguments)", shown(proposed), shown(edited))]


def edit_changes(prompt: Any, answer: Any) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """Each edited action of an approval's answer, with ``args_changes`` against what was
    proposed: ``[(action name, rows), ...]`` in the order of the actions."""
    if not isinstance(prompt, dict) or not isinstance(answer, dict):
        return []
    requests = prompt.get("action_requests") or []
    decisions = answer.get("decisions") or []
    edits = []
    for request, decision in zip(requests, decisions, strict=False):
        if not (isinstance(request, dict) and isinstance(decision, dict)
                and decision.get("type") == "edit"):
            continue
        edited = (decision.get("edited_action") or {}).get("args")
        edits.append((str(request.get("name")), args_changes(request.get("args"), edited)))
    return edits
