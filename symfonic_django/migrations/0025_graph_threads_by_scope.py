"""The app saver's checkpoints move to the keys of their scopes' threads.

Until now the LangGraph adapter handed a checkpointer the caller's thread id as
it was, so two scopes that used the same one shared a thread. It now hands it
``threads.checkpoint_thread_id(scope key, thread id)``; this moves the rows
``DjangoSaver`` keeps (``GraphCheckpoint``, ``GraphCheckpointWrite``) to those
keys, reading each thread's scope from the runs that wrote its checkpoints
(``run_id``):

- a thread whose checkpoints were all written by runs of one scope moves whole
  to that scope's key (its pending writes with it);
- a thread that several scopes wrote (the leak this closes) stays with the
  scope of its earliest run; the checkpoints the other scopes' runs wrote, with
  their pending writes, go to ``threads.quarantine_thread_id(their scope,
  thread id)``, which no run reaches: the thread is left as its first owner
  wrote it, and nobody's run reads the other's checkpoints again. Each such
  thread is logged (logger ``symfonic_django.migrations``, a warning) with how
  many checkpoints were set aside; an operator may delete them or keep them;
- checkpoints that name no run of the app's (empty or unknown ``run_id``) go
  with their thread's scope; a thread with none of the app's runs takes the
  scope of the earliest run that names it (its ``thread_id``, or its root run's
  id), and a thread no run names at all (a graph driven outside the app) keeps
  its id and is counted in the log.

Backwards, every key goes back to the caller's thread id, set-aside rows
included, as the previous version stored them (threads shared by several
scopes are shared again). A checkpointer of the deployment's own (such as
``AsyncPostgresSaver``) is not the app's to migrate: ``docs/langgraph.md``
says how to move its threads.
"""

import logging
from collections import defaultdict
from uuid import UUID

from django.db import migrations
from django.db.models import Q

from symfonic_django.threads import (
    QUARANTINE_PREFIX,
    checkpoint_thread_id,
    quarantine_thread_id,
    split_checkpoint_thread_id,
)

log = logging.getLogger("symfonic_django.migrations")

#: Threads looked up at a time, and checkpoint ids in one ``IN`` list: within SQLite's
#: limit on a statement's parameters.
BATCH = 300


def forwards(apps, schema_editor):
    db = schema_editor.connection.alias
    Checkpoint = apps.get_model("symfonic_django", "GraphCheckpoint").objects.using(db)
    Write = apps.get_model("symfonic_django", "GraphCheckpointWrite").objects.using(db)
    Run = apps.get_model("symfonic_django", "Run").objects.using(db)
    # Read whole before any moves: a moved key must not be met again as a thread to move.
    threads = sorted(set(Checkpoint.values_list("thread_id", flat=True).distinct())
                     | set(Write.values_list("thread_id", flat=True).distinct()))
    moved = shared = unowned = 0
    for start in range(0, len(threads), BATCH):
        batch = threads[start:start + BATCH]
        writers = defaultdict(set)
        for thread_id, run_id in (Checkpoint.filter(thread_id__in=batch)
                                  .values_list("thread_id", "run_id").distinct()):
            writers[thread_id].add(run_id)
        run_ids = [i for ids in writers.values() for i in ids if _is_uuid(i)]
        owners = _runs(Run.filter(pk__in=run_ids))
        namers = _runs(Run.filter(_naming(batch)))
        for thread_id in batch:
            runs = [owners[run_id] for run_id in writers[thread_id] if run_id in owners]
            if not runs:
                runs = [run for run in namers.values() if run["thread"] == thread_id]
            if not runs:
                unowned += 1
                continue
            kept = min(runs, key=lambda run: (run["created_at"], run["pk"]))["scope_key"]
            others = defaultdict(list)
            for run_id in writers[thread_id]:
                if run_id in owners and owners[run_id]["scope_key"] != kept:
                    others[owners[run_id]["scope_key"]].append(run_id)
            for scope_key, run_ids in others.items():
                aside = Checkpoint.filter(thread_id=thread_id, run_id__in=run_ids)
                keys = list(aside.values_list("checkpoint_ns", "checkpoint_id"))
                target = quarantine_thread_id(scope_key, thread_id)
                for writes in _writes_of(Write.filter(thread_id=thread_id), keys):
                    writes.update(thread_id=target)
                aside.update(thread_id=target)
                log.warning(
                    "thread %r had checkpoints of more than one scope: it stays with the "
                    "scope of its earliest run, and %d checkpoint(s) of another scope's "
                    "runs were set aside as thread %r", thread_id, len(keys), target)
            shared += bool(others)
            key = checkpoint_thread_id(kept, thread_id)
            Write.filter(thread_id=thread_id).update(thread_id=key)
            Checkpoint.filter(thread_id=thread_id).update(thread_id=key)
            moved += 1
    if threads:
        log.info("graph threads moved to their scopes' keys: %d (%d shared by scopes, "
                 "set aside in part); %d named by no run, left as they were",
                 moved, shared, unowned)


def _runs(runs):
    """These runs by id (text): their scope, age, and the thread the adapter drove them on."""
    found = {}
    for pk, scope_key, created_at, thread_id, root_id in runs.values_list(
            "pk", "scope_key", "created_at", "thread_id", "root_id"):
        found[str(pk)] = {"pk": str(pk), "scope_key": scope_key, "created_at": created_at,
                          "thread": thread_id or str(root_id or pk)}
    return found


def _naming(thread_ids):
    """Runs that name one of these threads, as the adapter named them."""
    run_ids = [thread_id for thread_id in thread_ids if _is_uuid(thread_id)]
    return (Q(thread_id__in=thread_ids) | Q(thread_id="", root_id__in=run_ids)
            | Q(thread_id="", root__isnull=True, pk__in=run_ids))


def _writes_of(writes, keys):
    """``writes`` after the checkpoints ``keys`` (namespace, id), a batch of ids at a time."""
    by_namespace = defaultdict(list)
    for checkpoint_ns, checkpoint_id in keys:
        by_namespace[checkpoint_ns].append(checkpoint_id)
    for checkpoint_ns, ids in by_namespace.items():
        for start in range(0, len(ids), BATCH):
            yield writes.filter(checkpoint_ns=checkpoint_ns,
                                checkpoint_id__in=ids[start:start + BATCH])


def backwards(apps, schema_editor):
    db = schema_editor.connection.alias
    models = [apps.get_model("symfonic_django", name).objects.using(db)
              for name in ("GraphCheckpointWrite", "GraphCheckpoint")]
    keys = sorted(set().union(*(set(rows.values_list("thread_id", flat=True).distinct())
                                for rows in models)))
    for key in keys:
        split = split_checkpoint_thread_id(key.removeprefix(QUARANTINE_PREFIX))
        if split is None:
            continue
        for rows in models:
            rows.filter(thread_id=key).update(thread_id=split[1])


def _is_uuid(value):
    try:
        UUID(value)
    except ValueError:
        return False
    return True


class Migration(migrations.Migration):

    dependencies = [
        ("symfonic_django", "0024_run_scope_agent_index"),
    ]

    operations = [
        migrations.RunPython(forwards, backwards),
    ]
