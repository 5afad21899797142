"""Background jobs: one thread for many jobs without a broker, one message each with one."""
import threading

from annotation.core import background


class _Conf:
    def __init__(self, eager):
        self.task_always_eager = eager


class _App:
    def __init__(self, eager):
        self.conf = _Conf(eager)


class RecordingTask:
    """Stands in for a Celery task: records ``apply`` (eager) and ``apply_async`` (broker)."""

    name = "tests.recording"

    def __init__(self, *, eager, fail_on=()):
        self.app, self.fail_on = _App(eager), set(fail_on)
        self.applied, self.queued = [], []

    def apply(self, args, throw=False):
        self.applied.append((args, threading.current_thread()))
        if args[0] in self.fail_on:
            raise RuntimeError(f"job {args[0]} failed")

    def apply_async(self, args, **options):
        self.queued.append((args, options))


def test_without_a_broker_many_jobs_run_in_turn_in_one_thread_past_a_failure():
    task = RecordingTask(eager=True, fail_on={2})
    thread = background.run_each_outside_request(task, [(1,), (2,), (3,)])
    assert thread is not None and thread is not threading.current_thread()
    assert background.wait_for_jobs(timeout=10)
    assert [args for args, _ in task.applied] == [(1,), (2,), (3,)]
    assert {t for _, t in task.applied} == {thread}
    assert not task.queued


def test_with_a_broker_each_job_is_its_own_message():
    task = RecordingTask(eager=False)
    assert background.run_each_outside_request(task, [(1,), (2,)]) is None
    assert task.queued == [((1,), {}), ((2,), {})]
    assert not task.applied


def test_nothing_to_run_starts_nothing():
    task = RecordingTask(eager=True)
    assert background.run_each_outside_request(task, []) is None
    assert background.wait_for_jobs(timeout=1)
