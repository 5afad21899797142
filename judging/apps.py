from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "Judging"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import hits  # noqa: F401  registers the rating HIT types
        from .judges import jobs

        jobs.register()  # judge runs count against the job caps
