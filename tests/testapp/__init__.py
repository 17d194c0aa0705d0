"""The tests' own Django app: its tenants, reviewers and refunds, its agents, scope
routes, URLs, ASGI application and Celery app (``tests.settings`` installs it).

It is a small project of the tests' own, as a project using symfonic_django writes
one; the example project is tested on its own in ``tests/example``.
"""

# As Django's Celery wiring has a project do: its app is the current one once Django loads
# this app (tests/settings.py lists it after the example's, whose package does the same).
from .celery import app as celery_app

__all__ = ["celery_app"]
