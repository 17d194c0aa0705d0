"""The event types a notification may be of, and those that may carry a pause's token."""

PAUSE_REQUESTED = "pause.requested"
PAUSE_ANSWERED = "pause.answered"
PAUSE_EXPIRED = "pause.expired"
RUN_COMPLETED = "run.completed"
RUN_FAILED = "run.failed"
PAUSE_REMINDER = "pause.reminder"
PAUSE_ESCALATED = "pause.escalated"
#: Every event type a webhook endpoint may take (its ``EVENTS``; all by default).
EVENT_TYPES = (PAUSE_REQUESTED, PAUSE_ANSWERED, PAUSE_EXPIRED, RUN_COMPLETED, RUN_FAILED,
               PAUSE_REMINDER, PAUSE_ESCALATED)
#: The events that may carry a pause's token (to an endpoint or an email that asks):
#: their emails go to the reviewers of the pause's scope, who may answer it.
TOKEN_EVENTS = frozenset({PAUSE_REQUESTED, PAUSE_REMINDER})
