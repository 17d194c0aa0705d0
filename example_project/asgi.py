"""ASGI entry point: ``example_project.asgi:application`` (HTTP; websockets come later)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "example_project.settings")
django_asgi_app = get_asgi_application()


from example_project.embedded import start_embedded_worker_if_needed  # noqa: E402

start_embedded_worker_if_needed()

application = django_asgi_app
