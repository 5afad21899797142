from django.apps import AppConfig
from django.db.models.signals import post_migrate


class StudiesConfig(AppConfig):
    name = "studies"
    verbose_name = "Studies"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import models, rules  # noqa: F401  (registers the permission rules)

        # After a migrate or a flush (a transactional test) the default study must exist
        # before any row defaults to it, and a remembered id may be gone.
        post_migrate.connect(_default_study_after_migrate, sender=self)


def _default_study_after_migrate(sender, using="default", **kwargs) -> None:
    from .models import default_study_forget, default_study_id

    default_study_forget()
    default_study_id()
