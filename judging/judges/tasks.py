"""Celery tasks for judge runs: each takes ids, calls one service, and is safe to run twice.

Fan-out: ``judge_run_dispatch`` starts ``judge.concurrency`` lane tasks; each lane claims units
(comparison × ordering) in small batches until none is left, so at most ``concurrency`` calls of a
run are in flight across all workers, and the queue is balanced dynamically. A lane killed with
its worker is re-delivered (acks_late + reject_on_worker_lost); its calls are protected by their
idempotency keys and leases, and ``judge_run_resume`` re-opens units left running.
Retries with exponential backoff and jitter on 429/5xx/timeouts happen inside the provider
client (``annotation.core.clients.llm``) for each call; the RPM/TPM limits are shared by
every worker process through Redis (``annotation.core.rate_limit``) when it is configured.
"""
from celery import shared_task

from .models import JudgeRun
from .services import judge_run_begin, judge_run_work


@shared_task(name="judging.judges.dispatch")
def judge_run_dispatch(run_id: int) -> int:
    run = JudgeRun.objects.select_related("judge").get(pk=run_id)
    if not judge_run_begin(run):
        return 0
    lanes = max(1, run.judge.concurrency)
    for _ in range(lanes):
        judge_run_lane.delay(run_id)
    return lanes


@shared_task(name="judging.judges.lane", acks_late=True)
def judge_run_lane(run_id: int) -> int:
    return judge_run_work(run_id)
