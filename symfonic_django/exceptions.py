"""Every refusal the app can make, one typed exception per error code.

Each class carries the HTTP ``status`` and the pinned ``code`` of docs/design.md
section 6, so the API, the admin and the Python callers refuse the same way.
A refusal is raised before anything is written: catching one means no row
changed.
"""

from __future__ import annotations


class SymfonicError(Exception):
    """Base of every refusal. ``code`` is stable; ``detail`` is for people."""

    code: str = "error"
    status: int = 400
    default_detail: str = "The request was refused."

    def __init__(self, detail: str | None = None) -> None:
        self.detail = detail or self.default_detail
        super().__init__(self.detail)


class InteractionConfigurationError(SymfonicError):
    """The app or a deployment hook was used outside the place it works in."""

    code = "configuration_error"
    status = 500
    default_detail = "symfonic_django is misconfigured."


class InvalidRequest(SymfonicError):
    code = "invalid_request"
    status = 400
    default_detail = "The request body is malformed."


class UnknownAgent(InvalidRequest):
    default_detail = "No agent is registered under that name."


class InvalidRunInput(InvalidRequest):
    """A run's input does not fit the ``input_schema`` its agent declares."""

    default_detail = "The input does not fit the agent's input_schema."


class InvalidAnswer(SymfonicError):
    code = "invalid_answer"
    status = 400
    default_detail = "The answer does not fit this pause."


class InvalidProposal(SymfonicError):
    """An agent proposed an action whose arguments do not fit its own ``args_schema``.

    Raised by ``request_pause`` before anything is written; the turn ends
    ``turn.failed`` with this code. It is the agent's fault, not a caller's, so it
    is a turn's outcome rather than an HTTP answer; ``status`` is for a host that
    calls ``create_pause`` from a request of its own.
    """

    code = "invalid_proposal"
    status = 422
    default_detail = "The proposed action does not fit its own schema."


class PayloadTooLarge(SymfonicError):
    code = "payload_too_large"
    status = 413
    default_detail = "The answer is larger than MAX_ANSWER_BYTES."


class InvalidPauseToken(SymfonicError):
    """Bad signature, malformed, oversized, or signed with another salt."""

    code = "invalid_token"
    status = 403
    default_detail = "The pause token is not valid."


class PauseTokenExpired(SymfonicError):
    code = "expired"
    status = 410
    default_detail = "The pause token has expired."


class ScopeUnknown(SymfonicError):
    code = "scope_unknown"
    status = 403
    default_detail = "The scope this pause belongs to is no longer known."


class ScopeMismatch(SymfonicError):
    code = "scope_mismatch"
    status = 403
    default_detail = "The token belongs to another scope."


class LineageRefused(SymfonicError):
    code = "lineage_refused"
    status = 403
    default_detail = "The pause names a run this host never issued."


class PermissionDenied(SymfonicError):
    code = "permission_denied"
    status = 403
    default_detail = "You may not answer this pause."


class NotFound(SymfonicError):
    code = "not_found"
    status = 404
    default_detail = "Not found."


class AlreadyAnswered(SymfonicError):
    """Lost the single-use claim: the pause left ``pending`` before this call."""

    code = "already_answered"
    status = 409
    default_detail = "This pause has already been answered."


class AlreadyApproved(SymfonicError):
    """This reviewer's approval already counts toward the pause's quorum of approvers."""

    code = "already_approved"
    status = 409
    default_detail = "You already approved this pause; another reviewer must approve it."


class ApprovalNotCounted(SymfonicError):
    """An approval that cannot count toward a quorum: the run's own starter's. (An answer
    from someone who may not answer the pause, a bare token included, is ``PermissionDenied``.)"""

    code = "approval_not_counted"
    status = 403
    default_detail = "This approval cannot count toward the pause's quorum."


class ApprovalMismatch(SymfonicError):
    """A further approver of a pause that needs several gave another decision list than the
    approvals already counted: the quorum approves one answer, so it is refused. ``detail``
    shows the earlier list."""

    code = "approval_mismatch"
    status = 409
    default_detail = "The earlier approvals of this pause approved a different answer."


class ClaimHeld(SymfonicError):
    """Another reviewer's claim on the pause has not lapsed ("Being reviewed by alice until
    07:40:00 UTC."). A claim informs: it refuses other claims, never an answer."""

    code = "claimed"
    status = 409
    default_detail = "Another reviewer is reviewing this pause."


class ClaimNotHeld(SymfonicError):
    """A release of a claim the caller does not hold (someone else's, lapsed, or none)."""

    code = "not_claimed"
    status = 409
    default_detail = "You hold no claim on this pause."


class PauseCancelled(AlreadyAnswered):
    default_detail = "This pause was cancelled."


class PauseExpired(SymfonicError):
    code = "expired"
    status = 410
    default_detail = "This pause has expired."


class RunNotRetryable(SymfonicError):
    """Only a failed run can be sent back to the queue."""

    code = "not_retryable"
    status = 409
    default_detail = "Only a failed run can be retried."


class IdempotencyInProgress(SymfonicError):
    """A request with the same ``Idempotency-Key`` from the same caller is still being handled."""

    code = "idempotency_in_progress"
    status = 409
    default_detail = ("A request with this Idempotency-Key is still being processed; retry once "
                      "it has finished.")


class IdempotencyKeyReused(SymfonicError):
    """The ``Idempotency-Key`` was used before by this caller for another method, path or body."""

    code = "idempotency_key_reused"
    status = 422
    default_detail = ("This Idempotency-Key was already used for a different request (another "
                      "body or path); use a new key for a new request.")


class Throttled(SymfonicError):
    """Too many attempts; ``wait`` is the number of seconds after which one may try again."""

    code = "throttled"
    status = 429
    default_detail = "Too many attempts; try again later."

    def __init__(self, detail: str | None = None, *, wait: int | None = None) -> None:
        super().__init__(detail)
        self.wait = wait


class ResumeRefused(SymfonicError):
    """Answers a framework's paused state does not match: a LangGraph thread's pending
    interrupts (``agents.langgraph``), or the calls a stored Pydantic AI history or
    OpenAI Agents SDK ``RunState`` waits for (``agents.pydantic_ai``,
    ``agents.openai_agents``).

    Raised before the framework is resumed, so its state is left as it was (a
    stored state stays untaken); the continuing turn ends ``turn.failed`` with
    this code. ``reason`` says why: ``unknown_interrupt`` (never asked there, or
    no decision for it), ``used_interrupt`` (answered and consumed already),
    ``thread_finished`` (nothing is pending: the state completed), or
    ``decisions_mismatch`` (decisions that do not match the pending calls in
    number, name, arguments or allowed type, or an edit the tool refuses).
    """

    code = "resume_refused"
    status = 409
    default_detail = "The answers do not match what the graph is waiting for."
    REASONS = ("unknown_interrupt", "used_interrupt", "thread_finished", "decisions_mismatch")

    def __init__(self, detail: str | None = None, *, reason: str) -> None:
        if reason not in self.REASONS:
            raise ValueError(f"unknown ResumeRefused reason {reason!r}")
        super().__init__(detail)
        self.reason = reason


class NotRedeliverable(SymfonicError):
    """A redelivery was asked of a delivery that is still pending (or unknown)."""

    code = "not_redeliverable"
    status = 409
    default_detail = "Only a delivered or failed notification can be delivered again."


class ThreadPaused(SymfonicError):
    """A new run on a thread that is still paused on another run's pauses.

    LangGraph would take the new input and drop the pending interrupts, and
    those pauses, still answerable in the app, would then end their
    continuation in ``used_interrupt``. ``agents.langgraph`` refuses the new turn
    instead, before the graph is touched (``turn.failed`` with this code): the
    thread and the pauses stay as they were, and the run can be retried once
    they are answered.
    """

    code = "thread_paused"
    status = 409
    default_detail = "The thread is paused on pauses of another run; answer them first."


class StateConsumed(SymfonicError):
    """A paused run's stored framework state was taken already, by another continuation.

    Pydantic AI and the OpenAI Agents SDK resume from a state (a message
    history, a ``RunState`` string) and would run its approved tools again if
    handed it twice. The app hands each stored version to one continuation run
    (``agents.stored_state``); any other taker gets this refusal and no row
    changes. The continuation that took it may take it again when it is
    claimed anew (a retry, a redelivery after a crash): its fenced tools replay
    what they recorded instead of running again.
    """

    code = "state_consumed"
    status = 409
    default_detail = "The paused run's stored state was resumed already by another continuation."


class ToolCallMismatch(SymfonicError):
    """A fenced tool call reuses a call id of the run with another tool or other arguments.

    A fenced tool records its result once per root run and call id and replays
    it when the call comes again. A call id that comes back naming another
    tool, or other arguments, is not the same call: replaying would hand the
    model the first call's result and never run the second. It is refused
    instead, before anything runs (the turn fails with this code). So is a call
    id that cannot key a record (empty, or longer than 200 characters).
    """

    code = "tool_call_mismatch"
    status = 409
    default_detail = "A tool call id was reused for another call."
