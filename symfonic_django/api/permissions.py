"""Who may see and answer what: the same rule in the API and the admin.

Visibility is the scope rule (``REVIEWER_SCOPES``): a pause of a scope the
caller cannot see does not exist for them (404, never 403). Answering also
needs the ``symfonic_django.answer_pause`` permission (403), and starting a
run over HTTP the ``symfonic_django.start_run`` permission (403).
"""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission

from ..scopes import ANSWER_PERMISSION, may_answer

__all__ = ["ANSWER_PERMISSION", "START_PERMISSION", "CanAnswerPauses", "may_answer"]

#: The permission that lets a user start agent runs through ``POST runs/``.
START_PERMISSION = "symfonic_django.start_run"


class CanAnswerPauses(BasePermission):
    message = "You may not answer pauses (you lack the answer_pause permission)."

    def has_permission(self, request: Any, view: Any) -> bool:
        return may_answer(request.user)

