"""What the pause and the run endpoints share: a login, cursor pages, a list and a read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.db.models import Model
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, viewsets
from rest_framework.permissions import IsAuthenticated
from rest_framework.serializers import Serializer

from .base import SymfonicAPIView
from .pagination import NewestFirstPagination
from .schema import ERRORS

M = TypeVar("M", bound=Model)
VS = TypeVar("VS", bound="ListAndReadViewSet[Any]")

#: Every list takes a page size.
PAGE_SIZE = OpenApiParameter("page_size", int, description="At most 200.")


class ListAndReadViewSet(SymfonicAPIView, mixins.ListModelMixin, mixins.RetrieveModelMixin,
                         viewsets.GenericViewSet[M]):
    """Rows the caller may review: a list of cursor pages, newest first, and one by id."""

    pagination_class = NewestFirstPagination
    permission_classes = [IsAuthenticated]


def list_and_read(serializer: type[Serializer[Any]], filters: list[OpenApiParameter], *,
                  listing: tuple[str, str], reading: tuple[str, str],
                  ) -> Callable[[type[VS]], type[VS]]:
    """A ``ListAndReadViewSet`` of ``serializer``: it lists (filtered by ``filters``) and
    reads with it, and the schema says so; ``listing`` and ``reading`` are each a
    summary and a description."""
    def decorate(viewset: type[VS]) -> type[VS]:
        viewset.serializer_class = serializer
        described: type[VS] = extend_schema_view(
            list=extend_schema(summary=listing[0], description=listing[1],
                               parameters=[*filters, PAGE_SIZE],
                               responses={200: serializer(many=True), **ERRORS}),
            retrieve=extend_schema(summary=reading[0], description=reading[1],
                                   responses={200: serializer, **ERRORS}))(viewset)
        return described
    return decorate
