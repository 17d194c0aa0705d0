"""How the saver's sync operations run: from LangGraph's own threads, and from async code.

Every operation is one sync method, because Django's ORM is sync and a
transaction must never span an ``await``. ``leaves_connection_as_found``
keeps a thread LangGraph started from holding a connection;
``in_sync_thread`` and ``iterated_in_sync_thread`` make a method's async twin,
which runs the method in Django's sync thread (``sync_to_async``) and keeps
its signature (LangGraph reads ``aput_writes``'s).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from asgiref.sync import sync_to_async
from django.db import connections


class OnDatabase(Protocol):
    @property
    def using(self) -> str: ...


S = TypeVar("S", bound=OnDatabase)
P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


def leaves_connection_as_found(
    operation: Callable[Concatenate[S, P], R],
) -> Callable[Concatenate[S, P], R]:
    """Run ``operation``, then close the database connection if the operation opened it.

    A sync graph saves its checkpoints from LangGraph's own worker threads,
    which Django's request and task hygiene never reaches: a connection they
    opened would stay open, or stay taken from the pool, after the thread is
    gone. A thread that already had a connection (a request, a turn, a test)
    keeps it; with a pool, closing hands the connection back.
    """

    @functools.wraps(operation)
    def run(saver: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        connection = connections[saver.using]
        opened_here = connection.connection is None
        try:
            return operation(saver, *args, **kwargs)
        finally:
            if opened_here and not connection.in_atomic_block:
                connection.close()

    return run


def in_sync_thread(
    operation: Callable[Concatenate[S, P], R],
) -> Callable[Concatenate[S, P], Coroutine[Any, Any, R]]:
    """The async twin of ``operation``: the operation, run in Django's sync thread."""

    async def run(saver: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await sync_to_async(operation)(saver, *args, **kwargs)

    return _twin_of(operation, run)


def iterated_in_sync_thread(
    operation: Callable[Concatenate[S, P], Iterable[T]],
) -> Callable[Concatenate[S, P], AsyncIterator[T]]:
    """The async twin of an operation that returns items: all of them are read in Django's
    sync thread, then yielded."""

    async def run(saver: S, /, *args: P.args, **kwargs: P.kwargs) -> AsyncIterator[T]:
        for item in await sync_to_async(_read_all)(operation, saver, *args, **kwargs):
            yield item

    return _twin_of(operation, run)


def _twin_of(operation: Callable[..., Any], twin: F) -> F:
    """``twin`` with ``operation``'s signature and docstring, named as its async twin."""
    functools.update_wrapper(twin, operation)
    twin.__name__ = f"a{operation.__name__}"
    twin.__qualname__ = operation.__qualname__.removesuffix(operation.__name__) + twin.__name__
    return twin


def _read_all(operation: Callable[Concatenate[S, P], Iterable[T]], saver: S,
              *args: P.args, **kwargs: P.kwargs) -> list[T]:
    return [*operation(saver, *args, **kwargs)]
