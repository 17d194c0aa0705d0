"""The tests' ASGI application, ``tests.testapp.asgi:application`` (HTTP and websocket),
which the real-process suites serve with daphne."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402
from django.urls import re_path  # noqa: E402

from symfonic_django.consumers import UnknownStreamConsumer  # noqa: E402
from symfonic_django.routing import websocket_urlpatterns  # noqa: E402

if settings.DEBUG:
    # daphne serves no static files: the admin's pages need their CSS and JS.
    from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

    django_asgi_app = ASGIStaticFilesHandler(django_asgi_app)

application = ProtocolTypeRouter({
    "http": django_asgi_app,
    # Any other path is closed 4404 rather than answered 500.
    "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter([
        *websocket_urlpatterns, re_path(r"", UnknownStreamConsumer.as_asgi())]))),
})
