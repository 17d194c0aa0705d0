from django.apps import AppConfig


class SymfonicDjangoConfig(AppConfig):
    name = "symfonic_django"
    verbose_name = "Agent pauses"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the system checks)
