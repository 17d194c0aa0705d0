"""Counting and paging the admin's lists, which grow with every turn, at any size.

A list counts at most ``EXACT_COUNT_UP_TO + 1`` rows (beyond, PostgreSQL's estimate:
``pg.planner_rows``) and pages no deeper than that many rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.core.paginator import Paginator
from django.db import connections
from django.db.models import QuerySet
from django.utils.functional import cached_property

from .. import pg

if TYPE_CHECKING:
    PaginatorBase = Paginator[Any]
else:  # it takes no type arguments at runtime
    PaginatorBase = Paginator

#: Up to this many rows a changelist counts exactly; beyond, it shows PostgreSQL's estimate.
#: Its pages also stop this deep (10 pages of 100): past it, a reviewer filters or searches.
#: Counting 1,001 rows, or skipping 900 to a page, stays a few milliseconds at any size.
EXACT_COUNT_UP_TO = 1_000


@dataclass(frozen=True)
class BoundedCount:
    """A number of rows: exact, or PostgreSQL's estimate when ``is_estimate``."""

    rows: int
    is_estimate: bool

    def __str__(self) -> str:
        return f"≈ {self.rows:,}" if self.is_estimate else f"{self.rows:,}"


def bounded_count(queryset: QuerySet[Any]) -> BoundedCount:
    """How many rows ``queryset`` holds, reading no more than ``EXACT_COUNT_UP_TO + 1``.

    Exact up to ``EXACT_COUNT_UP_TO`` rows. Beyond, on PostgreSQL, the planner's
    estimate: an exact ``COUNT(*)`` reads every matching row, and over a large
    table that costs more than the page it numbers. Other databases count exactly.
    """
    # Only the rows' ids: a list's annotations (the inbox's approvals) and joined
    # columns would be computed for every row counted, and a count needs none of them.
    queryset = queryset.order_by().values("pk")
    if connections[queryset.db].vendor != "postgresql":
        return BoundedCount(queryset.count(), is_estimate=False)
    counted = queryset[:EXACT_COUNT_UP_TO + 1].count()
    # Asked whatever the count, so that a page makes the same queries at any size;
    # a plan reads no rows.
    estimate = pg.planner_rows(queryset)
    if counted <= EXACT_COUNT_UP_TO:
        return BoundedCount(counted, is_estimate=False)
    return BoundedCount(max(counted, estimate), is_estimate=True)


class EstimatingPaginator(PaginatorBase):
    """A paginator that never reads more than ``EXACT_COUNT_UP_TO + 1`` rows to count them.

    ``count`` is ``bounded_count``'s: exact up to ``EXACT_COUNT_UP_TO`` rows;
    beyond, on PostgreSQL, the planner's estimate, and ``count_is_estimate`` is true.
    """

    count_is_estimate = False

    @cached_property
    def num_pages(self) -> int:
        """The pages that reach no further than ``EXACT_COUNT_UP_TO`` rows into the list.

        A page's offset is read row by row, so a deep page of a large table costs
        as much as every row before it; past this, a reviewer filters or searches.
        A deeper ``?p=`` is out of range, as any page past the end is.
        """
        return min(super().num_pages, max(1, EXACT_COUNT_UP_TO // self.per_page))

    def page(self, number: Any) -> Any:
        """Page ``number``; past the first, its rows are found by id first.

        A page's offset is read row by row, and each row skipped costs what the
        list computes for a row shown: its joins (``select_related``) and
        annotations. So a deeper page reads the ids of its rows alone (the
        ordering's index and nothing joined), then the list's rows with those ids,
        in the list's order. One more query, and the depth costs only index entries.
        """
        page = super().page(number)
        rows, listed = page.object_list, self.object_list
        if page.number > 1 and isinstance(rows, QuerySet) and isinstance(listed, QuerySet):
            page.object_list = listed.filter(pk__in=list(rows.values_list("pk", flat=True)))
        return page

    @cached_property
    def count(self) -> int:
        if not isinstance(self.object_list, QuerySet):
            return super().count
        counted = bounded_count(self.object_list)
        self.count_is_estimate = counted.is_estimate
        return counted.rows
