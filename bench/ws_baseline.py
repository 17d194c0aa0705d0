"""The baselines of the websocket benchmarks: bare Channels, no database.

* ``BareConsumer`` joins the group its URL names (``/ws/bench/<group>/``),
  says ``{"type": "ready"}`` once it is in, and sends every ``bench.event`` it
  is handed as it came. Channels' ``dispatch`` hops to the database thread
  before every message (``close_old_connections``); a consumer with no
  database need not, and neither this one nor the app's doorbell handler does,
  so this is bare fan-out at its fastest. ``DefaultDispatchConsumer``
  (``/ws/bench-default/<group>/``) keeps the hop, as a consumer written
  without that care would. Served by its own daphne:
  ``daphne bench.ws_baseline:application``.
* ``bench.ws_ping`` and ``bench.ws_burst`` are bare Celery tasks that
  ``group_send`` one message, or ``count`` messages, to such a group. The
  benchmark's workers load them with ``-I bench.ws_baseline``.

Both use the channel-layer alias ``bench`` of ``bench/ws_settings.py``.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.ws_settings")

from django.core.asgi import get_asgi_application  # noqa: E402

get_asgi_application()  # set Django up before anything imports models

from asgiref.sync import async_to_sync  # noqa: E402
from celery import shared_task  # noqa: E402
from channels.generic.websocket import AsyncWebsocketConsumer  # noqa: E402
from channels.layers import get_channel_layer  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.urls import path  # noqa: E402

ALIAS = "bench"


class BareConsumer(AsyncWebsocketConsumer):
    channel_layer_alias = ALIAS

    async def connect(self) -> None:
        self.group = "bench." + self.scope["url_route"]["kwargs"]["group"]
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.send(text_data='{"seq": 0, "type": "ready"}')

    async def bench_event(self, message: dict) -> None:
        await self.send(text_data=message["text"])

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(self.group, self.channel_name)

    async def dispatch(self, message: dict) -> None:
        if message["type"] == "bench.event":
            await self.bench_event(message)
        else:
            await super().dispatch(message)


class DefaultDispatchConsumer(BareConsumer):
    dispatch = AsyncWebsocketConsumer.dispatch


application = ProtocolTypeRouter({"websocket": AllowedHostsOriginValidator(URLRouter([
    path("ws/bench/<str:group>/", BareConsumer.as_asgi()),
    path("ws/bench-default/<str:group>/", DefaultDispatchConsumer.as_asgi()),
]))})


def event(seq: int, run_id: str, type: str = "message.delta", **data: object) -> str:
    """A message shaped and sized like the app's events."""
    ts = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return json.dumps({"seq": seq, "type": type, "run_id": run_id, "root_run_id": run_id,
                       "ts": ts, "data": data})


@shared_task(name="bench.ws_ping", ignore_result=True)
def ping(group: str) -> None:
    layer = get_channel_layer(ALIAS)
    async_to_sync(layer.group_send)("bench." + group, {
        "type": "bench.event", "text": event(1, group, "turn.started", agent="bench",
                                             resumed_from_pause=None)})


@shared_task(name="bench.ws_burst", ignore_result=True)
def burst(group: str, count: int) -> None:
    layer = get_channel_layer(ALIAS)

    async def send_all() -> None:
        for seq in range(1, count + 1):
            await layer.group_send("bench." + group, {
                "type": "bench.event", "text": event(seq, group, text=f"{seq} ")})

    async_to_sync(send_all)()
