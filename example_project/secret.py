"""The example's server and workers refuse to start without a key of their own."""

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

MISSING = ("Set SECRET_KEY in the environment: the example project refuses to start with its "
           "built-in key outside the demo (`make demo` sets SYMFONIC_DEMO=1 for you).")


def require_secret_key() -> None:
    """Raise ``ImproperlyConfigured`` unless the settings have a ``SECRET_KEY``.

    Outside the demo the settings give none unless the environment does
    (``settings.py``); a server or a worker without one would sign pause tokens
    and sessions with nothing it could trust.
    """
    try:
        settings.SECRET_KEY  # noqa: B018  # Django refuses an empty key when it is read
    except ImproperlyConfigured:
        raise ImproperlyConfigured(MISSING) from None
