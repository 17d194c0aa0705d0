"""The tests' Celery app: ``celery -A tests.testapp worker`` (the real-process suites)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

app = Celery("tests.testapp")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["symfonic_django"])
