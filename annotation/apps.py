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

        # The marketplaces (``annotation.core.marketplaces``): every ``providers/<name>/``
        # subpackage registers its provider, and the providers' tasks hear when the engine
        # blocks a worker.
        from annotation.providers import load_marketplaces, tasks  # noqa: F401

        load_marketplaces()
