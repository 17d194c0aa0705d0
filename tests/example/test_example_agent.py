"""The example's refund agent, as a reviewer reads it: a respond is a message, not a no."""

from __future__ import annotations

import pytest

from example_project.shop.models import Refund
from symfonic_django import pauses
from symfonic_django.models import Run, RunStatus, TurnEvent
from symfonic_django.turns import execute_run

from ..conftest import paused_run

pytestmark = pytest.mark.django_db(transaction=True)


def finish(resolution: pauses.Resolution) -> tuple[Run, str]:
    run = resolution.continuation
    assert execute_run(run.pk) == RunStatus.COMPLETED
    run.refresh_from_db()
    said = TurnEvent.objects.get(run=run, type="message.completed").data["text"]
    return run, said


def test_a_respond_reads_as_a_message_to_the_agent_and_moves_no_money(tenants):
    _, pause = paused_run("refund", {"order_id": "A-1", "amount": 12.5})
    run, said = finish(pauses.respond(pause.pk, "Wait until Nov 28."))
    assert run.output == {"refunded": False, "message": "Wait until Nov 28."}
    assert said == ("The reviewer wrote: \u201cWait until Nov 28.\u201d I made no refund, "
                    "and I will follow their note.")
    assert not Refund.objects.exists()


def test_a_rejection_quotes_the_reviewer_without_running_into_its_full_stop(tenants):
    _, pause = paused_run("refund", {"order_id": "A-1", "amount": 12.5})
    run, said = finish(pauses.reject(pause.pk, comment="Not before Nov 28."))
    assert run.output == {"refunded": False, "reason": "the reviewer rejected it",
                          "message": "Not before Nov 28."}
    assert said == ("No refund was made: the reviewer rejected it. "
                    "They wrote: \u201cNot before Nov 28.\u201d")
    assert ".." not in said and not Refund.objects.exists()


def test_the_shipping_agent_asks_which_carrier_and_books_the_answer(tenants):
    _, pause = paused_run("shipping", {"order_id": "A-7"})
    assert pause.kind == "question"
    run, said = finish(pauses.answer_pause(pause.pk, {"carrier": "ups"}))
    assert run.output == {"carrier": "ups"} and said == "Booked UPS for the replacement."


def test_the_shipping_agent_refuses_a_carrier_it_does_not_know(tenants):
    from symfonic_django.exceptions import InvalidAnswer

    _, pause = paused_run("shipping", {"order_id": "A-7"})
    with pytest.raises(InvalidAnswer):
        pauses.answer_pause(pause.pk, {"carrier": "pigeon"})
