"""The reviewer UI in the Django admin: scoping, the answer forms, bulk actions.

Every answer goes through the pause state machine; these tests look at what
it leaves behind (the pause row, its audit row, the continuation run, the
refund the agent records), and at what the reviewer is told.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from symfonic_django import admin as symfonic_admin
from symfonic_django import hitl, pauses, pg
from symfonic_django.datetimes import format_datetime
from symfonic_django.models import (
    Decision,
    Pause,
    PauseKind,
    PauseSearch,
    PauseStatus,
    Run,
    RunRetry,
    RunStatus,
    TurnEvent,
)
from symfonic_django.runs import start_run
from symfonic_django.turns import execute_run
from tests.testapp.models import Membership, Refund, Tenant
from tests.testapp.seed import seed_users

from .admin_pages import bare_pause, login, messages_of, page, refund_pause
from .conftest import snapshot

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:symfonic_django_pause_changelist"


@pytest.fixture
def users(tenants: dict[str, Tenant]) -> dict[str, Any]:
    return seed_users()


def post_answer(client: Client, pause: Pause, data: dict[str, Any], **kwargs: Any) -> Any:
    return client.post(page(pause), data, **kwargs)


# --- scoping --------------------------------------------------------------------------

def test_reviewer_sees_only_the_pauses_of_her_scopes(users):
    acme = [refund_pause("acme", order=f"ACME-{i}") for i in range(2)]
    globex = refund_pause("globex", order="GLOBEX-1")
    response = login("alice").get(reverse(CHANGELIST))
    assert response.status_code == 200
    shown = {p.pk for p in response.context["cl"].result_list}
    assert shown == {p.pk for p in acme}
    body = response.content.decode()
    assert "ACME-0" in body and "GLOBEX-1" not in body
    assert str(globex.pk) not in body


def test_a_pause_of_another_scope_is_a_404_not_a_redirect(users):
    pause = refund_pause("acme")
    bob = login("bob")
    assert bob.get(page(pause)).status_code == 404
    assert bob.post(page(pause), {"decision_0": "approve"}).status_code == 404
    history = reverse("admin:symfonic_django_pause_history", args=[pause.pk])
    assert bob.get(history).status_code == 404
    assert Pause.objects.get(pk=pause.pk).status == PauseStatus.PENDING


def test_runs_events_and_decisions_of_another_scope_are_404(users):
    pause = refund_pause("acme")
    pauses.approve(pause.pk, actor=None)
    event = TurnEvent.objects.filter(run=pause.run).first()
    decision = Decision.objects.get(pause=pause)
    alice, bob = login("alice"), login("bob")
    for name, pk in (("run", pause.run_id), ("turnevent", event.pk), ("decision", decision.pk)):
        url = reverse(f"admin:symfonic_django_{name}_change", args=[pk])
        assert alice.get(url).status_code == 200, name
        assert bob.get(url).status_code == 404, name
        listing = bob.get(reverse(f"admin:symfonic_django_{name}_changelist"))
        assert listing.context["cl"].result_count == 0, name


def test_every_event_carries_its_runs_scope_and_a_reviewer_lists_them_by_it(users):
    acme, globex = refund_pause("acme"), refund_pause("globex")
    pauses.approve(acme.pk, actor=None)  # its continuation's events too, once it runs
    stored = TurnEvent.objects.select_related("run")
    assert stored.count() > 2 and all(e.scope_key == e.run.scope_key for e in stored)
    response = login("alice").get(reverse("admin:symfonic_django_turnevent_changelist"))
    shown = {e.run_id for e in response.context["cl"].result_list}
    assert acme.run_id in shown and globex.run_id not in shown


def test_an_unknown_or_malformed_id_is_a_404(users):
    alice = login("alice")
    assert alice.get(reverse("admin:symfonic_django_pause_change",
                             args=["00000000-0000-0000-0000-000000000000"])).status_code == 404
    assert alice.get("/admin/symfonic_django/pause/not-a-uuid/change/").status_code == 404


def test_superuser_sees_every_scope(users):
    refund_pause("acme")
    refund_pause("globex")
    response = login("admin").get(reverse(CHANGELIST))
    assert {p.scope_key for p in response.context["cl"].result_list} == {"acme", "globex"}
    scope_filter = next(f for f in response.context["cl"].filter_specs if f.title == "scope")
    assert [value for value, _ in scope_filter.lookup_choices] == ["acme", "globex"]


def test_a_new_scope_is_offered_on_the_next_page(users):
    def choices() -> list[str]:
        response = login("admin").get(reverse(CHANGELIST))
        scope_filter = next(f for f in response.context["cl"].filter_specs if f.title == "scope")
        return [value for value, _ in scope_filter.lookup_choices]

    refund_pause("acme")
    assert choices() == ["acme"]
    refund_pause("globex")
    assert choices() == ["acme", "globex"]


def test_scope_filter_offers_only_granted_scopes_and_search_finds_an_order(users):
    refund_pause("acme", order="ACME-777")
    refund_pause("acme", order="ACME-888")
    refund_pause("globex", order="GLOBEX-777")
    alice = login("alice")
    response = alice.get(reverse(CHANGELIST))
    scope_filter = next(f for f in response.context["cl"].filter_specs if f.title == "scope")
    assert [value for value, _ in scope_filter.lookup_choices] == ["acme"]
    found = alice.get(reverse(CHANGELIST), {"q": "777"}).context["cl"].result_list
    assert [p.prompt["action_requests"][0]["args"]["order_id"] for p in found] == ["ACME-777"]
    by_id = alice.get(reverse(CHANGELIST), {"q": str(found[0].pk)}).context["cl"].result_list
    assert [p.pk for p in by_id] == [found[0].pk]


def test_search_reads_the_actions_words_and_the_ids_in_any_case_and_nothing_else(users):
    described = bare_pause(prompt={"action_requests": [{
        "name": "refund", "args": {"order_id": "Zq-4417", "amount": 5},
        "description": "Refund the customer's DAMAGED parcel"}]})
    question = bare_pause(kind=PauseKind.QUESTION, prompt={"question": "Ship to Île-de-France?"})
    other = bare_pause()
    PauseSearch.objects.filter(pk=other.pk).update(text=hitl.search_text(
        "question", "", "session s-19", "thread t-77"))
    alice = login("alice")

    def found(term: str) -> list[Any]:
        cl = alice.get(reverse(CHANGELIST), {"q": term}).context["cl"]
        return sorted(p.pk for p in cl.result_list)

    assert found("zQ-44") == [described.pk]  # an order id, whatever its case
    assert found("damaged PARCEL") == [described.pk]  # the description, as a phrase
    assert found("île-DE") == [question.pk]
    assert found("T-77") == [other.pk]
    assert found("refund") == [described.pk]  # the action's name (other's text was replaced)
    assert found("args_schema") == found("acme") == []  # not the schema, not the scope
    assert found("zq 4417") == []  # a space is not punctuation
    assert found("ZQ_44.17") == [described.pk]  # punctuation, LIKE's wildcards included,
    assert found("zq%17") == found("z_4417") == []  # is dropped, never a wildcard


def test_run_changelist_is_scoped_and_finds_a_pasted_run_id(users):
    mine = refund_pause("acme")
    theirs = refund_pause("globex")
    runs = reverse("admin:symfonic_django_run_changelist")
    alice = login("alice")
    listed = alice.get(runs).context["cl"].result_list
    assert [r.pk for r in listed] == [mine.run_id]
    assert listed[0].pending_count == 1
    assert [r.pk for r in alice.get(runs, {"q": str(mine.run_id)}).context["cl"].result_list] == [
        mine.run_id]
    assert alice.get(runs, {"q": str(theirs.run_id)}).context["cl"].result_count == 0


def test_changelist_shows_status_kind_summary_agent_scope_age_expiry_and_answerer(users):
    answered = refund_pause("acme", order="ACME-1", amount=12.5)
    refund_pause("acme", order="ACME-2")
    pauses.approve(answered.pk, actor=get_user_model().objects.get(username="alice"),
                   via="admin")
    body = login("alice").get(reverse(CHANGELIST)).content.decode()
    # (PostgreSQL's jsonb keeps its own key order, so the arguments are checked one by one.)
    for text in ("Pending", "Answered", "Approval", "refund(", "order_id=ACME-1", "amount=12.5",
                 "acme", "alice, in the admin", "in 23 h"):
        assert text in body, text
    assert re.search(r'class="field-age">\d+ s</td>', body)


def listing(model: Any) -> str:
    return reverse(f"admin:symfonic_django_{model._meta.model_name}_changelist")


def rows(model: Any, n: int) -> None:
    """``n`` more rows of ``model`` in acme (each with a pause, its run, an event, a decision)."""
    for _ in range(n):
        pause = bare_pause("acme")
        TurnEvent.objects.create(run=pause.run, seq=1, type="turn.paused", data={},
                                 scope_key=pause.scope_key)
        pauses.approve(pause.pk, actor=None)


@pytest.mark.parametrize("model", [Pause, Run, TurnEvent, Decision])
@pytest.mark.parametrize("who", ["alice", "admin"])
def test_changelist_makes_the_same_queries_for_5_rows_as_for_50(
        users, model, who, exact_count_up_to, django_assert_num_queries):
    # On PostgreSQL 50 rows are then past the exact count's limit, and 5 are not.
    exact_count_up_to(10)
    client = login(who)
    rows(model, 5)
    client.get(listing(model))  # the session and permission caches, as on any later page
    with CaptureQueriesContext(connection) as five:
        response = client.get(listing(model))
    assert response.status_code == 200 and len(response.context["cl"].result_list) >= 5
    rows(model, 45)
    with django_assert_num_queries(len(five)):
        response = client.get(listing(model))
    assert len(response.context["cl"].result_list) >= 50


@pytest.mark.parametrize(("model", "query"), [
    (model, query) for model in (Pause, Run, TurnEvent, Decision)
    # Runs are searched by an exact id or scope key, pauses by words.
    for query in ("", "?o=-2", "?q=acme" if model is Run else "?q=a", "?scope=acme")
] + [(Pause, "?status__exact=pending&o=2"), (Pause, "?q=acme"), (Run, "?status__exact=paused")])
def test_every_changelist_renders_its_rows_through_the_admins_own_templates(users, model, query):
    answered = refund_pause("acme", order="ACME-<1>", amount=12.5)
    refund_pause("globex", order="GLOBEX-1")
    bare_pause("acme", kind=PauseKind.QUESTION)
    pauses.approve(answered.pk, actor=get_user_model().objects.get(username="alice"),
                   via="admin")
    execute_run(Pause.objects.get(pk=answered.pk).continuation_id)
    response = login("admin").get(listing(model) + query)
    assert response.status_code == 200
    assert "admin/change_list_results.html" in [t.name for t in response.templates]
    cl = response.context["cl"]
    assert cl.result_list, "nothing listed"
    body = response.content.decode()
    # The pause list's bulk answers, the run list's retry (the superuser may do both).
    has_actions = response.context["action_form"] is not None
    assert has_actions == (model in (Pause, Run))
    for row in cl.result_list:  # a link to its page (and a checkbox) for every row
        assert (f'value="{row.pk}"' in body) == has_actions
        assert reverse(f"admin:symfonic_django_{model._meta.model_name}_change",
                       args=[row.pk]) in body
    if model is Pause and not query:
        assert body.count('class="action-select"') == 3
        assert "ACME-&lt;1&gt;" in body and "ACME-<1>" not in body  # escaped


def _page_ids(model: Any, who: str, page: int) -> tuple[list[Any], list[Any], list[str]]:
    """The ids page ``page`` lists, those the list's ordered queryset holds there, and the
    SQL the page ran."""
    with CaptureQueriesContext(connection) as captured:
        cl = login(who).get(f"{listing(model)}?p={page}").context["cl"]
    per_page = cl.list_per_page
    expected = list(cl.queryset.values_list("pk", flat=True)[(page - 1) * per_page:][:per_page])
    return ([row.pk for row in cl.result_list], expected,
            [q["sql"] for q in captured.captured_queries])


@pytest.mark.parametrize("model", [Pause, Run, TurnEvent, Decision])
@pytest.mark.parametrize("who", ["alice", "admin"])
def test_a_deeper_page_reads_its_ids_alone_then_the_same_rows_in_the_same_order(
        users, model, who, monkeypatch):
    monkeypatch.setattr(type(symfonic_admin.admin.site.get_model_admin(model)), "list_per_page", 3)
    rows(model, 8)
    for number in (2, 3):
        listed, expected, sql = _page_ids(model, who, number)
        assert listed == expected and listed  # 8 rows and more (each run has a continuation)
        offset = f"OFFSET {3 * (number - 1)}"
        skipping = [q for q in sql if offset in q]
        # The rows skipped are read for their ids: nothing joined, nothing computed.
        assert len(skipping) == 1, sql
        assert "JOIN" not in skipping[0] and skipping[0].count("SELECT") == 1, skipping[0]
    # The first page skips nothing: one query reads its rows whole.
    listed, expected, sql = _page_ids(model, who, 1)
    assert listed == expected and not [q for q in sql if "OFFSET" in q]


@pytest.mark.parametrize("model", [Pause, Run])
def test_a_lists_count_reads_ids_not_its_joins_or_annotations(users, model):
    rows(model, 3)
    with CaptureQueriesContext(connection) as captured:
        login("alice").get(listing(model))
    counts = [q["sql"] for q in captured.captured_queries if q["sql"].startswith("SELECT COUNT")]
    assert counts
    for sql in counts:  # the pause list's approvals and the run list's pauses are not counted
        assert "JOIN" not in sql and sql.count("SELECT") <= 2, sql


def analyze(model: Any) -> None:
    """Fresh planner statistics for ``model``'s table (autovacuum's job, done now)."""
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")


def test_a_list_within_the_limit_shows_its_exact_count(users):
    for scope in ("acme", "acme", "globex"):
        bare_pause(scope)
    for who, count in (("admin", 3), ("alice", 2)):
        response = login(who).get(listing(Pause))
        assert response.context["cl"].result_count == count
        assert not response.context["cl"].paginator.count_is_estimate
        assert "is an estimate" not in response.content.decode()


@pytest.mark.postgres
def test_past_the_limit_a_list_shows_the_planners_estimate_and_says_so(users, exact_count_up_to):
    exact_count_up_to(10)
    for i in range(40):
        bare_pause("acme" if i % 2 else "globex")
    analyze(Pause)
    response = login("admin").get(listing(Pause))
    cl = response.context["cl"]
    assert cl.paginator.count_is_estimate
    assert cl.result_count == 40  # the planner's figure: exact on a table it has just analyzed
    assert "The number of pauses is an estimate" in response.content.decode()
    # One scope's 20: an estimate from the same statistics, and never below what was counted.
    narrowed = login("alice").get(listing(Pause)).context["cl"]
    assert narrowed.paginator.count_is_estimate and narrowed.result_count >= 11
    assert len(narrowed.result_list) == 20


@pytest.mark.postgres
def test_the_planners_row_estimate_is_the_exact_count_of_a_small_analyzed_table(users):
    for i in range(25):
        bare_pause(("acme", "globex", "initech")[i % 3])
    for model in (Pause, Run):
        analyze(model)
        assert pg.planner_rows(model.objects.all()) == model.objects.count() == 25


@pytest.mark.postgres
def test_the_loose_index_scan_finds_the_distinct_scopes_the_orm_finds(users):
    for scope in ("globex", "acme", "initech", "acme", "Acme", "a b", ""):
        bare_pause(scope)
    for model in (Pause, Run):
        portable = list(model.objects.order_by("scope_key")
                        .values_list("scope_key", flat=True).distinct())
        assert pg.distinct_values(model, "scope_key") == portable
        assert len(portable) == 6
    Pause.objects.all().delete()
    assert pg.distinct_values(Pause, "scope_key") == []


# --- the pause page -----------------------------------------------------------------

def test_pause_page_shows_the_action_its_arguments_and_description(users):
    pause = refund_pause("acme", amount=40, order="ACME-42")
    response = login("alice").get(page(pause))
    assert response.status_code == 200
    body = response.content.decode()
    assert "Refund 40 on order ACME-42" in body  # the description
    assert "<td>order_id</td><td>ACME-42</td>" in body  # the arguments table
    assert "<td>amount</td><td><code>40</code></td>" in body
    form = response.context["form"]
    assert [c for c, _ in form.fields["decision_0"].choices] == [
        "approve", "edit", "reject", "respond"]
    assert '"amount": 40' in form["args_0"].value()  # the editor starts from the proposal


def test_only_the_allowed_decisions_are_offered_and_accepted(users):
    pause = bare_pause(prompt={
        "action_requests": [{"name": "ship", "args": {"qty": 1}}],
        "review_configs": [{"action_name": "ship", "allowed_decisions": ["approve", "reject"]}]})
    alice = login("alice")
    form = alice.get(page(pause)).context["form"]
    assert [c for c, _ in form.fields["decision_0"].choices] == ["approve", "reject"]
    assert "args_0" not in form.fields
    before = snapshot(pause)
    response = post_answer(alice, pause, {"decision_0": "edit", "args_0": '{"qty": 2}'})
    assert response.status_code == 200
    assert any("not one of the available choices" in m for m in messages_of(response))
    assert snapshot(pause) == before


def test_approve_sends_one_hitl_response_and_lands_on_the_live_viewer(users):
    from symfonic_django.viewer import viewer_url

    pause = refund_pause("acme", amount=40, order="ACME-5")
    alice = login("alice")
    response = post_answer(alice, pause, {"decision_0": "approve", "args_0": "{}"})
    pause.refresh_from_db()
    assert response.status_code == 302
    assert response["Location"] == viewer_url(pause.continuation_id) != page(pause)
    assert pause.status == PauseStatus.ANSWERED
    assert pause.answer == {"decisions": [{"type": "approve"}]}
    assert pause.answered_by.username == "alice" and pause.answered_via == "admin"
    decision = Decision.objects.get(pause=pause)
    assert (decision.action, decision.via, decision.actor_label) == ("approve", "admin", "alice")
    assert Run.objects.get(pk=pause.continuation_id).status == RunStatus.QUEUED
    shown = alice.get(page(pause))
    body = shown.content.decode()
    assert 'id="decision"' in body and "Approved" in body and "by <strong>alice</strong>" in body
    assert shown.context["form"] is None
    assert execute_run(pause.continuation_id) == RunStatus.COMPLETED
    assert Refund.objects.get().amount == Decimal("40")


def test_edit_and_approve_runs_the_action_with_the_edited_arguments(users):
    pause = refund_pause("acme", amount=40, order="ACME-6")
    response = post_answer(login("alice"), pause, {
        "decision_0": "edit", "args_0": '{"order_id": "ACME-6", "amount": 25.5}'})
    assert response.status_code == 302
    pause.refresh_from_db()
    assert pause.answer == {"decisions": [{"type": "edit", "edited_action": {
        "name": "refund", "args": {"order_id": "ACME-6", "amount": 25.5}}}]}
    assert Decision.objects.get(pause=pause).action == "edit"
    assert execute_run(pause.continuation_id) == RunStatus.COMPLETED
    refund = Refund.objects.get()
    assert (refund.order_id, refund.amount) == ("ACME-6", Decimal("25.50"))
    body = login("alice").get(page(pause)).content.decode()
    assert "Edited and approved" in body and "<td>amount</td><td><code>25.5</code></td>" in body


@pytest.mark.parametrize("args, words", [
    ('{"order_id": "ACME-7", "amount": -5}', "do not fit its schema"),
    ('{"order_id": "ACME-7", "amount": 5, "extra": 1}', "do not fit its schema"),
    ('{"order_id": "ACME-7", amount: 5}', "not valid JSON"),
    ('[1, 2]', "must be an object"),
])
def test_an_invalid_edit_is_refused_in_words_and_changes_nothing(users, args, words):
    pause = refund_pause("acme", amount=40, order="ACME-7")
    before = snapshot(pause)
    response = post_answer(login("alice"), pause, {"decision_0": "edit", "args_0": args})
    assert response.status_code == 200
    said = " ".join(messages_of(response))
    assert "The answer was not sent" in said and words in said
    assert "Traceback" not in response.content.decode()
    assert response.context["form"]["args_0"].value() == args  # the reviewer's text is kept
    assert snapshot(pause) == before
    assert not Decision.objects.filter(pause=pause).exists()


def test_reject_with_a_message(users):
    pause = refund_pause("acme", order="ACME-8")
    post_answer(login("alice"), pause, {"decision_0": "reject", "message_0": "Duplicate order"})
    pause.refresh_from_db()
    assert pause.answer == {"decisions": [{"type": "reject", "message": "Duplicate order"}]}
    decision = Decision.objects.get(pause=pause)
    assert (decision.action, decision.comment) == ("reject", "Duplicate order")
    assert execute_run(pause.continuation_id) == RunStatus.COMPLETED
    assert not Refund.objects.exists()


def test_respond_needs_a_message(users):
    pause = refund_pause("acme", order="ACME-9")
    alice = login("alice")
    before = snapshot(pause)
    response = post_answer(alice, pause, {"decision_0": "respond", "message_0": "  "})
    assert any("needs a message" in m for m in messages_of(response))
    assert snapshot(pause) == before
    post_answer(alice, pause, {"decision_0": "respond", "message_0": "Ask for the receipt"})
    pause.refresh_from_db()
    assert pause.answer == {"decisions": [{"type": "respond", "message": "Ask for the receipt"}]}


def test_no_decision_chosen_is_refused(users):
    pause = refund_pause("acme")
    response = post_answer(login("alice"), pause, {})
    assert any("Choose a decision for refund" in m for m in messages_of(response))
    assert Pause.objects.get(pk=pause.pk).status == PauseStatus.PENDING


def test_several_actions_are_answered_with_one_response(users):
    pause = bare_pause(prompt={"action_requests": [
        {"name": "refund", "args": {"order_id": "M-1", "amount": 3}},
        {"name": "email", "args": {"to": "c@example.com"}, "description": "Tell the customer"},
    ]})
    alice = login("alice")
    body = alice.get(page(pause)).content.decode()
    assert "Tell the customer" in body and "c@example.com" in body
    post_answer(alice, pause, {"decision_0": "edit", "args_0": '{"order_id": "M-1", "amount": 2}',
                               "decision_1": "reject", "message_1": "not needed"})
    pause.refresh_from_db()
    assert pause.answer == {"decisions": [
        {"type": "edit", "edited_action": {"name": "refund",
                                           "args": {"order_id": "M-1", "amount": 2}}},
        {"type": "reject", "message": "not needed"},
    ]}


def test_an_already_answered_pause_says_who_answered_and_when(users):
    pause = refund_pause("acme")
    alice = login("alice")
    stale = alice.get(page(pause))  # alice opened the page while it was pending
    assert stale.context["form"] is not None
    admin_user = get_user_model().objects.get(username="admin")
    pauses.reject(pause.pk, actor=admin_user, via="admin", comment="no")
    before = snapshot(pause)
    response = post_answer(alice, pause, {"decision_0": "approve"}, follow=True)
    answered_at = Pause.objects.get(pk=pause.pk).answered_at
    expected = f"Already answered by admin at {format_datetime(answered_at, 'time')}."
    assert expected in messages_of(response) or expected in response.content.decode()
    assert response.redirect_chain[-1][0] == page(pause)
    assert snapshot(pause) == before
    assert Decision.objects.filter(pause=pause).count() == 1


def test_an_expired_pause_is_refused_in_words(users):
    pause = refund_pause("acme")
    Pause.objects.filter(pk=pause.pk).update(expires_at=pause.created_at)
    before = snapshot(pause)
    alice = login("alice")
    shown = alice.get(page(pause))
    assert shown.context["form"] is None and "past its expiry" in shown.content.decode()
    response = post_answer(alice, pause, {"decision_0": "approve"})
    assert any(m.startswith("This pause expired at") for m in messages_of(response))
    assert snapshot(pause) == before


# --- questions ------------------------------------------------------------------------

QUESTION_SCHEMA = {
    "type": "object",
    "properties": {
        "colour": {"enum": ["red", "blue"], "title": "Colour"},
        "count": {"type": "integer", "minimum": 1},
        "price": {"type": "number"},
        "urgent": {"type": "boolean"},
        "name": {"type": "string"},
        "notes": {"type": "string", "format": "textarea"},
        "summary": {"type": "string", "maxLength": 500},
    },
    "required": ["colour", "count"],
    "additionalProperties": False,
}


def test_question_form_is_generated_from_its_answer_schema(users):
    pause = bare_pause(kind=PauseKind.QUESTION, answer_schema=QUESTION_SCHEMA,
                       prompt={"question": "Which colour should the box be?"})
    response = login("alice").get(page(pause))
    body = response.content.decode()
    assert "Which colour should the box be?" in body
    form = response.context["form"]
    widgets = {name: type(field.widget).__name__ for name, field in form.fields.items()}
    assert widgets == {"colour": "Select", "count": "NumberInput", "price": "NumberInput",
                       "urgent": "CheckboxInput", "name": "TextInput", "notes": "Textarea",
                       "summary": "Textarea",
                       "review_comment": "Textarea"}  # the comment kept in the audit
    assert form.fields["colour"].required and not form.fields["name"].required


def test_question_answer_is_typed_by_the_schema(users):
    pause = bare_pause(kind=PauseKind.QUESTION, answer_schema=QUESTION_SCHEMA)
    response = post_answer(login("alice"), pause, {
        "q-colour": '"blue"', "q-count": "3", "q-price": "9.5", "q-urgent": "on",
        "q-name": "", "q-notes": "fragile\nhandle with care", "q-summary": ""})
    assert response.status_code == 302
    pause.refresh_from_db()
    assert pause.answer == {"colour": "blue", "count": 3, "price": 9.5, "urgent": True,
                            "notes": "fragile\nhandle with care"}
    assert Decision.objects.get(pause=pause).action == "answer"
    body = login("alice").get(page(pause)).content.decode()
    assert "<td>colour</td><td>blue</td>" in body


def test_question_answer_outside_the_schema_is_refused(users):
    pause = bare_pause(kind=PauseKind.QUESTION, answer_schema=QUESTION_SCHEMA)
    before = snapshot(pause)
    response = post_answer(login("alice"), pause, {"q-colour": '"green"', "q-count": "0"})
    said = " ".join(messages_of(response))
    assert "The answer was not sent" in said and "not one of the available choices" in said
    assert snapshot(pause) == before


def test_question_with_a_scalar_schema_or_none(users):
    boolean = bare_pause(kind=PauseKind.QUESTION, answer_schema={"type": "boolean"})
    free = bare_pause(kind=PauseKind.QUESTION, answer_schema=None)
    alice = login("alice")
    post_answer(alice, boolean, {})  # an unticked checkbox answers False
    post_answer(alice, free, {"q-answer": "Use the blue box."})
    assert Pause.objects.get(pk=boolean.pk).answer is False
    assert Pause.objects.get(pk=free.pk).answer == "Use the blue box."


# --- permission ----------------------------------------------------------------------

@pytest.fixture
def carol(users: dict[str, Any]) -> Client:
    """A reviewer of acme who may look but not answer."""
    user = get_user_model().objects.create_user("carol", password="x", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(
        content_type__app_label="symfonic_django", codename__startswith="view_"))
    Membership.objects.create(user=user, tenant=Tenant.objects.get(slug="acme"))
    return login("carol")


def test_without_the_answer_permission_there_is_no_form_and_a_post_is_403(carol):
    pause = refund_pause("acme")
    response = carol.get(page(pause))
    assert response.status_code == 200 and response.context["form"] is None
    assert "not answer it" in response.content.decode()
    before = snapshot(pause)
    assert post_answer(carol, pause, {"decision_0": "approve"}).status_code == 403
    assert snapshot(pause) == before


def test_bulk_actions_need_the_answer_permission(carol):
    pause = refund_pause("acme")
    response = carol.get(reverse(CHANGELIST))
    assert "approve_selected" not in response.content.decode()
    for confirmation in ({"index": "0"}, {"post": "yes"}):
        carol.post(reverse(CHANGELIST), {"action": "approve_selected",
                                         "_selected_action": [str(pause.pk)], **confirmation})
    assert Pause.objects.get(pk=pause.pk).status == PauseStatus.PENDING


def test_machine_written_rows_cannot_be_added_changed_or_deleted(users):
    pause = refund_pause("acme")
    admin_client = login("admin")
    for name, pk in (("pause", pause.pk), ("run", pause.run_id)):
        assert admin_client.get(reverse(f"admin:symfonic_django_{name}_add")).status_code == 403
        delete = reverse(f"admin:symfonic_django_{name}_delete", args=[pk])
        assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    run_page = reverse("admin:symfonic_django_run_change", args=[pause.run_id])
    assert admin_client.post(run_page, {"status": "completed"}).status_code == 403
    assert Run.objects.get(pk=pause.run_id).status == RunStatus.PAUSED
    assert "delete_selected" not in admin_client.get(reverse(CHANGELIST)).content.decode()


# --- bulk actions --------------------------------------------------------------------

def bulk(client: Client, action: str, selected: list[Pause], **confirmation: str) -> Any:
    """The action as the pause list posts it, then (given a ``post``) as its page confirms."""
    data: dict[str, Any] = {"action": action, "_selected_action": [str(p.pk) for p in selected]}
    if not confirmation:
        return client.post(reverse(CHANGELIST), {**data, "index": "0"})
    return client.post(reverse(CHANGELIST), {**data, **confirmation}, follow=True)


def levels(response: Any) -> list[tuple[str, str]]:
    return [(m.level_tag, str(m)) for m in get_messages(response.wsgi_request)]


def test_a_bulk_decision_first_lists_every_action_and_its_args_and_changes_nothing(users):
    first = refund_pause("acme", amount=99.99, order="ACME-B1")
    several = bare_pause(prompt={"action_requests": [
        {"name": "refund", "args": {"order_id": "M-1", "amount": 3}},
        {"name": "email", "args": {"to": "c@example.com"}, "description": "Tell the customer"},
    ]})
    question = bare_pause(kind=PauseKind.QUESTION)
    before = [snapshot(p) for p in (first, several, question)]
    for action in ("approve_selected", "reject_selected"):
        response = bulk(login("alice"), action, [first, several, question])
        assert response.status_code == 200
        assert "admin/symfonic_django/pause/bulk_confirmation.html" in [
            t.name for t in response.templates]
        body = response.content.decode()
        for text in ("Refund 99.99 on order ACME-B1", "<td>order_id</td><td>ACME-B1</td>",
                     "<td>amount</td><td><code>99.99</code></td>", "Tell the customer",
                     "c@example.com", "It is a question", 'name="post" value="yes"',
                     f'value="{action}"'):
            assert text in body, (action, text)
        assert all(f'name="_selected_action" value="{p.pk}"' in body
                   for p in (first, several, question))
        assert ("Reason for rejecting" in body) == (action == "reject_selected")
    assert [snapshot(p) for p in (first, several, question)] == before
    assert not Decision.objects.exists()


def test_bulk_approve_links_each_started_run_and_warns_of_each_refusal(users):
    fresh = [refund_pause("acme", order=f"ACME-{i}") for i in range(2)]
    done = refund_pause("acme", order="ACME-done")
    question = bare_pause(kind=PauseKind.QUESTION)
    pauses.approve(done.pk, actor=get_user_model().objects.get(username="bob"))
    response = bulk(login("alice"), "approve_selected", [*fresh, done, question],
                    post="yes", reason="checked the orders")
    said = levels(response)
    assert ("success", "Approved 2 pauses.") in said
    warnings = [text for level, text in said if level == "warning"]
    assert len(warnings) == 2  # each refusal its own warning, with the warning's icon
    assert any("ACME-done" in w and "Already answered by bob at" in w for w in warnings)
    assert any("Approve and reject apply to approvals" in w for w in warnings)
    assert not any(level == "success" and "not" in text for level, text in said)
    started = next(text for level, text in said if level == "info")
    for pause in fresh:
        pause.refresh_from_db()
        assert pause.answer == {"decisions": [{"type": "approve"}]}
        assert pause.answered_by.username == "alice" and pause.answered_via == "admin"
        assert f"run {str(pause.continuation_id)[:8]}" in started
        assert (Decision.objects.get(pause=pause).comment) == "checked the orders"
    assert started.startswith("2 runs continue: <a href=")
    assert Pause.objects.get(pk=question.pk).status == PauseStatus.PENDING


def test_bulk_reject_sends_the_reason_and_other_scopes_are_untouched(users):
    mine = refund_pause("acme")
    theirs = refund_pause("globex")
    response = bulk(login("alice"), "reject_selected", [mine, theirs], post="yes",
                    reason="Duplicate orders")
    assert ("success", "Rejected 1 pause.") in levels(response)
    assert Pause.objects.get(pk=mine.pk).answer == {
        "decisions": [{"type": "reject", "message": "Duplicate orders"}]}
    assert Decision.objects.get(pause=mine).comment == "Duplicate orders"
    assert Pause.objects.get(pk=theirs.pk).status == PauseStatus.PENDING


@pytest.mark.parametrize("reason", ["bad\x00reason", "x" * 2001])
def test_a_reason_that_cannot_be_stored_is_refused_on_the_page_and_changes_nothing(users,
                                                                                  reason):
    pause = refund_pause("acme")
    before = snapshot(pause)
    response = login("alice").post(reverse(CHANGELIST), {
        "action": "reject_selected", "_selected_action": [str(pause.pk)], "post": "yes",
        "reason": reason})
    assert response.status_code == 200 and response.context["form"].errors
    assert snapshot(pause) == before and not Decision.objects.exists()


def test_a_bulk_decision_over_the_limit_is_refused_and_changes_nothing(users, bulk_limit):
    bulk_limit(2)
    selected = [refund_pause("acme", order=f"ACME-{i}") for i in range(3)]
    response = bulk(login("alice"), "approve_selected", selected, post="yes")
    assert any(level == "error" and "at most 2 pauses" in text
               for level, text in levels(response))
    assert Pause.objects.filter(status=PauseStatus.PENDING).count() == 3


# --- read-only history ----------------------------------------------------------------

def test_pause_page_shows_the_audit_and_the_continuation_events(users):
    pause = refund_pause("acme", order="ACME-H")
    alice = login("alice")
    post_answer(alice, pause, {"decision_0": "approve"})
    pause.refresh_from_db()
    execute_run(pause.continuation_id)
    body = alice.get(page(pause)).content.decode()
    assert "Continuation events" in body and "tool.completed" in body and "turn.completed" in body
    assert "<td>Admin</td><td>Approved</td>" in body


def test_run_page_shows_its_pauses_and_events_read_only(users):
    pause = refund_pause("acme", order="ACME-R")
    response = login("alice").get(reverse("admin:symfonic_django_run_change",
                                          args=[pause.run_id]))
    assert response.status_code == 200
    body = response.content.decode()
    assert "Pauses of this run" in body and page(pause) in body
    assert "pause.requested" in body and "turn.paused" in body
    assert 'name="_save"' not in body  # nothing to save: the run is read-only


# --- retrying failed runs ------------------------------------------------------------

RUNS = "admin:symfonic_django_run_changelist"


def failed_run(scope: str = "acme") -> Run:
    run = start_run("boom", {}, scope=scope, dispatch=False)
    assert execute_run(run.pk) == RunStatus.FAILED
    return run


def test_retry_needs_the_retry_permission_and_a_refusal_changes_nothing(users, carol):
    run = failed_run()
    assert "retry_selected" not in login("alice").get(reverse(RUNS)).content.decode()
    before = Run.objects.filter(pk=run.pk).values().get()
    login("alice").post(reverse(RUNS), {"action": "retry_selected",
                                        "_selected_action": [str(run.pk)]})
    assert Run.objects.filter(pk=run.pk).values().get() == before
    assert not RunRetry.objects.exists()


def test_an_operator_retries_failed_runs_and_other_states_are_refused_in_words(users):
    from django.contrib.auth.models import Permission

    failed, other_scope = failed_run("acme"), failed_run("globex")
    completed = start_run("noop", {}, scope="acme", dispatch=False)
    execute_run(completed.pk)
    alice = get_user_model().objects.get(username="alice")
    alice.user_permissions.add(Permission.objects.get(codename="retry_run"))
    response = login("alice").post(reverse(RUNS), {
        "action": "retry_selected",
        "_selected_action": [str(r.pk) for r in (failed, completed, other_scope)]}, follow=True)
    said = messages_of(response)
    assert "Retried 1 run." in said
    assert any("was not retried" in m and "Only a failed run can be retried" in m for m in said)
    failed.refresh_from_db()
    assert (failed.status, failed.attempts) == (RunStatus.QUEUED, 2)
    audit = RunRetry.objects.get()
    assert (audit.run_id, audit.actor, audit.via) == (failed.pk, alice, "admin")
    # Another tenant's run is not even in alice's queryset.
    assert Run.objects.get(pk=other_scope.pk).status == RunStatus.FAILED
    assert Run.objects.get(pk=completed.pk).status == RunStatus.COMPLETED


def test_runs_are_searched_by_an_exact_session_thread_or_scope_not_by_substrings(users):
    mine = start_run("echo", {}, scope="acme", session_id="sess-42", thread_id="th-7",
                     dispatch=False)
    start_run("echo", {}, scope="acme", session_id="sess-420", dispatch=False)
    admin = login("admin")

    def found(term: str) -> list[Any]:
        url = reverse("admin:symfonic_django_run_changelist")
        return sorted(r.pk for r in admin.get(url, {"q": term}).context["cl"].result_list)

    assert found("sess-42") == found("th-7") == found(str(mine.pk)) == [mine.pk]
    assert found("sess-4") == found("echo") == []  # no substrings, no agent (it has a filter)
    assert len(found("acme")) == 2


def test_a_decision_carries_its_pauses_scope(users):
    answered, expired = refund_pause("globex"), refund_pause("acme")
    pauses.approve(answered.pk)
    Pause.objects.filter(pk=expired.pk).update(expires_at=timezone.now())
    pauses.expire_due()
    assert {d.pause_id: d.scope_key for d in Decision.objects.all()} == {
        answered.pk: "globex", expired.pk: "acme"}
