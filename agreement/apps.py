from django.apps import AppConfig


def _reliability_panel(worker):
    """The worker page's estimate, imported on first use: its fit (crowd-kit, SciPy) must not
    load in every web worker at boot (``tests/test_gunicorn_config.py``)."""
    from .services.worker_reliability import reliability_panel

    return reliability_panel(worker)


def _model_verdicts(model: str):
    """A board aggregator (``judging.vote_aggregation``): each item's label under ``model``,
    fitted to the board's votes; imported on first use, like the panel."""
    def item_labels(votes):
        from .statistics.worker_models import fit_worker_model

        return fit_worker_model(votes, model).predicted()
    return item_labels


class AgreementConfig(AppConfig):
    name = "agreement"
    verbose_name = "Agreement"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from annotation.engine import worker_panels
        from judging import vote_aggregation

        from . import jobs
        from .reports.params import AGGREGATIONS, MAJORITY

        jobs.register()  # reports and metric runs count against the job caps
        worker_panels.register(_reliability_panel)  # the estimate on the admin's worker page
        for model in AGGREGATIONS:  # the reliability models, as a choice on boards too
            if model != MAJORITY:
                vote_aggregation.register(model, _model_verdicts(model))
