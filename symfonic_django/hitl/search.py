"""A pause's words as reviewers search them: ``searchable`` text and ``search_text``."""

from __future__ import annotations

import json
import re
from typing import Any

from .prompts import question_text

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
