from django.apps import AppConfig


def _reliability_panel(worker):
    """The worker page's estimate, imported on first use: its fit (crowd-kit, SciPy) must not
    load in every web worker at boot (``tests/test_gunicorn_config.py``)."""
    from .services.worker_reliability import reliability_panel

    return reliability_panel(worker)


class AgreementConfig(AppConfig):
    name = "agreement"
    verbose_name = "Agreement"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.engine import worker_panels

        from . import jobs

        jobs.register()  # reports and metric runs count against the job caps
        worker_panels.register(_reliability_panel)  # the estimate on the admin's worker page
