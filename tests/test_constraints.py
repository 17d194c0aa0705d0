"""The database itself refuses a status that is none of its column's choices.

Only the state machines write a status (``runs.py``, ``pauses.py``,
``notifications``), through the ORM; these check constraints hold the rule for
everything else that reaches the tables: a raw ``UPDATE``, a script, another
program on the same database. Each test writes a bogus status with SQL of its
own, past the ORM, and finds it refused and the row as it was (on SQLite and
on PostgreSQL: run the file with and without ``DATABASE_URL``).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import IntegrityError, connection, models, transaction
from django.utils import timezone

from symfonic_django.models import (
    AnsweredVia,
    DeliveryChannel,
    DeliveryStatus,
    NotificationDelivery,
    Pause,
    PauseKind,
    Redelivery,
    Run,
)

pytestmark = pytest.mark.django_db


def a_run() -> Run:
    run = Run.objects.create(agent="refund", scope_key="acme", status="paused", input={})
    Run.objects.filter(pk=run.pk).update(root=run)
    return run


def a_pause() -> Pause:
    run = a_run()
    return Pause.objects.create(
        run=run, root_run=run, scope_key="acme", kind=PauseKind.APPROVAL, prompt={},
        bound_run_id=str(run.pk), bound_root_run_id=str(run.pk),
        expires_at=timezone.now())


def a_delivery() -> NotificationDelivery:
    return NotificationDelivery.objects.create(
        channel=DeliveryChannel.EMAIL, target="ops@example.com", event_type="pause.requested",
        payload={}, scope_key="acme", run=a_run(), max_attempts=3)


def a_redelivery() -> Redelivery:
    return Redelivery.objects.create(delivery=a_delivery(), via=AnsweredVia.ADMIN,
                                     previous_status=DeliveryStatus.FAILED, attempts_before=3)


def write_raw(row: models.Model, column: str, value: str) -> None:
    """``UPDATE <row's table> SET <column> = value WHERE pk = <row's pk>``, past the ORM."""
    meta = row._meta
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {quote(meta.db_table)} SET {quote(column)} = %s "
                       f"WHERE {quote(meta.pk.column)} = %s",
                       [value, meta.pk.get_db_prep_value(row.pk, connection)])


@pytest.mark.parametrize(("make", "column"), [
    (a_run, "status"),
    (a_pause, "status"),
    (a_delivery, "status"),
    (a_redelivery, "previous_status"),
], ids=["run", "pause", "delivery", "redelivery"])
def test_the_database_refuses_a_status_outside_the_choices(make: Any, column: str) -> None:
    row = make()
    before = getattr(row, column)

    with pytest.raises(IntegrityError), transaction.atomic():
        write_raw(row, column, "bogus")

    row.refresh_from_db()
    assert getattr(row, column) == before
    # Every status of the choices is still written the same way.
    for value in type(row)._meta.get_field(column).choices or []:
        write_raw(row, column, value[0])
        row.refresh_from_db()
        assert getattr(row, column) == value[0]
