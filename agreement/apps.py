from django.apps import AppConfig


class AgreementConfig(AppConfig):
    name = "agreement"
    verbose_name = "Agreement"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.engine import worker_panels

        from . import jobs
        from .services.worker_reliability import reliability_panel

        jobs.register()  # reports and metric runs count against the job caps
        worker_panels.register(reliability_panel)  # the estimate on the admin's worker page
