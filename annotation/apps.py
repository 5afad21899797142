from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Deployment checks, and the dataset-building HIT types (judging registers its own the
        # same way): importing registers them, after every app's models are loaded.
        from annotation.core import checks  # noqa: F401
        from annotation.pipeline import hit_types  # noqa: F401

        # The marketplaces (``annotation.core.marketplaces``): importing registers them, and
        # the providers' tasks hear when the engine blocks a worker.
        from annotation.providers import mturk, prolific, tasks  # noqa: F401
