"""System checks: a misconfiguration is an Error at startup, never silent (rule C12).

Stable ids, each with a hint:

- ``symfonic_django.E001`` unknown key in ``SYMFONIC`` (accepted-but-inert)
- ``symfonic_django.E002`` a dotted path that does not import
- ``symfonic_django.E003`` a value of the wrong type or out of range
- ``symfonic_django.E004`` a Celery task of this app without acks_late / reject_on_worker_lost
- ``symfonic_django.W001`` the in-memory channel layer with a worker in another process
- ``symfonic_django.W002`` SQLite as the database of a deployment (``check --deploy``)
- ``symfonic_django.W003`` no Celery broker configured: runs would stay ``queued``
- ``symfonic_django.W004`` ``CELERY_BROKER_URL`` is set but the current Celery app does not read it
- ``symfonic_django.W005`` the API is mounted, but DRF's schema class cannot serve its schema
- ``symfonic_django.W006`` ``DEBUG`` on with a real database (``check --deploy``)
- ``symfonic_django.W007`` the API's rate limits counted in a per-process cache (or none)
  while the deployment runs several processes
- ``symfonic_django.W008`` DRF's ``NUM_PROXIES`` unset: a client names its own address
  in ``X-Forwarded-For`` and gets a fresh ``resume/`` budget each time

Notifications (``SYMFONIC["NOTIFY"]``, ``notifications/``) have ids of their own, from 101:

- ``symfonic_django.E101`` a ``NOTIFY`` value of the wrong type, out of range, or unknown
- ``symfonic_django.E102`` a webhook endpoint that cannot be delivered to (URL, secret,
  event types, a name used twice)
- ``symfonic_django.W101`` notifications configured without ``SITE_URL``: no usable link
- ``symfonic_django.W102`` reviewer emails configured, but the email backend drops them
- ``symfonic_django.W103`` reviewer emails sent from Django's placeholder sender
"""


from .deployment import (
    CELERY_WIRING,
    check_celery,
    check_celery_broker,
    check_channel_layer,
    check_debug_with_a_real_database,
    check_notification_delivery,
    check_num_proxies,
    check_schema_class,
    check_sqlite_in_production,
    check_throttle_cache,
)
from .settings import check_api_limits, check_notifications, check_settings

__all__ = ["CELERY_WIRING", "check_api_limits", "check_celery", "check_celery_broker",
           "check_channel_layer", "check_debug_with_a_real_database", "check_notification_delivery",
           "check_notifications", "check_num_proxies", "check_schema_class", "check_settings",
           "check_sqlite_in_production", "check_throttle_cache"]
