from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SymfonicDjangoConfig(AppConfig):
    name = "symfonic_django"
    verbose_name = _("Agent pauses")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Importing them registers the system checks and connects the notifications'
        # signal receivers.
        from . import checks, notifications  # noqa: F401
