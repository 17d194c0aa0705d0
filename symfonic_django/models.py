"""Runs, pauses, their events and the audit trail.

Statuses are written only by the state machines, through ``transitions.Machine.move``:
``runs.py`` (every run status, including the continuation a settled pause asks it for),
``pauses/`` (every pause status) and ``notifications/`` (a delivery's). Everything else
reads. A check constraint holds each status column to its choices, so the database
refuses any other value, whoever writes it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from .conf import ALL_SCOPES


def is_uuid(value: str) -> bool:
    """Whether ``value`` reads as a UUID, the form of every run's and pause's id."""
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


class RunStatus(models.TextChoices):
    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("Running")
    PAUSED = "paused", _("Paused")
    COMPLETED = "completed", _("Completed")
    FAILED = "failed", _("Failed")


class PauseStatus(models.TextChoices):
    PENDING = "pending", _("Pending")
    ANSWERED = "answered", _("Answered")
    EXPIRED = "expired", _("Expired")
    CANCELLED = "cancelled", _("Cancelled")


class PauseKind(models.TextChoices):
    APPROVAL = "approval", _("Approval")
    QUESTION = "question", _("Question")


class AnsweredVia(models.TextChoices):
    ADMIN = "admin", _("Admin")
    API = "api", _("API")
    TOKEN = "token", _("Token")
    PYTHON = "python", _("Python")
    SYSTEM = "system", _("System")
    #: A resume of an AG-UI client (``POST ag-ui/{agent}/`` with ``resume``).
    AG_UI = "ag-ui", _("AG-UI")


class RunQuerySet(models.QuerySet["Run"]):
    def in_scopes(self, keys: Iterable[str]) -> RunQuerySet:
        return self if keys == ALL_SCOPES else self.filter(scope_key__in=keys)

    def lease_lapsed(self, now: datetime | None = None) -> RunQuerySet:
        return self.filter(status=RunStatus.RUNNING, lease_until__lt=now or timezone.now())

    def send_overdue(self, now: datetime | None = None) -> RunQuerySet:
        """Queued runs whose message should have been claimed by now (it was lost)."""
        return self.filter(status=RunStatus.QUEUED, resend_after__lte=now or timezone.now())


class Run(models.Model):
    """One agent turn. A resumed turn is a new run whose ``parent`` paused."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    root = models.ForeignKey("self", on_delete=models.CASCADE, related_name="+", null=True)
    parent = models.ForeignKey(
        "self", on_delete=models.CASCADE, related_name="children", null=True, blank=True
    )
    resumed_from = models.ForeignKey(
        "Pause", on_delete=models.SET_NULL, related_name="+", null=True, blank=True
    )
    agent = models.CharField(_("agent"), max_length=100)
    #: No index of its own: every index below that it leads serves a lookup by tenant, and
    #: one more would be written at every step a run takes (``docs/decisions.md``).
    scope_key = models.CharField(_("scope key"), max_length=200)
    #: Who started the run's lineage (``POST runs/``; copied onto its continuations). They
    #: never count toward a quorum of approvers of its pauses. No index: nothing lists runs
    #: by starter, and deleting a user is rare enough to read the table for it.
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL,
                                   null=True, blank=True, related_name="+", db_index=False)
    session_id = models.CharField(_("session id"), max_length=200, blank=True, default="")
    thread_id = models.CharField(_("thread id"), max_length=200, blank=True, default="")
    status = models.CharField(_("status"), max_length=16, choices=RunStatus.choices,
                              default=RunStatus.QUEUED)
    input = models.JSONField(default=dict, blank=True)
    output = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)
    #: How many times the run was queued: 1, plus one per operator retry.
    attempts = models.PositiveIntegerField(_("attempts"), default=1)
    #: The fencing token: each claim increments it, and a worker's writes name it.
    epoch = models.PositiveIntegerField(_("epoch"), default=0)
    worker = models.CharField(_("worker"), max_length=200, blank=True, default="")
    lease_until = models.DateTimeField(null=True, blank=True)
    #: When its message was last sent to the workers, how often, and when a queued run
    #: that nobody claimed counts as lost and is sent again (with backoff).
    sent_at = models.DateTimeField(null=True, blank=True)
    sends = models.PositiveIntegerField(default=0)
    resend_after = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = RunQuerySet.as_manager()

    class Meta:
        verbose_name = _("run")
        verbose_name_plural = _("runs")
        ordering = ["-created_at"]
        indexes = [
            models.Index(
                fields=["lease_until"], name="symfonic_run_lease_idx",
                condition=Q(status="running"),
            ),
            models.Index(fields=["scope_key", "-created_at"], name="symfonic_run_scope_idx"),
            # A reviewer's run list filtered by status: the count and the page read their
            # tenant's runs of that status alone, not every tenant's (``docs/decisions.md``).
            models.Index(fields=["scope_key", "status", "-created_at"],
                         name="symfonic_run_scopestatus_idx"),
            models.Index(fields=["-created_at"], name="symfonic_run_recent_idx"),
            models.Index(fields=["status", "-created_at"], name="symfonic_run_status_idx"),
            models.Index(fields=["agent", "-created_at"], name="symfonic_run_agent_idx"),
            # A reviewer's run list filtered by agent: their tenant's runs of that agent
            # alone, however many other agents' runs the tenant has (``docs/decisions.md``).
            models.Index(fields=["scope_key", "agent", "-created_at"],
                         name="symfonic_run_scopeagent_idx"),
            # The run list's search: a pasted session or thread id.
            models.Index(fields=["session_id"], name="symfonic_run_session_idx"),
            models.Index(fields=["thread_id"], name="symfonic_run_thread_idx"),
            models.Index(fields=["resend_after"], name="symfonic_run_resend_idx",
                         condition=Q(status="queued")),
            # symfonic_prune: finished runs by age.
            models.Index(fields=["finished_at"], name="symfonic_run_finished_idx",
                         condition=Q(status__in=["completed", "failed"])),
        ]
        permissions = [("retry_run", "Can retry failed runs"), ("start_run", "Can start agent runs")]
        constraints = [
            # Only runs.py writes a status; the database refuses any other value too.
            models.CheckConstraint(condition=Q(status__in=RunStatus.values),
                                   name="symfonic_run_status_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.agent} run {self.id} ({self.status})"

    @property
    def root_run_id(self) -> str:
        return str(self.root_id or self.id)


class PauseQuerySet(models.QuerySet["Pause"]):
    def pending(self) -> PauseQuerySet:
        return self.filter(status=PauseStatus.PENDING)

    def in_scopes(self, keys: Iterable[str]) -> PauseQuerySet:
        return self if keys == ALL_SCOPES else self.filter(scope_key__in=keys)

    def due(self, now: datetime | None = None) -> PauseQuerySet:
        return self.pending().filter(expires_at__lte=now or timezone.now())

    def nearing_expiry(self, now: datetime, before: timedelta) -> PauseQuerySet:
        """Pending pauses that expire within ``before`` of ``now`` (not yet expired), and
        were requested before that window opened: a pause asked for a shorter time than
        ``before`` was never "near" its expiry, its request said how long it had.

        The range on ``expires_at`` reads the partial index of pending pauses
        (``symfonic_pause_due_idx``); the rest filters its rows.
        """
        return self.pending().filter(expires_at__gt=now, expires_at__lte=now + before,
                                     created_at__lte=F("expires_at") - before)


class Pause(models.Model):
    """One human interaction; its ``id`` is the token's ``jti``."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="pauses")
    root_run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    scope_key = models.CharField(_("scope key"), max_length=200)
    kind = models.CharField(_("kind"), max_length=16, choices=PauseKind.choices)
    prompt = models.JSONField()
    #: How many distinct people must approve it (``APPROVAL_POLICY``, read when it is made);
    #: one rejection is enough to end it whatever the number.
    approvals_needed = models.PositiveSmallIntegerField(default=1)
    action_digest = models.CharField(max_length=64, blank=True, default="")
    answer_schema = models.JSONField(null=True, blank=True)
    pin_hash = models.CharField(max_length=64, blank=True, default="")
    session_id = models.CharField(max_length=200, blank=True, default="")
    thread_id = models.CharField(max_length=200, blank=True, default="")
    # None and "" differ in the signed claims (the seed types it str | None).
    checkpoint_id = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001
    idempotency_key = models.CharField(max_length=200, blank=True, default="")
    # The binding as given (rule B6): strings, beside the FK to the run that paused.
    bound_run_id = models.CharField(max_length=64)
    bound_root_run_id = models.CharField(max_length=64)
    status = models.CharField(
        _("status"), max_length=16, choices=PauseStatus.choices, default=PauseStatus.PENDING
    )
    expires_at = models.DateTimeField()
    answer = models.JSONField(null=True, blank=True)
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
        related_name="+",
    )
    answered_via = models.CharField(max_length=16, choices=AnsweredVia.choices, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    continuation = models.ForeignKey(
        Run, on_delete=models.SET_NULL, null=True, blank=True, related_name="resumed_pauses"
    )
    #: Who is reviewing it ("being reviewed by alice"), until when (``pauses.claim``). A
    #: claim informs, it does not lock: anyone who may answer still can. No index: nothing
    #: lists pauses by their claimant (the pause page reads its own row), and a user is
    #: deleted rarely enough for that one SET_NULL to read the table; an inbox tab of
    #: "claimed by me" would want a partial index over claimed pending pauses instead.
    claimed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL,
                                   null=True, blank=True, related_name="+", db_index=False)
    claimed_until = models.DateTimeField(null=True, blank=True)
    #: When the reminder before its expiry, and the escalation after it, went out (once
    #: each: ``pauses.mark_reminded`` / ``mark_escalated`` write them in a guarded UPDATE).
    reminded_at = models.DateTimeField(null=True, blank=True)
    escalated_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    # What the admin's search reads is its own row, ``PauseSearch`` (``pause.search``).

    objects = PauseQuerySet.as_manager()

    class Meta:
        verbose_name = _("pause")
        verbose_name_plural = _("pauses")
        ordering = ["-created_at"]
        permissions = [("answer_pause", "Can answer (approve, reject, respond to) pauses")]
        constraints = [
            models.UniqueConstraint(
                fields=["root_run", "idempotency_key"],
                condition=~Q(idempotency_key=""),
                name="symfonic_pause_idempotency_per_root",
            ),
            models.CheckConstraint(condition=Q(status__in=PauseStatus.values),
                                   name="symfonic_pause_status_valid"),
        ]
        indexes = [
            models.Index(fields=["scope_key", "status", "-created_at"],
                         name="symfonic_pause_scope_idx"),
            models.Index(fields=["expires_at"], name="symfonic_pause_due_idx",
                         condition=Q(status="pending")),
            models.Index(fields=["status", "-created_at"], name="symfonic_pause_status_idx"),
            # The review lists: everything newest first, and one scope's newest first.
            models.Index(fields=["-created_at"], name="symfonic_pause_recent_idx"),
            models.Index(fields=["scope_key", "-created_at"],
                         name="symfonic_pause_scoperec_idx"),
            models.Index(fields=["scope_key", "kind", "-created_at"],
                         name="symfonic_pause_scopekind_idx"),
            # The inbox's "claimed by me": only pending pauses someone claimed are in it.
            models.Index(fields=["claimed_by", "created_at"], name="symfonic_pause_claimed_idx",
                         condition=Q(status="pending", claimed_by__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"{self.kind} pause {self.id} ({self.status})"

    @property
    def is_pending(self) -> bool:
        return self.status == PauseStatus.PENDING

    @property
    def claimant(self) -> Any:
        """The user whose claim on it has not lapsed, else None (reads ``claimed_by``)."""
        return self.claimant_at(timezone.now())

    def claimant_at(self, now: datetime) -> Any:
        if self.claimed_by_id is None or self.claimed_until is None or self.claimed_until <= now:
            return None
        return self.claimed_by


class PauseSearch(models.Model):
    """What a reviewer searches a pause by (``hitl.search_text``), written once with it.

    The proposed actions' names, descriptions and arguments, or the question; the
    session and thread ids; case-folded, punctuation dropped. On PostgreSQL a trigram
    index serves ``text LIKE '%term%'`` (built by the migration; not in
    ``Meta.indexes``, as only PostgreSQL has it).

    A row of its own, not a column of the pause, because a pause's row is rewritten
    by every step it takes (an answer, a claim, a reminder, its expiry): PostgreSQL
    writes a new row version with new entries in every index of its table, and a
    trigram index's entries for a pause are a hundred or so, about 0.2 ms to write
    at a million pauses, the largest part of expiring one (``docs/decisions.md``,
    "Search that scales"). This row is written once and never updated.
    """

    pause = models.OneToOneField(Pause, on_delete=models.CASCADE, primary_key=True,
                                 related_name="search")
    text = models.TextField(editable=False)

    def __str__(self) -> str:
        return f"search text of {self.pause_id}"


class TurnEvent(models.Model):
    """One event of a turn, persisted before it is announced (the stream)."""

    # No index of its own: the unique (run, seq) index starts with it and serves every
    # lookup by run; one index fewer to write for every event.
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events",
                            db_index=False)
    seq = models.PositiveIntegerField(_("seq"))
    type = models.CharField(_("type"), max_length=40)
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)
    #: The run's, copied when the event is stored (a run never changes scope), so a
    #: reviewer's event list reads its scope's range of an index instead of walking
    #: every tenant's events newest first and looking up each one's run.
    scope_key = models.CharField(max_length=200, default="", editable=False)

    class Meta:
        verbose_name = _("turn event")
        verbose_name_plural = _("turn events")
        ordering = ["run", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["run", "seq"], name="symfonic_event_run_seq"),
        ]
        indexes = [
            # The event list filtered by type, newest first, and its count.
            models.Index(fields=["type", "-id"], name="symfonic_event_type_idx"),
            # A reviewer's event list, unfiltered and filtered by type.
            models.Index(fields=["scope_key", "-id"], name="symfonic_event_scope_idx"),
            models.Index(fields=["scope_key", "type", "-id"],
                         name="symfonic_event_scopetype_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}#{self.seq} {self.type}"


class AuditRecord(models.Model):
    """What every append-only audit row says: who, through which surface, when, and why."""

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
        related_name="+",
    )
    actor_label = models.CharField(max_length=200, blank=True, default="")
    via = models.CharField(_("via"), max_length=16, choices=AnsweredVia.choices)
    comment = models.TextField(_("comment"), blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        abstract = True
        ordering = ["created_at"]


class Decision(AuditRecord):
    """Append-only audit: who did what to which pause, when, through which surface."""

    class Action(models.TextChoices):
        ANSWER = "answer", _("Answered")
        APPROVE = "approve", _("Approved")
        EDIT = "edit", _("Edited and approved")
        REJECT = "reject", _("Rejected")
        RESPOND = "respond", _("Responded")
        EXPIRE = "expire", _("Expired")
        CANCEL = "cancel", _("Cancelled")
        # Not answers: who said they are reviewing it, and what the system told whom.
        CLAIM = "claim", _("Claimed")
        RELEASE = "release", _("Released")
        REMIND = "remind", _("Reminded")
        ESCALATE = "escalate", _("Escalated")

    pause = models.ForeignKey(Pause, on_delete=models.CASCADE, related_name="decisions")
    action = models.CharField(_("action"), max_length=16, choices=Action.choices)
    answer = models.JSONField(null=True, blank=True)
    #: The pause's scope, copied when the decision is written (a pause never changes
    #: scope): a reviewer's list of decisions is then read from one index, not joined
    #: to every pause.
    scope_key = models.CharField(max_length=200, default="", editable=False)

    class Meta(AuditRecord.Meta):
        verbose_name = _("decision")
        verbose_name_plural = _("decisions")
        indexes = [
            # The decision list filtered by action or by surface, newest first, and counts.
            models.Index(fields=["action", "-id"], name="symfonic_decision_action_idx"),
            models.Index(fields=["via", "-id"], name="symfonic_decision_via_idx"),
            # A reviewer's decisions, newest first; the scope filter's choices.
            models.Index(fields=["scope_key", "-id"], name="symfonic_decision_scope_idx"),
            # A reviewer's list filtered by action or by surface: its scope's range of them.
            models.Index(fields=["scope_key", "action", "-id"],
                         name="symfonic_decision_scopeact_idx"),
            models.Index(fields=["scope_key", "via", "-id"], name="symfonic_decision_scopevia_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.actor_label or 'system'} {self.action} {self.pause_id}"


class RunRetry(AuditRecord):
    """Append-only audit: an operator sent a failed run back to the queue."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="retries")
    #: The run's ``attempts`` after the retry, and the error it had before.
    attempt = models.PositiveIntegerField()
    previous_error = models.JSONField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.actor_label or 'system'} retried {self.run_id} (attempt {self.attempt})"


class IdempotentResponse(models.Model):
    """One ``Idempotency-Key`` of one caller: in flight, then the 2xx it was answered with.

    The row is written, and committed, before the request's work starts, so a
    concurrent duplicate finds it in flight (``status`` null, a 409) rather than
    doing the work twice; ``fingerprint`` (method, path and body) tells a
    repeat from a different request under the same key (a 422). A request that
    is refused deletes its row: the key is free for a retry.
    """

    caller = models.CharField(max_length=100)
    key = models.CharField(max_length=200)
    #: SHA-256 of the method, the path and the canonical JSON body.
    fingerprint = models.CharField(max_length=64, blank=True, default="")
    #: The response to replay; null while the first request is still in flight.
    status = models.PositiveSmallIntegerField(null=True, blank=True)
    body = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["caller", "key"], name="symfonic_idempotency_key"),
        ]
        indexes = [models.Index(fields=["created_at"], name="symfonic_idem_created_idx")]

    def __str__(self) -> str:
        return f"{self.caller} {self.key}"


class GraphCheckpoint(models.Model):
    """One LangGraph checkpoint of one thread and namespace (``checkpoint.DjangoSaver``).

    Each key part is its own column, unique together; the checkpoint itself is
    what the saver's serializer made of it (a type name and bytes), so these
    tables never need LangGraph to migrate. ``metadata`` is JSON because
    ``list(filter=...)`` searches it; ``run_id`` is copied out of it because
    ``delete_for_runs`` looks rows up by run across every thread.
    """

    thread_id = models.TextField()
    checkpoint_ns = models.TextField(blank=True, default="")
    checkpoint_id = models.TextField()
    #: Empty for the first checkpoint of a namespace.
    parent_checkpoint_id = models.TextField(blank=True, default="")
    run_id = models.TextField(blank=True, default="")
    checkpoint_type = models.TextField()
    checkpoint = models.BinaryField()
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["thread_id", "checkpoint_ns", "checkpoint_id"],
                name="symfonic_graph_checkpoint_key",
            ),
        ]
        indexes = [models.Index(fields=["run_id"], name="symfonic_graph_ckpt_run_idx")]

    def __str__(self) -> str:
        return f"{self.thread_id} {self.checkpoint_ns!r} {self.checkpoint_id}"


class GraphCheckpointWrite(models.Model):
    """One pending write a LangGraph task made after a checkpoint (``checkpoint.DjangoSaver``).

    Unique per checkpoint, task and index, as LangGraph's own savers key it; a
    special write (error, interrupt, resume, scheduled) has a negative index
    and is overwritten, a normal one is written once. There is no foreign key
    to the checkpoint: a run saves a step's writes in the background, and they
    may commit before their checkpoint does.
    """

    thread_id = models.TextField()
    checkpoint_ns = models.TextField(blank=True, default="")
    checkpoint_id = models.TextField()
    task_id = models.TextField()
    #: The task's path in the graph; pending writes are read in (task_path, task_id, idx) order.
    task_path = models.TextField(blank=True, default="")
    idx = models.IntegerField()
    channel = models.TextField()
    value_type = models.TextField()
    value = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx"],
                name="symfonic_graph_write_key",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.checkpoint_id} {self.task_id}[{self.idx}] -> {self.channel}"


class ToolResult(models.Model):
    """One call of a fenced tool (``agents.fencing.fenced_tool``), by root run and tool call.

    The tool's side effect and ``completed_at``/``result`` commit together under the
    run's fence, so a re-executed node or ``ToolNode`` finds the row and replays the
    result instead of running the effect again. ``interrupt_ids`` are the interrupts
    the tool asked before it completed, in order: a replay consumes their answers
    again, so a later ``interrupt()`` of the same LangGraph task keeps its own answer.
    """

    # No index of its own: the unique (root_run, tool_call_id) index starts with it.
    root_run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+",
                                 db_index=False)
    tool_call_id = models.CharField(max_length=200)
    name = models.CharField(max_length=200)
    #: SHA-256 of the call's arguments as canonical JSON: a call id that comes back with
    #: other arguments is another call, refused (``ToolCallMismatch``); "" on older rows.
    args_digest = models.CharField(max_length=64, blank=True, default="")
    interrupt_ids = models.JSONField(default=list, blank=True)
    result = models.JSONField(null=True, blank=True)
    #: The turn that ran the effect; null until it completed.
    run = models.ForeignKey(Run, on_delete=models.SET_NULL, related_name="+", null=True,
                            blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["root_run", "tool_call_id"],
                                    name="symfonic_tool_result_call"),
        ]

    def __str__(self) -> str:
        return f"{self.name} {self.tool_call_id} of {self.root_run_id}"

    @property
    def is_completed(self) -> bool:
        return self.completed_at is not None


class AgentState(models.Model):
    """A paused run's framework state: a Pydantic AI message history, an OpenAI Agents SDK
    ``RunState`` string (``agents.stored_state``).

    Stored by the turn that paused, before its pauses are asked; taken by one
    continuation run (``consumed_by``, under the continuation's claim), which stores
    its own state when it pauses again. A run that ran to its pause before finds its
    state here when it runs again, and asks no model a second time.
    """

    run = models.OneToOneField(Run, on_delete=models.CASCADE, primary_key=True,
                               related_name="+")
    #: Which adapter wrote it ("pydantic_ai", "openai_agents"): one never reads another's.
    framework = models.CharField(max_length=40)
    state = models.TextField()
    consumed_by = models.ForeignKey(Run, on_delete=models.SET_NULL, related_name="+",
                                    null=True, blank=True)
    consumed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.framework} state of {self.run_id}"


# --- notifications (notifications/) -------------------------------------------------------

class DeliveryChannel(models.TextChoices):
    EMAIL = "email", _("Email")
    WEBHOOK = "webhook", _("Webhook")


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", _("Pending")
    DELIVERED = "delivered", _("Delivered")
    FAILED = "failed", _("Failed")


class NotificationDelivery(models.Model):
    """One notification to one target (an email address, a webhook endpoint), and its fate.

    ``payload`` is what was announced, as the webhook's body (``{"type",
    "timestamp", "data"}``); it never holds a pause token: one is minted at
    each attempt when a setting asks for it. ``id`` is the webhook's
    ``webhook-id``, the same on every attempt, so a receiver can drop repeats.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    channel = models.CharField(_("channel"), max_length=16, choices=DeliveryChannel.choices)
    #: An email address, or the ``NAME`` of a webhook endpoint (its URL and secret stay
    #: in settings: a URL may carry a credential of its own).
    target = models.CharField(_("target"), max_length=254)
    event_type = models.CharField(_("event type"), max_length=40)
    payload = models.JSONField()
    #: The scope of the pause or run it is about: reviewers see their scopes' deliveries.
    scope_key = models.CharField(_("scope key"), max_length=200)
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    pause = models.ForeignKey(Pause, on_delete=models.CASCADE, related_name="+", null=True,
                              blank=True)
    status = models.CharField(_("status"), max_length=16, choices=DeliveryStatus.choices,
                              default=DeliveryStatus.PENDING)
    #: Attempts started so far, and the number after which a failure is final.
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    max_attempts = models.PositiveIntegerField(_("max attempts"))
    last_error = models.TextField(_("last error"), blank=True, default="")
    #: When a pending delivery is next due (while an attempt runs: when it counts as lost).
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("notification delivery")
        verbose_name_plural = _("notification deliveries")
        permissions = [("redeliver_notification", "Can redeliver notifications")]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=DeliveryStatus.values),
                                   name="symfonic_delivery_status_valid"),
        ]
        indexes = [
            # The delivery list, newest first, and one scope's.
            models.Index(fields=["-created_at"], name="symfonic_delivery_recent_idx"),
            models.Index(fields=["scope_key", "-created_at"], name="symfonic_delivery_scope_idx"),
            models.Index(fields=["status", "-created_at"], name="symfonic_delivery_status_idx"),
            # The sweep that sends again what a lost message left due.
            models.Index(fields=["next_attempt_at"], name="symfonic_delivery_due_idx",
                         condition=Q(status="pending")),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} to {self.target} ({self.status})"


class DeliveryAttempt(models.Model):
    """One attempt of a delivery: written when it starts, completed with its outcome.

    An attempt whose worker stopped mid-way keeps ``finished_at`` null.
    """

    delivery = models.ForeignKey(NotificationDelivery, on_delete=models.CASCADE,
                                 related_name="attempt_rows", db_index=False)
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    ok = models.BooleanField(default=False)
    #: The webhook receiver's HTTP status, when it answered.
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["delivery", "number"]
        constraints = [
            models.UniqueConstraint(fields=["delivery", "number"],
                                    name="symfonic_delivery_attempt_number"),
        ]

    def __str__(self) -> str:
        return f"attempt {self.number} of {self.delivery_id}"


class Redelivery(AuditRecord):
    """Append-only audit: someone asked for a delivery to be attempted again."""

    delivery = models.ForeignKey(NotificationDelivery, on_delete=models.CASCADE,
                                 related_name="redeliveries")
    #: The delivery's status and attempts when it was asked.
    previous_status = models.CharField(max_length=16, choices=DeliveryStatus.choices)
    attempts_before = models.PositiveIntegerField()

    class Meta(AuditRecord.Meta):
        constraints = [
            models.CheckConstraint(condition=Q(previous_status__in=DeliveryStatus.values),
                                   name="symfonic_redelivery_status_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.actor_label or 'system'} redelivered {self.delivery_id}"
