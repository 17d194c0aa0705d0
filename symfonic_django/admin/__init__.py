"""The reviewer UI in the Django admin.

A reviewer sees only the scopes ``REVIEWER_SCOPES`` grants: every queryset
here is narrowed to them, and any other object is a real 404 (not the admin's
usual redirect with a message), so an id from another tenant reveals nothing.

Runs, events, pauses and decisions are machine-written, so they are read-only
rows. A pause is answered on its own page through ``pauses.answer_pause``,
or in bulk through ``pauses.approve`` / ``pauses.reject``; the admin never
writes a status itself, and shows a refusal as the exception's words.

No input is a 500 (docs/design.md section 6): the answer forms refuse what the database
cannot store (``forms``), the lists filter only by the filters they offer, and
a NUL in a filter or a search, or an action's id that is not an id, is a 400.

One concern a module; importing this package registers every admin on
``admin.site`` (Django's autodiscover imports it):

- ``display``: what a pause says in a line or a table; badges, links, times
- ``transcript``: a run's events, as stored and as a person reads them
- ``filters``, ``pagination``: the lists' filters; bounded counts and paging
  (``pagination.EXACT_COUNT_UP_TO``)
- ``base``: the scoped, read-only base of every admin here
- ``run_admin``, ``audit_admin``, ``notification_admin``: runs; events and
  decisions; notification deliveries
- ``pause_admin``: the pause list, made of ``inbox``, ``claims``, ``answering``
  (the pause page, whose content ``review`` presents) and ``bulk`` (bulk
  decisions, ``bulk.BULK_LIMIT``)

Settings that tests or projects change (``EXACT_COUNT_UP_TO``, ``BULK_LIMIT``) are
read from their own module, so they are patched there, not here.
"""

from django.contrib import admin

from .audit_admin import DecisionAdmin, TurnEventAdmin
from .base import ReviewerAdmin, ScopedReadOnlyAdmin
from .filters import AgentFilter, EventTypeFilter, FixedChoicesFilter, ScopeFilter
from .inbox import CLAIMED_BY_ME, STATUS_TABS, InboxTab
from .notification_admin import NotificationDeliveryAdmin, NotificationEventFilter
from .pagination import BoundedCount, EstimatingPaginator, bounded_count
from .pause_admin import PauseAdmin
from .review import ReviewPage, present_review
from .run_admin import RunAdmin
from .transcript import transcript

__all__ = [
    "CLAIMED_BY_ME",
    "STATUS_TABS",
    "AgentFilter",
    "BoundedCount",
    "DecisionAdmin",
    "EstimatingPaginator",
    "EventTypeFilter",
    "FixedChoicesFilter",
    "InboxTab",
    "NotificationDeliveryAdmin",
    "NotificationEventFilter",
    "PauseAdmin",
    "ReviewPage",
    "ReviewerAdmin",
    "RunAdmin",
    "ScopeFilter",
    "ScopedReadOnlyAdmin",
    "TurnEventAdmin",
    "admin",
    "bounded_count",
    "present_review",
    "transcript",
]
