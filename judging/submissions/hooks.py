"""Submissions follow their judge run's end through the judge layer's hook (subscribed at
app-ready by ``judging.apps``): the judge layer never imports the submissions built on it."""
from ..judges.hooks import on_run_ended


def _run_ended(run, *, finished: bool, why: str) -> None:
    from .services import submission_run_finished, submission_run_stopped

    if finished:
        submission_run_finished(run)
    else:
        submission_run_stopped(run, why)


def subscribe() -> None:
    on_run_ended(_run_ended)
