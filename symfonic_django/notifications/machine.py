"""A notification delivery's own state machine, every write of its ``status``::

    pending   --attempt-->   pending     (claims one attempt: attempts + 1)
    pending   --deliver-->   delivered
    pending   --retry-->     pending     (next_attempt_at: now + backoff)
    pending   --give_up-->   failed      (the last allowed attempt failed)
    delivered --redeliver--> pending     (a person asked, audited: one more attempt)
    failed    --redeliver--> pending
"""

from __future__ import annotations

from ..models import DeliveryStatus, NotificationDelivery
from ..transitions import Edge, Machine

PENDING, DELIVERED, FAILED = (DeliveryStatus.PENDING, DeliveryStatus.DELIVERED,
                              DeliveryStatus.FAILED)

#: The allowed edges, by name. Nothing else changes a delivery's status.
EDGES: dict[str, Edge] = {
    "attempt": Edge(PENDING, PENDING),
    "deliver": Edge(PENDING, DELIVERED),
    "retry": Edge(PENDING, PENDING),
    "give_up": Edge(PENDING, FAILED),
    "redeliver": Edge({DELIVERED, FAILED}, PENDING),
}
MACHINE = Machine(NotificationDelivery.objects, EDGES)
