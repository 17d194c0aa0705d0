"""The scale dataset of issue 11 and the app's hot paths, for ``bench/bench_scale.py`` and tests.

**The dataset** at N pauses (issue 11 sizes it at N = 1,000,000; ``load`` takes
any multiple of ``PAUSES_PER_RUN``, so a test can build a small one with the
same skew):

* ``SCOPES`` (200) tenants of the example project. ``BIG_SCOPE`` (``acme``)
  holds every tenth run, so 10% of the runs, pauses, events and decisions; the
  other runs go round-robin over the other 199 tenants.
* N / 5 runs (200,000 at 1M), each with 5 pauses (4 approvals shaped as the
  example's ``refund_prompt``, then a question): of the refund agent, but for
  one in 97 labelled with the shipping agent in every tenant (a run list
  filtered by a rare agent; the label is all that differs). By
  run: 5% paused (their pauses pending, asked within the last day), 1% queued
  (not claimed yet: no events, epoch 0), 2% running, 3% failed, 89% completed.
  No pending pause falls due, no lease lapses and no queued run is overdue
  within a week (``HORIZON``): the hot paths make those they work on. A run
  whose pauses were all answered is stored as completed, failed or running:
  the app would record the rest of the turn as a child run; the bench folds it
  into the run that asked, which no hot path reads.
* Pauses of the other runs: 90% answered (through the admin or the API, by the
  reviewer of ``acme`` in ``acme``, by the superuser elsewhere; one approval in
  ten rejected), 5% expired, 5% cancelled. Settled pauses are spread over a
  year. Every order id reads ``<SCOPE>-<4 digits>``, so ``SEARCH_TERM`` matches
  about 1% of ``acme``'s pauses.
* 25 events a run, ``seq`` 1..25 contiguous, none for a queued run:
  ``turn.started``, message deltas with a tool call every 6 events,
  ``message.completed``, one ``pause.requested`` per pause (without token, as
  stored), then ``turn.paused`` / ``turn.completed`` / ``turn.failed`` (a
  running run's last event is a delta). Each ``load`` step adds one long
  completed run in ``acme`` with N / 5 events (200,000 at 1M), so the events
  number about 5 x N.
* One decision per settled pause (95% of N): the audit rows the state machine
  writes for an answer, an expiry and a cancellation.

Rows are made with ``INSERT ... SELECT`` over ``generate_series``, each value
derived from its row number alone (the same rows on every run). ``load`` goes
from ``loaded`` pauses to ``pauses``, so a bench grows one dataset step by
step, then VACUUM ANALYZE as autovacuum would. Every column the SQL below does
not name gets its model field's default, so a column added later needs
nothing here unless it has none. ``action_digest`` stays empty: no hot path
reads it.

**The hot paths** (``hot_paths``), each through the app's real code: the
expiry sweep, the reaper, the requeue, a claim, replay through the events API,
a reconnect to an ended run over the websocket consumer, the API's pause and
run lists with a cursor page of each and each filter of the run list, every
admin changelist with its search, each of its
filters, a search with a filter, and a deep page, and the reviewers' inbox
(pending first, another status, its last page), as the superuser and as the
reviewer of ``BIG_SCOPE`` alone.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

SCOPES = 200
BIG_SCOPE = "acme"
PAUSES_PER_RUN = 5
EVENTS_PER_RUN = 25
#: Each ``load`` step adds a long run of (pauses it loads up to) / this many events.
LONG_RUN_DIVISOR = 5
SUPERUSER = "bench-admin"
REVIEWER = "bench-reviewer"
#: A reviewer of one small tenant (0.45% of everything): a list bounded by what it shows
#: reads as little for this one as for the big tenant's reviewer.
SMALL_REVIEWER = "bench-small-reviewer"
SMALL_SCOPE = "tenant-105"
#: What a reviewer types: about 1% of ``acme``'s order ids contain it.
SEARCH_TERM = "ACME-12"
#: A deep admin page, or the last one when the list is shorter.
DEEP_PAGE = 500


# --- the dataset -----------------------------------------------------------------------

# Run ``r`` of the series: everything below is derived from ``r``. Its scope is the big
# one for every tenth run, else round-robin over the others; its status comes from a hash
# of ``r`` (0..99), so that any prefix of the series and any scope get the same mix.
RUN_SERIES = """
    SELECT r, ('a' || lpad(to_hex(r), 31, '0'))::uuid AS run_id, kind.scope, kind.status,
           upper(kind.scope) || '-' || (1000 + r::bigint * 7919 %% 9000) AS order_id,
           (ARRAY[12.5, 40, 99.99, 250, 1200])[1 + r %% 5] AS amount,
           given.now - make_interval(secs => r::bigint * 7919 %% CASE
               WHEN kind.status IN ('paused', 'queued', 'running') THEN 86400
               ELSE 31536000 END) AS created,
           given.now
    FROM generate_series(%(first_run)s::int, %(last_run)s::int) AS r
    CROSS JOIN (SELECT %(scopes)s::text[] AS scopes, %(now)s::timestamptz AS now) AS given
    CROSS JOIN LATERAL (SELECT (hashint4(r)::bigint + 2147483648) %% 100 AS bucket) AS hash
    CROSS JOIN LATERAL (SELECT
        CASE WHEN r %% 10 = 0 THEN given.scopes[1]
             ELSE given.scopes[2 + (r - r / 10 - 1) %% (cardinality(given.scopes) - 1)]
        END AS scope,
        CASE WHEN bucket < 5 THEN 'paused' WHEN bucket < 6 THEN 'queued'
             WHEN bucket < 8 THEN 'running' WHEN bucket < 11 THEN 'failed'
             ELSE 'completed' END AS status) AS kind
"""

# Pause ``g`` is number ``i`` (0..4) of run ``r``: g = 5 (r - 1) + 1 + i; the fifth a question.
PAUSE_SERIES = f"""
    SELECT run.*, i, p.*,
           CASE WHEN run.status = 'paused' THEN 'pending'
                WHEN p.g %% 20 = 0 THEN 'expired'
                WHEN p.g %% 20 = 10 THEN 'cancelled'
                ELSE 'answered' END AS pause_status
    FROM ({RUN_SERIES}) AS run
    CROSS JOIN generate_series(0, {PAUSES_PER_RUN - 1}) AS i
    CROSS JOIN LATERAL (SELECT
        {PAUSES_PER_RUN} * (run.r - 1) + 1 + i AS g,
        ('b' || lpad(to_hex({PAUSES_PER_RUN} * (run.r - 1) + 1 + i), 31, '0'))::uuid AS pause_id,
        i = {PAUSES_PER_RUN - 1} AS question,
        run.created + make_interval(mins => i) AS asked) AS p
"""


def pause_id_sql(g: str) -> str:
    """SQL for the id of pause number ``g`` (an SQL expression)."""
    return f"('b' || lpad(to_hex({g}), 31, '0'))::uuid"


def prompt_sql(question: str) -> str:
    """SQL for a pause's prompt over a series row: ``refund_prompt`` or a question."""
    return f"""CASE WHEN {question} THEN jsonb_build_object(
            'question', 'Which carrier should ship the replacement for ' || order_id || '?')
        ELSE jsonb_build_object(
            'action_requests', jsonb_build_array(jsonb_build_object(
                'name', 'refund',
                'args', jsonb_build_object('order_id', order_id, 'amount', amount),
                'description', 'Refund ' || amount || ' on order ' || order_id)),
            'review_configs', jsonb_build_array(jsonb_build_object(
                'action_name', 'refund',
                'allowed_decisions', jsonb_build_array('approve', 'edit', 'reject', 'respond'),
                'args_schema', %(args_schema)s::jsonb)))
        END"""


#: Nothing loaded falls due, lapses or is overdue before this (a ``--reuse`` run a few
#: days later measures the same work): the hot paths make their own due pauses, lapsed
#: leases and overdue runs.
HORIZON = "interval '7 days'"

#: One run in this many is labelled with the shipping agent: a reviewer's list filtered
#: by it finds a few of the tenant's runs among many of the other agent.
RARE_AGENT_EVERY = 97

QUESTION_SCHEMA = '{"type": "string", "enum": ["UPS", "DHL", "FedEx"]}'

RUN_COLUMNS = {
    "id": "run_id", "root_id": "run_id", "scope_key": "scope",
    "agent": f"CASE WHEN r %% {RARE_AGENT_EVERY} = 5 THEN 'shipping' ELSE 'refund' END",
    "session_id": "'session-' || r", "thread_id": "'order-' || order_id",
    "status": "status",
    "input": "jsonb_build_object('order_id', order_id, 'amount', amount)",
    "output": """CASE WHEN status = 'completed' THEN jsonb_build_object(
                     'refunded', true, 'order_id', order_id, 'amount', amount::text) END""",
    "error": """CASE WHEN status = 'failed' THEN
                    '{"code": "agent_error", "message": "The payment service timed out."}'::jsonb
                END""",
    "epoch": "CASE WHEN status = 'queued' THEN 0 ELSE 1 END",
    "worker": "CASE WHEN status = 'queued' THEN '' ELSE 'worker-' || r %% 8 END",
    "lease_until": f"CASE WHEN status = 'running' THEN now + {HORIZON} END",
    "sent_at": "created", "sends": "1",
    "resend_after": f"CASE WHEN status = 'queued' THEN now + {HORIZON} END",
    "created_at": "created",
    "started_at": "CASE WHEN status = 'queued' THEN NULL ELSE created END",
    "finished_at": """CASE WHEN status IN ('completed', 'failed')
                          THEN created + interval '2 minutes' END""",
    "updated_at": "created",
}

#: Answered pauses: one approval in ten rejected; questions answered with a carrier.
ANSWER_SQL = """CASE WHEN pause_status <> 'answered' THEN NULL
                     WHEN question THEN '"UPS"'::jsonb
                     WHEN g %% 10 = 3 THEN
                         '{"decisions": [{"type": "reject", "message": "Not eligible."}]}'::jsonb
                     ELSE '{"decisions": [{"type": "approve"}]}'::jsonb END"""
VIA_SQL = """CASE WHEN pause_status <> 'answered' THEN 'system'
                  WHEN g %% 2 = 0 THEN 'admin' ELSE 'api' END"""
ANSWERER_SQL = """CASE WHEN pause_status <> 'answered' THEN NULL
                       WHEN scope = %(big_scope)s THEN %(reviewer)s::int
                       ELSE %(superuser)s::int END"""
ANSWERED_AT_SQL = "asked + make_interval(secs => 30 + g %% 3600)"

PAUSE_COLUMNS = {
    "id": "pause_id", "run_id": "run_id", "root_run_id": "run_id", "scope_key": "scope",
    "kind": "CASE WHEN question THEN 'question' ELSE 'approval' END",
    "prompt": prompt_sql("question"),
    "answer_schema": f"CASE WHEN question THEN '{QUESTION_SCHEMA}'::jsonb END",
    "session_id": "'session-' || r", "thread_id": "'order-' || order_id",
    "idempotency_key": "'refund-' || i",
    "bound_run_id": "run_id::text", "bound_root_run_id": "run_id::text",
    "status": "pause_status",
    "expires_at": f"asked + CASE WHEN pause_status = 'pending' THEN {HORIZON} "
                  "ELSE interval '1 day' END",
    "answer": ANSWER_SQL,
    "answered_by_id": ANSWERER_SQL,
    "answered_via": "CASE WHEN pause_status = 'pending' THEN '' ELSE " + VIA_SQL + " END",
    "answered_at": f"CASE WHEN pause_status <> 'pending' THEN {ANSWERED_AT_SQL} END",
    "created_at": "asked", "updated_at": "asked",
}
#: The pause's search row (``PauseSearch``).
SEARCH_COLUMNS = {
    "pause_id": "pause_id",
    # What hitl.search_text makes of the same prompt, ids and all: case-folded, with
    # its punctuation dropped (hitl.searchable).
    "text": """regexp_replace(lower(CASE WHEN question
                       THEN 'Which carrier should ship the replacement for ' || order_id || '?'
                       ELSE 'refund' || E'\\n' || 'Refund ' || amount || ' on order ' || order_id
                            || E'\\n' || jsonb_build_object('order_id', order_id,
                                                              'amount', amount)::text END
                  || E'\\n' || 'session-' || r || E'\\n' || 'order-' || order_id),
                                  '[^[:alnum:][:space:]]', '', 'g')""",
}

DECISION_COLUMNS = {
    "pause_id": "pause_id", "scope_key": "scope",
    "actor_id": ANSWERER_SQL,
    "actor_label": f"""CASE WHEN pause_status <> 'answered' THEN 'system'
                            WHEN scope = %(big_scope)s THEN '{REVIEWER}'
                            ELSE '{SUPERUSER}' END""",
    "via": VIA_SQL,
    "action": """CASE pause_status WHEN 'expired' THEN 'expire' WHEN 'cancelled' THEN 'cancel'
                 ELSE CASE WHEN question THEN 'answer' WHEN g %% 10 = 3 THEN 'reject'
                           ELSE 'approve' END END""",
    "answer": ANSWER_SQL,
    "comment": """CASE WHEN pause_status = 'cancelled'
                       THEN 'a sibling pause was cancelled or expired' ELSE '' END""",
    "created_at": ANSWERED_AT_SQL,
}

# Event ``seq`` of a run: turn.started, deltas with a tool call every 6 events up to 18,
# message.completed, one pause.requested per pause (20..24), and the terminal event.
LAST_BODY_SEQ = EVENTS_PER_RUN - PAUSES_PER_RUN - 2
ASKED_SEQ = EVENTS_PER_RUN - PAUSES_PER_RUN  # the first pause.requested


def body_type_sql(seq: str) -> str:
    return f"""CASE WHEN {seq} %% 6 = 4 THEN 'tool.started'
                    WHEN {seq} %% 6 = 5 THEN 'tool.completed'
                    ELSE 'message.delta' END"""


def body_data_sql(seq: str, run_key: str) -> str:
    call = "jsonb_build_object('order_id', order_id)"
    tool_call_id = f"'call-' || {run_key} || '-' || ({seq} / 6)"
    return f"""CASE WHEN {seq} %% 6 = 4 THEN jsonb_build_object(
                        'tool_call_id', {tool_call_id}, 'name', 'lookup_order', 'args', {call})
                    WHEN {seq} %% 6 = 5 THEN jsonb_build_object(
                        'tool_call_id', {tool_call_id}, 'name', 'lookup_order', 'args', {call},
                        'result', jsonb_build_object('status', 'delivered', 'paid', amount))
                    ELSE jsonb_build_object('text', (ARRAY['Order ', order_id || ' ',
                        'qualifies ', 'for ', 'a ', 'refund ', 'of ', amount || '. '])
                        [1 + {seq} %% 8]) END"""


EVENT_SOURCE = f"""
    (SELECT run.*, seq, ({PAUSES_PER_RUN} * (run.r - 1) + 1 + seq - {ASKED_SEQ}) AS g,
            (seq - {ASKED_SEQ}) = {PAUSES_PER_RUN - 1} AS question
     FROM ({RUN_SERIES}) AS run
     CROSS JOIN generate_series(1, {EVENTS_PER_RUN}) AS seq
     WHERE run.status <> 'queued') AS ev
"""

EVENT_COLUMNS = {
    "run_id": "run_id", "seq": "seq", "scope_key": "scope",
    "type": f"""CASE WHEN seq = 1 THEN 'turn.started'
                     WHEN seq <= {LAST_BODY_SEQ} THEN {body_type_sql('seq')}
                     WHEN seq = {LAST_BODY_SEQ + 1} THEN 'message.completed'
                     WHEN seq < {EVENTS_PER_RUN} THEN 'pause.requested'
                     WHEN status = 'paused' THEN 'turn.paused'
                     WHEN status = 'completed' THEN 'turn.completed'
                     WHEN status = 'failed' THEN 'turn.failed'
                     ELSE 'message.delta' END""",
    "data": f"""CASE WHEN seq = 1 THEN
                         '{{"agent": "refund", "resumed_from_pause": null}}'::jsonb
                     WHEN seq <= {LAST_BODY_SEQ} THEN {body_data_sql('seq', 'r')}
                     WHEN seq = {LAST_BODY_SEQ + 1} THEN
                         '{{"text": "I need a person to approve it."}}'::jsonb
                     WHEN seq < {EVENTS_PER_RUN} THEN jsonb_build_object(
                         'pause_id', {pause_id_sql('g')},
                         'kind', CASE WHEN question THEN 'question' ELSE 'approval' END,
                         'prompt', {prompt_sql('question')},
                         'expires_at', created + interval '1 day')
                     WHEN status = 'paused' THEN jsonb_build_object('pause_ids', ARRAY(
                         SELECT {pause_id_sql(f'{PAUSES_PER_RUN} * (r - 1) + k')}::text
                         FROM generate_series(1, {PAUSES_PER_RUN}) AS k))
                     WHEN status = 'completed' THEN jsonb_build_object('output',
                         jsonb_build_object('refunded', true, 'order_id', order_id))
                     WHEN status = 'failed' THEN '{{"code": "agent_error",
                         "message": "The payment service timed out."}}'::jsonb
                     ELSE '{{"text": "..."}}'::jsonb END""",
    "created_at": "created + make_interval(secs => seq)",
}

LONG_EVENT_COLUMNS = {
    "run_id": "%(run_id)s::uuid", "seq": "seq", "scope_key": "%(scope)s",
    "type": f"""CASE WHEN seq = 1 THEN 'turn.started'
                     WHEN seq = %(events)s THEN 'turn.completed'
                     WHEN seq = %(events)s - 1 THEN 'message.completed'
                     ELSE {body_type_sql('seq')} END""",
    "data": f"""CASE WHEN seq = 1 THEN
                         '{{"agent": "refund", "resumed_from_pause": null}}'::jsonb
                     WHEN seq = %(events)s THEN '{{"output": {{"refunded": false}}}}'::jsonb
                     WHEN seq = %(events)s - 1 THEN '{{"text": "Done."}}'::jsonb
                     ELSE {body_data_sql('seq', "'long'")} END""",
    "created_at": "%(now)s::timestamptz - interval '1 hour' + make_interval(secs => seq / 100.0)",
}
LONG_EVENT_SOURCE = """
    (SELECT seq, %(order_id)s AS order_id, 12.5 AS amount
     FROM generate_series(1, %(events)s::int) AS seq) AS ev
"""


def insert_select(connection: Any, model: Any, columns: dict[str, str], source: str,
                  params: dict[str, Any]) -> int:
    """``INSERT INTO <model's table> SELECT <columns> FROM <source>``; the rows it wrote.

    ``columns`` maps attnames to SQL over ``source``'s columns. An auto-incremented
    primary key is left to the database; every other column not named gets its
    field's default.
    """
    from django.db import models

    quote = connection.ops.quote_name
    auto = (models.AutoField, models.BigAutoField, models.SmallAutoField)
    names, values, defaults = [], [], {}
    for field in model._meta.concrete_fields:
        if field.attname not in columns and isinstance(field, auto):
            continue
        names.append(quote(field.column))
        if field.attname in columns:
            values.append(columns[field.attname])
        else:
            key = f"default_{field.attname}"
            defaults[key] = field.get_db_prep_save(field.get_default(), connection)
            values.append(f"%({key})s")
    sql = (f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(names)}) "
           f"SELECT {', '.join(values)} FROM {source}")
    with connection.cursor() as cursor:
        cursor.execute(sql, {**params, **defaults})
        return int(cursor.rowcount)


@dataclass(frozen=True)
class People:
    """The two users every hot path runs as, and their DRF tokens."""

    superuser: Any
    reviewer: Any  # reviews BIG_SCOPE only
    superuser_token: str
    reviewer_token: str
    small_reviewer: Any  # reviews SMALL_SCOPE only


def create_tenants(count: int = SCOPES) -> list[str]:
    """``count`` tenants (``BIG_SCOPE`` first), made if missing; their scope keys in order."""
    from tests.testapp.models import Tenant

    keys = [BIG_SCOPE, *(f"tenant-{n:03d}" for n in range(1, count))]
    existing = set(Tenant.objects.filter(slug__in=keys).values_list("slug", flat=True))
    Tenant.objects.bulk_create([Tenant(slug=key, name=key.replace("-", " ").title())
                                for key in keys if key not in existing])
    return keys


def create_people() -> People:
    """A superuser and a reviewer of ``BIG_SCOPE`` alone, as ``seed_demo`` makes reviewers:
    staff, the app's view permissions and ``answer_pause``, a membership, a DRF token."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission
    from rest_framework.authtoken.models import Token

    from tests.testapp.models import Membership, Tenant

    user_model = get_user_model()
    perms = list(Permission.objects.filter(content_type__app_label="symfonic_django").filter(
        codename__startswith="view_") | Permission.objects.filter(
        content_type__app_label="symfonic_django", codename="answer_pause"))
    users = {}
    for name, superuser in ((SUPERUSER, True), (REVIEWER, False), (SMALL_REVIEWER, False)):
        user, _ = user_model.objects.get_or_create(username=name)
        user.is_staff, user.is_superuser = True, superuser
        user.set_unusable_password()
        user.save()
        user.user_permissions.add(*perms)
        users[name] = user
    for name, scope in ((REVIEWER, BIG_SCOPE), (SMALL_REVIEWER, SMALL_SCOPE)):
        Membership.objects.get_or_create(user=users[name], tenant=Tenant.objects.get(slug=scope))
    tokens = {name: Token.objects.get_or_create(user=user)[0].key for name, user in users.items()}
    return People(users[SUPERUSER], users[REVIEWER], tokens[SUPERUSER], tokens[REVIEWER],
                  users[SMALL_REVIEWER])


def long_run_id(pauses: int) -> uuid.UUID:
    """The id of the long run that the ``load`` step up to ``pauses`` adds."""
    return uuid.UUID("c" + f"{pauses:x}".rjust(31, "0"))


@dataclass(frozen=True)
class Loaded:
    """What one ``load`` step wrote."""

    runs: int
    pauses: int
    decisions: int
    events: int
    long_run: uuid.UUID
    long_run_events: int


def load(connection: Any, pauses: int, *, people: People, loaded: int = 0,
         scopes: list[str] | None = None, now: datetime | None = None) -> Loaded:
    """Add pauses ``loaded + 1`` .. ``pauses`` of the dataset (their runs, events and
    decisions, and one long run of ``pauses / 5`` events), then VACUUM ANALYZE.

    ``pauses`` and ``loaded`` are multiples of ``PAUSES_PER_RUN``; ``scopes`` are the
    tenants' keys, ``BIG_SCOPE`` first (``create_tenants``).
    """
    from django.db import transaction
    from django.utils import timezone

    from symfonic_django.models import Decision, Pause, PauseSearch, Run, TurnEvent
    from tests.testapp.agents import REFUND_ARGS_SCHEMA

    if pauses % PAUSES_PER_RUN or loaded % PAUSES_PER_RUN or pauses <= loaded:
        raise ValueError(f"load from {loaded} to {pauses} pauses: multiples of "
                         f"{PAUSES_PER_RUN}, growing")
    scopes = scopes or create_tenants()
    if scopes[0] != BIG_SCOPE:
        raise ValueError(f"the scopes must start with {BIG_SCOPE!r}")
    now = now or timezone.now()
    params = {"first_run": loaded // PAUSES_PER_RUN + 1, "last_run": pauses // PAUSES_PER_RUN,
              "scopes": scopes, "now": now, "big_scope": BIG_SCOPE,
              "superuser": people.superuser.pk, "reviewer": people.reviewer.pk,
              "args_schema": json.dumps(REFUND_ARGS_SCHEMA)}
    long_id, long_events = long_run_id(pauses), pauses // LONG_RUN_DIVISOR
    with transaction.atomic(using=connection.alias):
        with connection.cursor() as cursor:
            # No foreign-key triggers for this load: its rows refer only to rows it writes
            # or to existing users, and checking millions of references at commit would be
            # a large part of the load.
            cursor.execute("SET LOCAL session_replication_role = replica")
        runs = insert_select(connection, Run, RUN_COLUMNS, f"({RUN_SERIES}) AS run", params)
        pause_rows = insert_select(connection, Pause, PAUSE_COLUMNS,
                                   f"({PAUSE_SERIES}) AS pause", params)
        insert_select(connection, PauseSearch, SEARCH_COLUMNS, f"({PAUSE_SERIES}) AS pause",
                      params)
        decisions = insert_select(connection, Decision, DECISION_COLUMNS,
                                  f"({PAUSE_SERIES}) AS pause WHERE pause_status <> 'pending'",
                                  params)
        events = insert_select(connection, TurnEvent, EVENT_COLUMNS, EVENT_SOURCE, params)
        started = now - timedelta(hours=1)
        Run.objects.using(connection.alias).create(
            id=long_id, root_id=long_id, agent="refund", scope_key=BIG_SCOPE,
            session_id="session-long", thread_id="order-ACME-LONG", status="completed",
            input={"order_id": "ACME-LONG", "amount": 12.5}, output={"refunded": False},
            epoch=1, worker="worker-long", sent_at=started, sends=1, created_at=started,
            started_at=started, finished_at=now)
        events += insert_select(connection, TurnEvent, LONG_EVENT_COLUMNS, LONG_EVENT_SOURCE,
                                {"run_id": str(long_id), "events": long_events, "now": now,
                                 "order_id": "ACME-LONG", "scope": BIG_SCOPE})
    with connection.cursor() as cursor:
        # The tables as autovacuum leaves them after a bulk load (it vacuums insert-only
        # tables since PostgreSQL 13): statistics, and the visibility map that index-only
        # scans need.
        tables = ", ".join(connection.ops.quote_name(m._meta.db_table)
                           for m in (Run, Pause, PauseSearch, Decision, TurnEvent))
        cursor.execute(f"VACUUM (ANALYZE) {tables}")
    return Loaded(runs + 1, pause_rows, decisions, events, long_id, long_events)


# --- queries and their plans ------------------------------------------------------------

class QueryLog:
    """Every query a connection runs inside ``connection.execute_wrapper(log)``, timed:
    ``(sql, params, many, seconds)``."""

    def __init__(self) -> None:
        self.queries: list[tuple[str, Any, bool, float]] = []

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.queries.append((sql, params, many, time.perf_counter() - started))

    @property
    def seconds(self) -> float:
        return sum(q[3] for q in self.queries)


EXPLAINABLE = ("SELECT", "WITH", "INSERT", "UPDATE", "DELETE")


def explainable(query: tuple[str, Any, bool, float]) -> bool:
    sql, _, many, _ = query
    return not many and sql.lstrip().upper().startswith(EXPLAINABLE)


def explain(sql: str, params: Any) -> dict[str, Any]:
    """The plan PostgreSQL would choose for a captured query (its top node)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        plan = cursor.fetchone()[0]
    if isinstance(plan, str):
        plan = json.loads(plan)
    return dict(plan[0]["Plan"])


def plan_nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every node of a plan, the top one first."""
    yield node
    for child in node.get("Plans", []):
        yield from plan_nodes(child)


def plan_shape(node: dict[str, Any]) -> str:
    """A plan as a line, innermost nodes first: ``Index Scan some_idx → Limit``."""
    label = node["Node Type"]
    name = node.get("Index Name") or node.get("Relation Name")
    if name:
        label += f" {name}"
    children = [plan_shape(child) for child in node.get("Plans", [])]
    if not children:
        return label
    inner = children[0] if len(children) == 1 else f"({' + '.join(children)})"
    return f"{inner} → {label}"


# --- the hot paths ---------------------------------------------------------------------

#: What a hot path is held to (issue 11's goals at 1M pauses).
FAST, SEARCH, RECONNECT, EXPIRY = "fast", "search", "reconnect", "expiry"


@dataclass
class HotPath:
    """One hot path: ``call`` runs it through the app's code.

    ``prepare`` (untimed) runs before each call, to make the work the call does
    (due pauses, lapsed leases), and ``cleanup`` (untimed) after it, to leave no
    work behind for other paths (a claimed run is ended). For an ``EXPIRY`` path
    ``call`` returns how many pauses it handled, and the path is judged per
    pause; a page's ``call`` returns the ``Page`` it got. ``detail`` says what
    was asked at this size (the name stays the same at every size).
    """

    name: str
    goal: str
    call: Callable[[], object]
    prepare: Callable[[], None] | None = None
    detail: str = ""
    cleanup: Callable[[], None] | None = None


def checked_get(client: Any, url: str, **headers: Any) -> Any:
    response = client.get(url, **headers)
    if response.status_code != 200:
        raise RuntimeError(f"GET {url} answered {response.status_code}")
    return response


@dataclass(frozen=True)
class Page:
    """What a list page showed: ``rows`` items (a list's growth from 10k to 1M is read
    beside how much more its page held)."""

    rows: int


def rows_shown(response: Any) -> int:
    """The rows a list page shows: an admin changelist's, the inbox's, an API page's."""
    context = getattr(response, "context_data", None) or {}
    if "cl" in context:
        return len(context["cl"].result_list)
    if "page" in context:
        return len(context["page"].object_list)
    body = response.json()
    return len(body["results"] if isinstance(body, dict) else body)


def getter(client: Any, url: str, **headers: Any) -> Callable[[], Page]:
    def get() -> Page:
        return Page(rows_shown(checked_get(client, url, **headers)))

    return get


#: The choice each list filter is measured with, by parameter, when the filter offers it:
#: the rare agent, whose runs an index must find among the other agent's.
PREFERRED_CHOICES = {"status": ("pending", "queued"), "kind": ("question",),
                     "agent": ("shipping",),
                     "type": ("turn.completed",), "action": ("approve",), "via": ("api",),
                     "scope": (BIG_SCOPE,)}


def pick_choice(spec: Any, changelist: Any) -> str | None:
    """The query string of one choice of a list filter: the preferred value for its
    parameter, else the first choice that is not "All"."""
    choices = [c for c in spec.choices(changelist) if not c.get("selected")]
    for choice in choices:
        parameter, _, value = choice["query_string"].lstrip("?").rpartition("=")
        if value in PREFERRED_CHOICES.get(parameter.split("__")[0], ()):
            return str(choice["query_string"])
    return str(choices[0]["query_string"]) if choices else None


def admin_paths(client: Any, who: str, model: str) -> list[HotPath]:
    """A changelist as it is, searched, filtered by each filter, and deep; as ``who``."""
    base = f"/admin/symfonic_django/{model}/"
    changelist = checked_get(client, base).context_data["cl"]
    queries = {"": ""}
    searchable = bool(changelist.search_fields)
    if searchable:
        queries["search"] = f"?q={SEARCH_TERM}"
    first_filter = None
    for spec in changelist.filter_specs:
        query = pick_choice(spec, changelist)
        if query:
            queries[f"filter {query.lstrip('?')}"] = query
            first_filter = first_filter or query
    if searchable and first_filter:
        queries[f"search + {first_filter.lstrip('?')}"] = f"{first_filter}&q={SEARCH_TERM}"
    # Page 500, or the last but one of a shorter list (its count may be an estimate).
    page = min(DEEP_PAGE, max(changelist.paginator.num_pages - 1, 1))
    queries[f"deep page (p={DEEP_PAGE} or last but one)"] = f"?p={page}"
    return [HotPath(f"admin {model}/ {label or 'list'} ({who})",
                    SEARCH if "search" in label else FAST, getter(client, base + query),
                    detail=base + query)
            for label, query in queries.items()]


def inbox_paths(client: Any, who: str) -> list[HotPath]:
    """The inbox: its landing list (pending, oldest first), the answered tab, and the
    last page of the pending list (as deep as it goes); as ``who``."""
    base = "/admin/symfonic_django/pause/inbox/"
    last = checked_get(client, base).context_data["page"].paginator.num_pages
    return [HotPath(f"admin pause inbox/ {label} ({who})", FAST, getter(client, base + query),
                    detail=base + query)
            for label, query in (("pending", ""), ("answered", "?show=answered"),
                                 ("last pending page", f"?p={last}"))]


def api_paths(client: Any, who: str, token: str) -> list[HotPath]:
    """The API's pause and run lists: each first page, its fourth reached through
    ``next``, and the run list filtered by each of its filters."""
    from symfonic_django.models import Run

    auth = {"HTTP_AUTHORIZATION": f"Token {token}"}
    session = Run.objects.filter(scope_key=BIG_SCOPE).values_list("session_id", flat=True)[0]
    paths = []
    for listed in ("pauses", "runs"):
        url = f"/api/symfonic/{listed}/"
        paths.append(HotPath(f"API {listed}/ first page ({who})", FAST,
                             getter(client, url, **auth)))
        page = 1
        while page < 4:  # the fourth page, or the last of a shorter list
            following = checked_get(client, url, **auth).json()["next"]
            if following is None:
                break
            url, page = following, page + 1
        paths.append(HotPath(f"API {listed}/ 4th page via next ({who})", FAST,
                             getter(client, url, **auth), detail=f"page {page}"))
    for query in ("status=queued", "agent=shipping", f"session_id={session}"):
        paths.append(HotPath(f"API runs/ ?{query.split('=')[0]}= ({who})", FAST,
                             getter(client, f"/api/symfonic/runs/?{query}", **auth),
                             detail=query))
    return paths


def reconnect(run_id: Any, after: int, user: Any) -> None:
    """Open the run's websocket at ``?after=`` as ``user`` (the scope's user, as Channels'
    session middleware sets it); the consumer must close it at once, the turn having ended."""
    from asgiref.sync import async_to_sync
    from channels.routing import URLRouter
    from channels.testing import WebsocketCommunicator

    from symfonic_django.routing import websocket_urlpatterns

    async def connect() -> None:
        communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns),
                                             f"/ws/symfonic/runs/{run_id}/?after={after}")
        communicator.scope["user"] = user
        connected, _ = await communicator.connect()
        closed = await communicator.receive_output(timeout=10)
        await communicator.disconnect()
        if not connected or closed.get("type") != "websocket.close" or closed.get("code") != 1000:
            raise RuntimeError(f"the ended run's socket answered {closed}")

    async_to_sync(connect)()


def hot_paths(people: People, pauses: int) -> list[HotPath]:
    """Every hot path, on the dataset as ``load`` left it at ``pauses`` pauses."""
    from django.test import Client
    from django.utils import timezone

    from symfonic_django import events as ev
    from symfonic_django import pauses as pause_machine
    from symfonic_django import runs
    from symfonic_django.models import Pause, Run, RunStatus, TurnEvent

    # 1,000 due pauses at 1M; at 10k, ten (the sweeps must not run out of paused runs).
    batch = max(10, pauses // 1000)
    lapsed = 5

    def make_due() -> None:
        # The first pause of pending runs, so that each expiry is its own run's.
        due = list(Pause.objects.filter(status="pending", idempotency_key="refund-0",
                                        expires_at__gt=timezone.now())
                   .values_list("pk", flat=True)[:batch])
        Pause.objects.filter(pk__in=due).update(expires_at=timezone.now() - timedelta(seconds=1))

    def make_turns_due() -> None:
        # Every pending pause of batch/5 paused runs, as one turn's pauses are all asked
        # with the same time to live: they expire together and none is left to cancel.
        runs_due = list(Pause.objects.filter(status="pending", idempotency_key="refund-0",
                                             expires_at__gt=timezone.now())
                        .values_list("run_id", flat=True)[:max(1, batch // PAUSES_PER_RUN)])
        Pause.objects.filter(run_id__in=runs_due, status="pending").update(
            expires_at=timezone.now() - timedelta(seconds=1))

    def make_lapsed() -> None:
        ids = list(Run.objects.filter(status=RunStatus.RUNNING,
                                      lease_until__gt=timezone.now())[:lapsed]
                   .values_list("pk", flat=True))
        Run.objects.filter(pk__in=ids).update(lease_until=timezone.now() - timedelta(minutes=1))

    def make_overdue() -> None:
        ids = list(Run.objects.filter(status=RunStatus.QUEUED)[:lapsed]
                   .values_list("pk", flat=True))
        Run.objects.filter(pk__in=ids).update(resend_after=timezone.now() - timedelta(seconds=1))

    queued: list[Any] = []
    claimed: list[Run] = []

    def next_queued() -> None:
        queued[:] = [Run.objects.filter(status=RunStatus.QUEUED, epoch=0)
                     .values_list("pk", flat=True).first()]

    def claim() -> None:
        run = runs.claim(queued[0], "bench")
        if run is None:
            raise RuntimeError(f"run {queued[0]} was not claimed")
        claimed[:] = [run]

    def end_claimed() -> None:
        # Its lease would lapse a minute later, and the reaper would find more to do.
        run = claimed[0]
        runs.end(run, run.epoch, 2, ev.TurnCompleted(output={"refunded": False}))

    long_run = long_run_id(pauses)
    last_seq = TurnEvent.objects.filter(run_id=long_run).count()
    short_run = (Run.objects.filter(scope_key=BIG_SCOPE, status=RunStatus.COMPLETED, epoch=1)
                 .exclude(session_id="session-long").values_list("pk", flat=True).first())
    long = f"{last_seq:,} events"
    reviewer_api = Client()
    auth = {"HTTP_AUTHORIZATION": f"Token {people.reviewer_token}"}
    events = "/api/symfonic/runs/{}/events/?after={}"

    paths = [
        HotPath("expiry sweep, whole turns due, pauses/1000 (per pause)", EXPIRY,
                pause_machine.expire_all_due, make_turns_due,
                f"{max(1, batch // PAUSES_PER_RUN):,} turns of {PAUSES_PER_RUN}"),
        HotPath("expiry sweep, pauses/1000 due, each with 4 pending siblings (per pause)",
                EXPIRY, pause_machine.expire_all_due, make_due,
                f"{batch:,} due, {4 * batch:,} siblings cancelled"),
        HotPath("expiry sweep, none due", FAST, pause_machine.expire_all_due),
        HotPath(f"reaper, {lapsed} lapsed", FAST, runs.reap_stale_runs, make_lapsed),
        HotPath("reaper, none lapsed", FAST, runs.reap_stale_runs),
        HotPath(f"requeue, {lapsed} overdue", FAST, runs.resend_overdue_runs, make_overdue),
        HotPath("requeue, none overdue", FAST, runs.resend_overdue_runs),
        HotPath("claim a queued run", FAST, claim, next_queued, cleanup=end_claimed),
        HotPath("replay API, long run, after=0", FAST,
                getter(reviewer_api, events.format(long_run, 0), **auth), detail=long),
        HotPath("replay API, long run, after=middle", FAST,
                getter(reviewer_api, events.format(long_run, last_seq // 2), **auth),
                detail=f"{long}, after={last_seq // 2:,}"),
        HotPath(f"replay API, {EVENTS_PER_RUN}-event run, after=0", FAST,
                getter(reviewer_api, events.format(short_run, 0), **auth)),
        HotPath("reconnect websocket, ended long run", RECONNECT,
                lambda: reconnect(long_run, last_seq, people.reviewer),
                detail=f"{long}, after={last_seq:,}"),
    ]
    for who, user, token in (("superuser", people.superuser, people.superuser_token),
                             ("reviewer", people.reviewer, people.reviewer_token)):
        paths += api_paths(Client(), who, token)
        client = Client()
        client.force_login(user)
        for model in ("pause", "run", "turnevent", "decision"):
            paths += admin_paths(client, who, model)
        paths += inbox_paths(client, who)
    small = Client()
    small.force_login(people.small_reviewer)
    for model in ("pause", "turnevent", "decision"):
        paths += admin_paths(small, "small-tenant reviewer", model)
    paths += inbox_paths(small, "small-tenant reviewer")
    return paths
