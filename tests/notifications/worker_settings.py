"""Settings of the Celery workers the end-to-end notification test starts.

``tests.settings`` with the test's ``SYMFONIC["NOTIFY"]`` (its webhook
endpoints, short backoff), given as JSON in ``SYMFONIC_TEST_NOTIFY``; the
SMTP server comes from ``EMAIL_BACKEND``, ``EMAIL_HOST`` and ``EMAIL_PORT``,
which the suite's settings read from the environment.
"""

import json
import os

from tests.settings import *  # noqa: F403
from tests.settings import SYMFONIC

SYMFONIC = {**SYMFONIC, "NOTIFY": json.loads(os.environ["SYMFONIC_TEST_NOTIFY"])}
