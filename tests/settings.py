"""Test settings: the example project plus the test agents in ``tests.agents``."""

from example_project.settings import *  # noqa: F403
from example_project.settings import SYMFONIC

SYMFONIC = {
    **SYMFONIC,
    "AGENTS": {
        **SYMFONIC["AGENTS"],
        "echo": "tests.agents.echo_agent",
        "question": "tests.agents.question_agent",
        "siblings": "tests.agents.siblings_agent",
        "boom": "tests.agents.boom_agent",
        "slow": "tests.agents.slow_agent",
        "forged": "tests.agents.forged_binding_agent",
        "noop": "tests.agents.noop_agent",
    },
}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
