"""Websocket routes: include ``websocket_urlpatterns`` in the project's URLRouter."""

from django.urls import path

from .consumers import RunStreamConsumer

websocket_urlpatterns = [
    # Channels routes consumers with Django's ``path()`` (its documented way), but
    # django-stubs type ``path()``'s view as an HTTP view only, not an ASGI application.
    path("ws/symfonic/runs/<str:run_id>/", RunStreamConsumer.as_asgi()),  # type: ignore[arg-type]
]
