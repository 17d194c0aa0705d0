"""The example's Celery app: ``celery -A example_project worker``."""

import os

from celery import Celery
from celery.signals import worker_init
from django.core.exceptions import ImproperlyConfigured

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "example_project.settings")

from example_project.secret import require_secret_key  # noqa: E402

app = Celery("example_project")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["symfonic_django"])


@worker_init.connect
def refuse_to_work_without_a_key(**kwargs: object) -> None:
    # Here, not at import: every manage.py command imports this app (Django's documented
    # Celery wiring), and most of them sign nothing. Celery logs and ignores what a signal
    # handler raises, so the refusal exits the worker.
    try:
        require_secret_key()
    except ImproperlyConfigured as refusal:
        raise SystemExit(f"ImproperlyConfigured: {refusal}") from None
