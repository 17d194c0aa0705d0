"""A LangGraph checkpoint saver on the Django ORM: graph state in the project's database.

``DjangoSaver`` keeps a graph's checkpoints in ``GraphCheckpoint`` rows and the
writes its tasks leave after each checkpoint in ``GraphCheckpointWrite`` rows,
in the database the pauses live in, so a pause and the graph state that
explains it are committed, backed up and restored together::

    graph = builder.compile(checkpointer=DjangoSaver())

It needs the ``[langgraph]`` extra; nothing else in the package imports this
package unconditionally, and the models do not need LangGraph. Any other
checkpointer (``langgraph-checkpoint-postgres``, say) may be passed instead.

Every operation is one sync method; its async twin runs that method through
``sync_to_async``, because Django's ORM is sync and a transaction must never
span an ``await`` (``sync``). The three calls a graph makes on every step
(``put``, ``put_writes``, ``get_tuple``) are plain statements that PostgreSQL
and SQLite both run (``pg.insert``, and one ``raw`` read): the ORM's query
building costs more than the round trip, and ``bulk_create`` adds a
transaction to every insert (``bench/bench_checkpoint.py`` measured both); the
rest is ORM. Values are stored as the saver's serializer makes them
(``dumps_typed``: a type name and bytes), so a custom or encrypting ``serde``
applies to everything but the metadata, which is JSON because
``list(filter=...)`` searches it.

The modules: ``saver`` (``DjangoSaver``: reads, writes, async twins),
``maintenance`` (deleting, copying and pruning threads), ``keys`` (a
checkpoint's key in rows and in LangGraph's config), ``sync`` (how the sync
operations run from LangGraph's threads and from async code).
"""

from .saver import DjangoSaver

__all__ = ["DjangoSaver"]
