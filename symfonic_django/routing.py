"""Websocket routes: include ``websocket_urlpatterns`` in the project's URLRouter.

Every path under ``ws/symfonic/`` is the app's: one that names no stream is closed
4404. A project that wants the same for its other paths ends its own routes with
``re_path(r"", UnknownStreamConsumer.as_asgi())``, as the example project does.
"""

from django.urls import path, re_path

from .consumers import RunStreamConsumer, UnknownStreamConsumer

websocket_urlpatterns = [
    # Channels routes consumers with Django's ``path()`` (its documented way), but
    # django-stubs type ``path()``'s view as an HTTP view only, not an ASGI application.
    path("ws/symfonic/runs/<str:run_id>/", RunStreamConsumer.as_asgi()),  # type: ignore[arg-type]
    re_path(r"^ws/symfonic/", UnknownStreamConsumer.as_asgi()),  # type: ignore[arg-type]
]
