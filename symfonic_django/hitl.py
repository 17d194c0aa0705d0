"""Approval prompts and answers in LangChain 1.x's HITL shapes.

A prompt is a ``HITLRequest``::

    {"action_requests": [{"name", "args", "description"?}],
     "review_configs": [{"action_name", "allowed_decisions", "args_schema"?}]}

and its answer a ``HITLResponse``: ``{"decisions": [...]}``, one decision per
action request, each one of that action's ``allowed_decisions``. LangGraph
Agent Inbox's older ``HumanInterrupt`` is accepted and converted.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import jsonschema

from .exceptions import InvalidAnswer, InvalidRequest

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


def _check_args(args: Any, schema: Any, action_name: str) -> None:
    if not isinstance(args, dict):
        raise InvalidAnswer(f"Edited arguments for {action_name!r} must be an object.")
    if schema:
        try:
            jsonschema.validate(args, schema)
        except jsonschema.ValidationError as exc:
            raise InvalidAnswer(
                f"Edited arguments for {action_name!r} do not fit its schema: {exc.message}"
            ) from exc


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
            _check_args(edited.get("args"), config.get("args_schema"), name)
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
    if schema:
        try:
            jsonschema.validate(answer, schema)
        except jsonschema.ValidationError as exc:
            raise InvalidAnswer(f"The answer does not fit the question's schema: {exc.message}") from exc
    return answer


def check_schema(schema: Any) -> None:
    if schema is None:
        return
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise InvalidRequest(f"answer_schema is not a valid JSON Schema: {exc.message}") from exc
