"""The job queue's plumbing: without a broker a process runs its jobs one at a time in one
thread, the asking call returning at once; a job still queued when the process exits records
why; a refusal by the caps is a 429 with Retry-After in every API; admission outside the job's
transaction is a programming error. (The caps under parallel requests are tested per entry
point: tests/agreement/test_report_queue.py, tests/judging/judges/test_run_queue.py.)"""
import threading
import time

import pytest
from django.db import transaction
from rest_framework.test import APIRequestFactory
from rest_framework.views import APIView

from annotation.core import background, jobs
from tests.annotation.test_background import _App


class TimedTask:
    """Stands in for a Celery task: each job sleeps a little and records when it ran."""

    name = "tests.timed"

    def __init__(self, *, seconds=0.15):
        self.app, self.seconds, self.spans = _App(True), seconds, []

    def apply(self, args, throw=False):
        start = time.monotonic()
        time.sleep(self.seconds)
        self.spans.append((args[0], start, time.monotonic(), threading.current_thread()))


def test_without_a_broker_jobs_run_one_at_a_time_outside_the_caller():
    task = TimedTask()
    asked = time.monotonic()
    threads = {background.run_outside_request(task, (i,)) for i in range(4)}
    assert time.monotonic() - asked < 0.1  # the caller did not wait for any of them
    assert background.wait_for_jobs(timeout=10)
    spans = sorted(task.spans, key=lambda s: s[1])
    assert [s[0] for s in spans] == [0, 1, 2, 3]  # in the order asked
    for (_, _, end, _), (_, start, _, _) in zip(spans, spans[1:], strict=False):
        assert start >= end  # never two at once
    assert len({s[3] for s in spans}) == 1 and spans[0][3] in threads
    assert threading.current_thread() not in {s[3] for s in spans}


def test_a_job_still_queued_at_exit_records_why():
    gate, recorded = threading.Event(), []

    class Held(TimedTask):
        def apply(self, args, throw=False):
            gate.wait(10)

    task = Held()
    background.run_outside_request(task, (1,), on_interrupted=lambda why: recorded.append((1, why)))
    background.run_outside_request(task, (2,), on_interrupted=lambda why: recorded.append((2, why)))
    time.sleep(0.05)
    background._interrupt_unfinished()  # what the process runs at exit
    gate.set()
    assert background.wait_for_jobs(timeout=10)
    assert sorted(n for n, _ in recorded) == [1, 2]  # the running one and the queued one
    assert all(why.startswith("Interrupted") for _, why in recorded)


class _Starts(APIView):
    permission_classes, authentication_classes = [], []

    def post(self, request):
        raise jobs.JobsBusy("Not started: the server is busy.", 30)


def test_a_refusal_is_a_429_with_retry_after():
    answer = _Starts.as_view()(APIRequestFactory().post("/x/"))
    assert answer.status_code == 429 and answer["Retry-After"] == "30"
    assert answer.data["detail"].startswith("Not started: the server is busy.")


@pytest.mark.django_db(transaction=True)  # no test transaction around it
def test_admission_belongs_inside_the_jobs_transaction():
    with pytest.raises(RuntimeError, match="inside the transaction"):
        jobs.admit("report", owner="ann", fingerprint=jobs.fingerprint({"seed": 1}))
    with transaction.atomic():
        assert jobs.admit("report", owner="ann", fingerprint=jobs.fingerprint({"seed": 1})) is None


def test_fingerprints_ignore_key_order_and_tell_parameters_apart():
    assert jobs.fingerprint({"a": 1, "b": [1, 2]}) == jobs.fingerprint({"b": [1, 2], "a": 1})
    assert jobs.fingerprint({"a": 1}) != jobs.fingerprint({"a": 2})
