"""Values, proposed calls and edits as a reviewer reads them."""

from __future__ import annotations

import json
from typing import Any

from .prompts import canonical


def shown(value: Any) -> str:
    """A JSON value as a reviewer reads it: a string bare, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           default=str)


def call_text(name: Any, args: Any) -> str:
    """One proposed call in words: ``refund(order_id=A-1, amount=99.99)``, each
    argument as ``shown`` writes it."""
    listed = (", ".join(f"{key}={shown(value)}" for key, value in args.items())
              if isinstance(args, dict) else shown(args))
    return f"{name}({listed})"


# --- what an edit changed ----------------------------------------------------------------

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
    if canonical(proposed) == canonical(edited):
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
