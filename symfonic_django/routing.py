"""Websocket routes: include ``websocket_urlpatterns`` in the project's URLRouter."""

from django.urls import path

from .consumers import RunStreamConsumer

websocket_urlpatterns = [
    path("ws/symfonic/runs/<str:run_id>/", RunStreamConsumer.as_asgi()),
]
