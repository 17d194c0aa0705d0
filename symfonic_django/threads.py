"""A thread's key in a checkpointer: the caller's thread id inside the run's scope.

A run's ``thread_id`` is its caller's name for a conversation inside its own
scope: two scopes that use the same name share nothing. So the key that reaches
a checkpointer (``DjangoSaver``, or a deployment's own, like
``AsyncPostgresSaver``) is never the caller's name alone but
``checkpoint_thread_id(scope_key, thread_id)``::

    <64 hex digits: SHA-256 of the scope key>:<the caller's thread id>

The digest has a fixed length, so the key reads back as exactly one pair: two
scopes' ``T`` can only meet if their scope keys' SHA-256 digests do. The scope
key itself does not go into the checkpointer's rows, only its digest; the
digest is not keyed with ``SECRET_KEY`` (as a token's scope hash is) because a
thread must outlive a key rotation, and the rows sit in the deployment's own
database, beside the runs that name the scope key in clear.

Callers keep seeing their own ``thread_id`` everywhere (runs, pauses, the API,
events); only a checkpointer sees the key. Nothing here needs LangGraph.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["checkpoint_thread_id", "scope_digest", "split_checkpoint_thread_id"]

#: Domain separation: this digest of a scope key is of no use anywhere else.
DIGEST_PREFIX = b"symfonic_django.thread-scope\x00"

#: How a key starts: the scope's digest and a colon.
KEY = re.compile(r"(?P<digest>[0-9a-f]{64}):(?P<thread_id>.*)", re.DOTALL)


def scope_digest(scope_key: str) -> str:
    """The SHA-256 of a scope key, as 64 lowercase hex digits, for thread keys only."""
    return hashlib.sha256(DIGEST_PREFIX + scope_key.encode()).hexdigest()


def checkpoint_thread_id(scope_key: str, thread_id: str) -> str:
    """The key a checkpointer gets for the caller's ``thread_id`` in scope ``scope_key``."""
    return f"{scope_digest(scope_key)}:{thread_id}"


def split_checkpoint_thread_id(key: str) -> tuple[str, str] | None:
    """``(scope digest, caller's thread id)`` of a checkpointer key, or ``None`` if it is none."""
    match = KEY.fullmatch(key)
    return (match["digest"], match["thread_id"]) if match else None
