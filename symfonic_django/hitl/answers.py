"""Proposals and answers checked: a ``HITLRequest``'s actions against their own schemas,
a ``HITLResponse`` (``{"decisions": [...]}``, one decision per action request, each one
of that action's ``allowed_decisions``) against its prompt, a question's answer against
its ``answer_schema``."""

from __future__ import annotations

from typing import Any

from ..exceptions import InvalidAnswer, InvalidProposal, SymfonicError
from .prompts import DECISION_TYPES, normalize_prompt, review_config
from .schemas import not_json, schema_validator, violation


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
    problem = not_json(args)
    if problem:
        raise refusal(f"{subject} are not JSON: {problem}.")
    if schema is None:
        return
    found = violation(schema_validator(schema, f"The args_schema of {name!r}", refusal), args)
    if found:
        raise refusal(f"{subject} do not fit its {schema_word}: {found}.")


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
    return {"decisions": [_checked_decision(prompt, request, decision)
                          for request, decision in zip(requests, decisions, strict=True)]}


def _checked_decision(prompt: dict[str, Any], request: dict[str, Any],
                      decision: Any) -> dict[str, Any]:
    """One action's decision, normalized, if it is one its review config allows."""
    name = request["name"]
    config = review_config(prompt, name)
    kind = decision.get("type") if isinstance(decision, dict) else None
    if kind not in DECISION_TYPES:
        raise InvalidAnswer(f"Decision for {name!r} needs a type among {list(DECISION_TYPES)}.")
    if kind not in config.get("allowed_decisions", DECISION_TYPES):
        raise InvalidAnswer(f"{kind!r} is not an allowed decision for {name!r}.")
    clean: dict[str, Any] = {"type": kind}
    if kind == "edit":
        clean["edited_action"] = _edited_action(decision, name, config.get("args_schema"))
    elif kind in ("reject", "respond"):
        message = _message(decision, kind, name)
        if message is not None:
            clean["message"] = message
    return clean


def _edited_action(decision: dict[str, Any], name: str, schema: Any) -> dict[str, Any]:
    """An edit's ``edited_action``: the same action, with arguments that fit ``schema``."""
    edited = decision.get("edited_action")
    if not isinstance(edited, dict):
        raise InvalidAnswer(f"An edit of {name!r} needs edited_action {{name, args}}.")
    if edited.get("name", name) != name:
        raise InvalidAnswer(f"An edit may change {name!r}'s arguments, not its name.")
    args = edited.get("args")
    if not isinstance(args, dict):
        raise InvalidAnswer(f"Edited arguments for {name!r} must be an object.")
    _check_args(args, schema, name, InvalidAnswer,
                subject=f"Edited arguments for {name!r}", schema_word="schema")
    return {"name": name, "args": edited["args"]}


def _message(decision: dict[str, Any], kind: str, name: str) -> str | None:
    """A reject's or a respond's message (a response needs one), if it is a string."""
    message = decision.get("message")
    if kind == "respond" and not (isinstance(message, str) and message.strip()):
        raise InvalidAnswer(f"A response to {name!r} needs a message.")
    if message is not None and not isinstance(message, str):
        raise InvalidAnswer("A decision's message must be a string.")
    return message


def validate_question_answer(schema: Any, answer: Any) -> Any:
    problem = not_json(answer)
    if problem:
        raise InvalidAnswer(f"The answer is not JSON: {problem}.")
    if schema is not None:
        validator = schema_validator(schema, "The question's answer_schema", InvalidAnswer)
        found = violation(validator, answer)
        if found:
            raise InvalidAnswer(f"The answer does not fit the question's schema: {found}.")
    return answer
