"""Settings of the websocket benchmarks: ``tests.settings`` plus the baseline's own layer.

The baseline (``bench/ws_baseline.py``) talks through the channel-layer alias
``bench``: the same Redis as the app's ``default`` layer, with a capacity and
an expiry that never drop a message (channels_redis drops messages over
capacity, and a whole queue 60 s after its last send), so the baseline is bare
Channels at its best. The app keeps the deployed ``default`` layer, drops and all.
"""

from tests.settings import *  # noqa: F403
from tests.settings import CHANNEL_LAYERS

CHANNEL_LAYERS = {
    **CHANNEL_LAYERS,
    "bench": {**CHANNEL_LAYERS["default"],
              "CONFIG": {**CHANNEL_LAYERS["default"].get("CONFIG", {}), "capacity": 100_000,
                         "expiry": 600}},
}
