"""The test app's approval policy: four eyes on large refunds (``SYMFONIC["APPROVAL_POLICY"]``)."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

#: A refund above this amount needs a second approver.
FOUR_EYES_ABOVE = Decimal(500)


def two_approvers_over_500(pause: Any) -> int:
    """Two distinct approvers when any refund of the pause is over 500, else one.

    Read when the pause is made, after its actions were checked against their
    ``args_schema``, so an amount is a number here.
    """
    prompt = pause.prompt if isinstance(pause.prompt, dict) else {}
    for request in prompt.get("action_requests", []):
        try:
            amount = Decimal(str((request.get("args") or {}).get("amount", 0)))
        except InvalidOperation:
            continue
        if request.get("name") == "refund" and amount > FOUR_EYES_ABOVE:
            return 2
    return 1
