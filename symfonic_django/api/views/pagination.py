"""Cursor pages of the pause and the run lists, refusing a cursor this API did not issue."""

from __future__ import annotations

import re
from typing import Any

from django.utils.dateparse import parse_datetime
from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request

from ...exceptions import InvalidRequest
from .base import query_int

#: A cursor DRF issues: standard base64 of a short query string (position, offset, reverse).
CURSOR = re.compile(r"[A-Za-z0-9+/]{1,500}={0,2}")


class NewestFirstPagination(CursorPagination):
    """Cursor pages, newest first, of the pause and the run lists."""

    ordering = "-created_at"
    page_size = 50
    max_page_size = 200
    page_size_query_param = "page_size"

    def get_page_size(self, request: Request) -> int:
        # DRF silently falls back to the default for a page_size it cannot read;
        # a malformed query is the client's mistake and is said so (400).
        size = query_int(request, self.page_size_query_param, self.page_size, minimum=1)
        return min(size, self.max_page_size)

    def decode_cursor(self, request: Request) -> Any:
        """A cursor this API did not issue is a malformed request (400), never a 500.

        DRF checks a cursor's offset but not its position, which goes straight
        into ``created_at__lt``: an unparsable one raised a database-side error.
        """
        encoded = request.query_params.get(self.cursor_query_param)
        # Base64, as DRF writes it; DRF's decoder skips any other character, so "%00"
        # would read as a cursor with no position.
        if encoded is not None and not CURSOR.fullmatch(encoded):
            raise InvalidRequest("The cursor is malformed; follow the next and previous links.")
        try:
            cursor = super().decode_cursor(request)
        except NotFound:
            cursor = None
        else:
            if cursor is None or cursor.position is None or _is_datetime(str(cursor.position)):
                return cursor
        raise InvalidRequest("The cursor is malformed; follow the next and previous links.")


def _is_datetime(value: str) -> bool:
    try:
        return parse_datetime(value) is not None
    except ValueError:
        return False
