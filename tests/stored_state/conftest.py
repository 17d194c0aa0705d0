from typing import Any

import pytest

from . import agents


@pytest.fixture(autouse=True)
def stored_state_agents(settings: Any, tenants: Any) -> None:
    settings.SYMFONIC = {**settings.SYMFONIC, "AGENTS": {
        **settings.SYMFONIC["AGENTS"],
        "stateful": "tests.stored_state.agents.stateful_agent",
        "other_framework": "tests.stored_state.agents.other_framework_agent"}}
    agents.BODY_RUNS.clear()
