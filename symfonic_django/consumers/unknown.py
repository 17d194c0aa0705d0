"""The websocket of a path no route serves."""

from __future__ import annotations

from channels.generic.websocket import AsyncWebsocketConsumer

from .access import CLOSE_NOT_FOUND


class UnknownStreamConsumer(AsyncWebsocketConsumer):
    """A websocket to a path no route serves: accepted, then closed 4404, as an unknown run.

    Without a route Channels raises, and the server answers the handshake with a 500
    and logs a traceback for every such request anyone sends.
    """

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=CLOSE_NOT_FOUND)
