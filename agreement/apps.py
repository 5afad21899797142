from django.apps import AppConfig


class AgreementConfig(AppConfig):
    name = "agreement"
    verbose_name = "Agreement"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import jobs

        jobs.register()  # reports and metric runs count against the job caps
