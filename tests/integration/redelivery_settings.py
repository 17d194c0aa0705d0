"""Worker settings for the redelivery tests: ``tests.settings`` with a short visibility timeout.

On Redis, a message a worker took with ``acks_late`` but never acknowledged
(the worker was SIGKILLed) waits in the broker's ``unacked`` set until its
visibility timeout passes, one hour by default. These workers restore such
messages after a second, so a test can watch the redelivery happen.
"""

from tests.settings import *  # noqa: F403

CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": 1,
    "unacked_restore_interval": 1,
    "unacked_restore_throttle": 1,
}
