"""An approval's prompt in LangChain 1.x's ``HITLRequest`` shape, and a question's words.

A prompt is a ``HITLRequest``::

    {"action_requests": [{"name", "args", "description"?}],
     "review_configs": [{"action_name", "allowed_decisions", "args_schema"?}]}

LangGraph Agent Inbox's older ``HumanInterrupt`` is accepted and converted.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..exceptions import InvalidRequest

DECISION_TYPES = ("approve", "edit", "reject", "respond")

#: Agent Inbox's flags, each with the decision it allows.
_AGENT_INBOX_FLAGS = (("approve", "allow_accept"), ("edit", "allow_edit"),
                      ("respond", "allow_respond"), ("reject", "allow_ignore"))


def canonical(value: Any) -> bytes:
    """``value`` as JSON with sorted keys and no spaces: equal values, equal bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str).encode()


def action_digest(prompt: dict[str, Any]) -> str:
    """What the reviewer is shown, hashed: an answer is bound to these actions."""
    return hashlib.sha256(canonical(prompt.get("action_requests", []))).hexdigest()


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
        allowed = [d for d, flag in _AGENT_INBOX_FLAGS if config.get(flag, False)]
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
    _check_requests(requests)
    configs = prompt.get("review_configs") or []
    _check_configs(configs)
    return {"action_requests": [dict(r, args=dict(r.get("args", {}))) for r in requests],
            "review_configs": list(configs)}


def _check_requests(requests: list[Any]) -> None:
    """``InvalidRequest`` unless there is an action request and each has a name and args."""
    if not requests:
        raise InvalidRequest("An approval prompt needs at least one action request.")
    for request in requests:
        if not isinstance(request, dict) or not isinstance(request.get("name"), str):
            raise InvalidRequest("Each action request needs a name.")
        if not isinstance(request.get("args", {}), dict):
            raise InvalidRequest("Each action request's args must be an object.")


def _check_configs(configs: Any) -> None:
    """``InvalidRequest`` unless each review config is an object of known decisions."""
    for config in configs:
        if not isinstance(config, dict):
            raise InvalidRequest("Each review config must be an object.")
        bad = set(config.get("allowed_decisions", [])) - set(DECISION_TYPES)
        if bad:
            raise InvalidRequest(f"Unknown decision types in review_configs: {sorted(bad)}.")


def review_config(prompt: dict[str, Any], action_name: str) -> dict[str, Any]:
    configs: list[dict[str, Any]] = prompt.get("review_configs") or []
    for config in configs:
        if config.get("action_name") == action_name:
            return config
    return {"action_name": action_name, "allowed_decisions": list(DECISION_TYPES)}


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
