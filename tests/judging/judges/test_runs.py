"""Run lifecycle: cost estimate, hard budget cap, re-runs and resumes that never pay twice,
cancellation, and concurrent lanes on a real database."""
import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from decimal import Decimal

import pytest
from django.db import connection

from judging.judges.calls import close_clients
from judging.judges.models import JudgeCall, JudgeRun, JudgeUnit
from judging.judges.services import (
    judge_estimate,
    judge_run_cancel,
    judge_run_execute,
    judge_run_resume,
    judge_run_start,
)
from judging.models import Judgment
from tests.judging.judges.conftest import (
    VERDICT,
    make_comparisons,
    make_judge,
)
from tests.support.fake_openai import Reply

pytestmark = pytest.mark.django_db


def _keys(server):
    return [r.headers.get("idempotency-key") for r in server.requests]


def test_estimate_before_and_after_a_run(server):
    comparisons = make_comparisons(3)
    judge = make_judge(server, expected_output_tokens=100)
    server.responder = lambda body: VERDICT
    estimate = judge_estimate(judge=judge, item_uuids=[c.uuid for c in comparisons])
    assert (estimate.units, estimate.calls, estimate.cached_calls) == (6, 6, 0)
    assert estimate.completion_tokens == 600 and estimate.prompt_tokens > 6 * 300
    assert estimate.cost == Decimal(str(round(
        estimate.prompt_tokens / 1000 * 0.01 + 600 / 1000 * 0.03, 6)))
    assert server.call_count == 0  # estimating never calls the provider
    run = judge_run_start(judge=judge, item_uuids=[c.uuid for c in comparisons], dispatch=False)
    assert run.estimated_cost == estimate.cost
    judge_run_execute(run)
    again = judge_estimate(judge=judge, item_uuids=[c.uuid for c in comparisons])
    assert (again.calls, again.cached_calls, again.cost) == (0, 6, Decimal("0"))


def test_second_run_of_the_same_judge_makes_no_new_calls(server):
    comparisons = make_comparisons(4)
    judge = make_judge(server)
    server.responder = lambda body: VERDICT
    first = judge_run_execute(judge_run_start(
        judge=judge, item_uuids=[c.uuid for c in comparisons], dispatch=False))
    assert first.calls_made == 8 and server.call_count == 8
    second = judge_run_execute(judge_run_start(
        judge=judge, item_uuids=[c.uuid for c in comparisons], dispatch=False))
    assert server.call_count == 8
    assert (second.status, second.calls_made, second.calls_cached, second.cost) == (
        JudgeRun.Status.DONE, 0, 8, Decimal("0"))
    assert Judgment.objects.filter(source=judge.name).count() == 4  # replaced, not duplicated


def test_new_judge_version_pays_again(server):
    comparisons = make_comparisons(1)
    judge = make_judge(server)
    server.responder = lambda body: VERDICT
    judge_run_execute(judge_run_start(judge=judge, item_uuids=[comparisons[0].uuid],
                                      dispatch=False))
    judge.pk, judge.version, judge.uuid = None, "2", None
    import uuid
    judge.uuid = uuid.uuid4()
    judge.save()
    judge_run_execute(judge_run_start(judge=judge, item_uuids=[comparisons[0].uuid],
                                      dispatch=False))
    assert server.call_count == 4
    assert Judgment.objects.filter(source=judge.name).count() == 2  # one per version


def test_budget_cap_stops_cleanly_and_resume_continues_without_repeats(server):
    comparisons = make_comparisons(5)
    judge = make_judge(server, max_tokens=100)
    server.responder = lambda body: VERDICT
    # one call reserves about 0.0035 (≈ 1/3 prompt chars × 0.01/1k + 100 × 0.03/1k)
    run = judge_run_start(judge=judge, item_uuids=[c.uuid for c in comparisons],
                          budget=Decimal("0.012"), dispatch=False)
    run = judge_run_execute(run)
    assert run.status == JudgeRun.Status.BUDGET_STOPPED
    assert 0 < run.calls_made < 10 and server.call_count == run.calls_made
    assert run.cost <= run.budget and run.reserved == 0
    assert run.units.filter(status=JudgeUnit.Status.PENDING).exists()
    assert not run.units.filter(status=JudgeUnit.Status.RUNNING).exists()
    assert not JudgeCall.objects.filter(status__in=["in_flight", "failed"]).exists()
    run = judge_run_execute(judge_run_resume(run, budget=Decimal("1"), dispatch=False))
    assert run.status == JudgeRun.Status.DONE and run.units_done == 10
    keys = _keys(server)
    assert len(keys) == 10 and len(set(keys)) == 10  # every call made exactly once
    assert Judgment.objects.count() == 5


def test_zero_budget_makes_no_call(server):
    comparisons = make_comparisons(1)
    run = judge_run_execute(judge_run_start(judge=make_judge(server), budget=Decimal("0"),
                                            item_uuids=[comparisons[0].uuid], dispatch=False))
    assert run.status == JudgeRun.Status.BUDGET_STOPPED and server.call_count == 0


def test_cancelled_run_takes_no_more_work(server):
    comparisons = make_comparisons(2)
    run = judge_run_start(judge=make_judge(server), item_uuids=[c.uuid for c in comparisons],
                          dispatch=False)
    run = judge_run_cancel(run)
    run = judge_run_execute(run)
    assert run.status == JudgeRun.Status.CANCELLED and server.call_count == 0


def test_bad_items_are_rejected_and_nothing_is_written(server):
    import uuid

    from django.core.exceptions import ValidationError

    comparisons = make_comparisons(1)
    missing = uuid.uuid4()
    with pytest.raises(ValidationError, match=str(missing)):
        judge_run_start(judge=make_judge(server), item_uuids=[comparisons[0].uuid, missing],
                        dispatch=False)
    assert not JudgeRun.objects.exists() and not JudgeUnit.objects.exists()


def test_resume_after_a_crash_between_calls_repeats_no_call(server):
    """A lane that dies mid-run leaves units 'running'; resume re-opens them and the
    idempotency keys turn every call already answered into a free cache hit."""
    comparisons = make_comparisons(3)
    judge = make_judge(server)
    server.responder = lambda body: VERDICT
    run = judge_run_start(judge=judge, item_uuids=[c.uuid for c in comparisons], dispatch=False)
    judge_run_execute(run)
    # simulate the crash: the lane died after its calls but before recording the units
    JudgeUnit.objects.filter(run=run).update(status="running", result={})
    JudgeRun.objects.filter(pk=run.pk).update(status="running", units_done=0)
    run = judge_run_execute(judge_run_resume(run, dispatch=False))
    assert run.status == JudgeRun.Status.DONE and run.units_done == 6
    assert server.call_count == 6 and len(set(_keys(server))) == 6


@pytest.mark.django_db(transaction=True)
def test_concurrent_lanes_share_the_work_without_duplicates(server):
    comparisons = make_comparisons(12)
    judge = make_judge(server, concurrency=6, max_retries=0, timeout_s=60)
    # Lanes overlap: the first request is answered only once a second one is in flight, which
    # a single lane never sends (it would wait out the barrier and fail). No wall-clock bound,
    # so a loaded machine cannot fail it.
    # (Lane threads share the database on PostgreSQL only; elsewhere one lane works the run.)
    overlap, first_two = threading.Barrier(2, timeout=30), itertools.count()
    lanes_share = connection.vendor == "postgresql"

    def responder(body):
        if lanes_share and next(first_two) < 2:
            try:
                overlap.wait()
            except threading.BrokenBarrierError:
                pass
        return VERDICT

    server.responder = responder
    run = judge_run_start(judge=judge, item_uuids=[c.uuid for c in comparisons], dispatch=False)
    run = judge_run_execute(run)
    assert run.status == JudgeRun.Status.DONE and run.units_done == 24
    assert server.call_count == 24 and len(set(_keys(server))) == 24
    assert Judgment.objects.count() == 12
    if lanes_share:
        assert not overlap.broken  # two requests were in flight at once


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_lanes_split_over_processes_share_the_work_without_duplicates(server):
    comparisons = make_comparisons(10)
    judge = make_judge(server, concurrency=4)
    server.latency_s = 0.05
    server.responder = lambda body: VERDICT
    run = judge_run_start(judge=judge, item_uuids=[c.uuid for c in comparisons], dispatch=False)
    seen = []
    run = judge_run_execute(run, processes=2, on_progress=lambda r: seen.append(r.units_done),
                            poll_s=0.05)
    assert run.status == JudgeRun.Status.DONE and run.units_done == 20
    assert server.call_count == 20 and len(set(_keys(server))) == 20
    assert JudgeCall.objects.filter(run=run).count() == 20
    assert Judgment.objects.filter(annotator=judge.ident).count() == 10
    assert seen[-1] == 20 and seen == sorted(seen)  # progress polled while the children work


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_resume_after_killed_worker_process_never_repeats_an_answered_call(server, tmp_path):
    """SIGKILL a real worker process mid-run (one request hanging on the server), resume:
    no request that was answered before the kill is ever sent again."""
    if connection.vendor != "postgresql":
        pytest.skip("a second process needs a shared database server (TEST_DATABASE_URL)")
    comparisons = make_comparisons(4)
    judge = make_judge(server, timeout_s=1, max_retries=0, backoff_max_s=0)
    answered = []

    def responder(body):
        if len(answered) == 3:
            answered.append("hang")
            return Reply.slow(VERDICT, delay_s=30)  # the worker is killed while waiting
        answered.append("ok")
        return Reply.ok(VERDICT)

    server.responder = responder
    run = judge_run_start(judge=judge, item_uuids=[c.uuid for c in comparisons], dispatch=False)
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings_test",
           "DATABASE_URL": _database_url(), "TEST_DATABASE_URL": _database_url()}
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "judge_run", "--resume", str(run.uuid), "--concurrency",
         "1", "--quiet"], env=env, cwd=os.getcwd(), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while server.call_count < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.call_count == 4, worker.stderr.read().decode()[-2000:]
    worker.send_signal(signal.SIGKILL)
    worker.wait()
    answered_keys = _keys(server)[:3]
    hung_key = _keys(server)[3]
    assert JudgeCall.objects.get(idempotency_key=hung_key).status == "in_flight"
    server.responder = lambda body: VERDICT
    time.sleep(3.1)  # the dead worker's lease on the hung call expires
    close_clients()
    run = judge_run_execute(judge_run_resume(run, dispatch=False))
    assert run.status == JudgeRun.Status.DONE and run.units_done == 8
    keys = _keys(server)
    assert all(keys.count(k) == 1 for k in answered_keys)  # zero answered calls repeated
    assert keys.count(hung_key) == 2  # the unanswered one is sent again, once
    assert len(keys) == 9 and len(set(keys)) == 8
    assert Judgment.objects.count() == 4


def _database_url():
    s = connection.settings_dict
    return f"postgres://{s['USER']}@{s['HOST']}:{s['PORT']}/{s['NAME']}"
