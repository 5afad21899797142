"""Judge runs as the admission gate (``annotation.core.jobs``) sees them: counted from their own
rows while pending or running; two runs are the same job when the judge and the items are."""
from __future__ import annotations

from annotation.core import jobs

from .models import JudgeRun, JudgeUnit

JUDGE_RUN = "judge_run"
ACTIVE = (JudgeRun.Status.PENDING, JudgeRun.Status.RUNNING)


def judge_run_fingerprint(judge_id: int, item_uuids) -> str:
    return jobs.fingerprint(JUDGE_RUN, judge_id, sorted({str(u) for u in item_uuids}))


def run_fingerprint(run: JudgeRun) -> str:
    """A recorded run's: its items are its units' (read only when owner and kind match)."""
    items = JudgeUnit.objects.filter(run_id=run.pk).values_list("item", flat=True)
    return judge_run_fingerprint(run.judge_id, items)


def _active_runs():
    for run in JudgeRun.objects.filter(status__in=ACTIVE).only("pk", "created_by", "judge_id"):
        yield jobs.ActiveJob(JUDGE_RUN, run.created_by, run, lambda run=run: run_fingerprint(run))


def register() -> None:
    jobs.register(JUDGE_RUN, _active_runs)
