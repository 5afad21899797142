from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks, hits  # noqa: F401  deployment checks; the engine's HIT types
