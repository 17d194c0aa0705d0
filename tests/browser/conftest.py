"""The browser tests' shared fixtures: daphne serving the example project on this test's
database (``server``) and its environment, defined in ``test_admin_browser``."""

from .test_admin_browser import server, service_env

__all__ = ["server", "service_env"]
