"""A real Celery worker process, over real Redis and PostgreSQL, runs a judge run and a metrics run.

Why: every other test runs Celery eagerly, in-process. Here the test process only *sends* tasks to
Redis; a separate ``celery worker`` subprocess (``-Q default,judges,metrics,providers``, the
production queues) consumes them and writes to the same PostgreSQL test database, while the test
only polls the database. Proof that the worker did the work: in this process the work functions
are replaced by ones that fail, and the sockets that called the fake OpenAI server belong to the
worker's pid (read from ``/proc``), not to ours.

Needs ``TEST_REDIS_URL`` and ``TEST_DATABASE_URL`` (PostgreSQL): ``eval "$(scripts/services.sh
start)"``. The worker uses its own Redis database index (``REDIS_DB`` below) so it never steals
tasks from other workers sharing the server; its queues are purged on start.
"""
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from celery import Celery
from django.db import connection

from agreement.models import MetricRun, MetricScore
from agreement.tasks import enqueue_compute_metrics
from judging.judges.calls import close_clients
from judging.judges.models import JudgeCall, JudgeRun
from judging.judges.services import judge_run_start
from judging.models import Judgment, Response
from tests.judging.judges.conftest import (
    make_comparison,
    make_instance,
    make_judge,
    make_models,
)
from tests.support.fake_openai import FakeOpenAIServer
from tests.support.sockets import socket_owners

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
CELERY = ROOT / ".venv" / "bin" / "celery"
REDIS_DB = 12  # dedicated index: a worker of another checkout on the same server can't steal tasks
READY_TIMEOUT_S = 30
RUN_TIMEOUT_S = 60
VERDICT = "Step 1: compared both answers.\nOverall, Response A is better."


def _with_path(url: str, path: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=path))


@pytest.fixture(scope="module")
def broker_url():
    url = os.environ.get("TEST_REDIS_URL")
    if not url:
        pytest.skip("TEST_REDIS_URL not set (eval \"$(scripts/services.sh start)\")")
    if not os.environ.get("TEST_DATABASE_URL"):
        pytest.skip("TEST_DATABASE_URL not set: the worker needs a shared PostgreSQL database")
    return _with_path(url, f"/{REDIS_DB}")


@pytest.fixture(scope="module")
def worker(broker_url, django_db_setup, tmp_path_factory):
    """A ``celery worker`` subprocess on pytest-django's test database; stopped at module end."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: the worker process must share the test database")
    db_name = connection.settings_dict["NAME"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CELERY_")}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DATABASE_URL=_with_path(os.environ["TEST_DATABASE_URL"], f"/{db_name}"),
        CELERY_BROKER_URL=broker_url,
        SECRET_KEY="celery-integration-test-only",
        DEBUG="false",
        PYTHONPATH=str(ROOT),
    )
    nltk = os.environ.get("NLTK_DATA") or str(ROOT / "var" / "nltk_data")
    env["NLTK_DATA"] = nltk
    name = f"itest-{uuid.uuid4().hex[:8]}@localhost"
    log = tmp_path_factory.mktemp("celery") / "worker.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(CELERY), "-A", "config", "worker", "--pool=solo", "--without-gossip",
             "--without-mingle", "--without-heartbeat", "--purge", "-n", name,
             "-Q", "default,judges,metrics,providers", "-l", "warning"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    probe = Celery(broker=broker_url, set_as_current=False)  # else shared tasks bind to it
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not probe.control.ping(destination=[name], timeout=0.5):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"celery worker did not start:\n{log.read_text()[-3000:]}")
        yield proc
    finally:
        probe.close()
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        if proc.returncode not in (0, -15):
            sys.stderr.write(log.read_text()[-3000:])


@pytest.fixture
def send_to_redis(worker, broker_url):
    """Make this process's Celery app send tasks to Redis instead of running them eagerly."""
    from celery import current_app

    from config.celery import app

    assert current_app._get_current_object() is app, "tasks would be sent by another app"
    saved = {k: app.conf[k] for k in ("task_always_eager", "broker_url", "result_backend")}
    _drop_pools(app)
    app.conf.update(task_always_eager=False, broker_url=broker_url, result_backend=None)
    try:
        yield app
    finally:
        _drop_pools(app)
        app.conf.update(saved)


def _drop_pools(app):
    """Forget cached broker pools so the next send reads ``app.conf`` again (an earlier test may
    have built them for the eager configuration; Celery has no public reset)."""
    app._pool = None
    app.amqp._producer_pool = None


def _not_here(*args, **kwargs):
    raise AssertionError("task body ran in the test process, not in the worker")


def _poll(fetch, done, timeout=RUN_TIMEOUT_S):
    deadline = time.monotonic() + timeout
    while True:
        obj = fetch()
        if done(obj) or time.monotonic() > deadline:
            return obj
        time.sleep(0.1)


def test_a_judge_run_is_executed_by_the_worker(worker, send_to_redis, monkeypatch):
    monkeypatch.setattr("judging.judges.tasks.judge_run_work", _not_here)
    monkeypatch.setattr("judging.judges.tasks.judge_run_begin", _not_here)
    m1, m2 = make_models("worker-m1", "worker-m2")
    comparisons = [make_comparison(m1, m2) for _ in range(3)]
    with FakeOpenAIServer(responder=lambda body: VERDICT) as server:
        judge = make_judge(server, name="celery-worker-judge", concurrency=2)
        started = time.time()
        run = judge_run_start(judge=judge, item_uuids=[c.uuid for c in comparisons],
                              dispatch=True)
        # Finished means the run's status moved on (the last lane flips it after its unit).
        run = _poll(lambda: JudgeRun.objects.get(pk=run.pk),
                    lambda r: r.status not in (JudgeRun.Status.PENDING,
                                               JudgeRun.Status.RUNNING))
        assert run.status == JudgeRun.Status.DONE, (run.status, run.units_done, run.units_failed)
        assert (run.units_total, run.units_done, run.units_failed) == (6, 6, 0)
        assert (run.calls_made, run.calls_cached, run.calls_failed) == (6, 0, 0)
        # every paid call exactly once: 6 requests, 6 distinct idempotency keys, 6 call rows
        assert server.call_count == 6
        keys = {r.headers.get("idempotency-key") for r in server.requests}
        assert len(keys) == 6 and None not in keys
        assert JudgeCall.objects.filter(judge=judge).count() == 6
        assert all(r.received_at >= started for r in server.requests)
        # one verdict per comparison, the fixed reply says A wins
        judgments = Judgment.objects.filter(source=judge.name)
        assert judgments.count() == 3
        assert {j.comparison_id for j in judgments} == {c.pk for c in comparisons}
        # the worker process, not this one, holds the pooled connections to the fake server
        owners = socket_owners([worker.pid, os.getpid()],
                               lambda _, remote, __: remote == server.port)
        assert owners == {worker.pid}
    close_clients()


def test_a_metrics_run_is_executed_by_the_worker(worker, send_to_redis, monkeypatch):
    monkeypatch.setattr("agreement.tasks.metric_run_work", _not_here)
    (model,) = make_models("worker-metrics-model")
    reference = "A red square on a white background."
    same = make_instance(reference=reference)
    other = make_instance(reference=reference)
    third = make_instance(reference="Two dogs play in the snow near a fence.")
    exact = Response.objects.create(instance=same, model=model, text=reference)
    wrong = Response.objects.create(instance=other, model=model,
                                    text="Purple elephants dance at midnight.")
    Response.objects.create(instance=third, model=model, text="Two dogs play near a fence.")
    metrics = ["bleu4", "rouge_l", "meteor", "cider_d", "length"]
    from agreement.services.metric_scores import metric_run_start

    run = metric_run_start(metrics, created_by="celery-integration")
    assert run.total == 3 * len(metrics)
    enqueue_compute_metrics(run.pk)
    run = _poll(lambda: MetricRun.objects.get(pk=run.pk),
                lambda r: r.status in (MetricRun.Status.DONE, MetricRun.Status.FAILED))
    assert run.status == MetricRun.Status.DONE, run.error
    assert (run.done, run.total, run.cached) == (15, 15, 0)
    assert run.started_at is not None and run.finished_at >= run.started_at
    scores = {(s.metric, s.response_id): s.score for s in MetricScore.objects.all()}
    assert len(scores) == 15
    assert scores[("rouge_l", exact.pk)] == pytest.approx(1.0)
    assert scores[("rouge_l", wrong.pk)] < 0.2
    assert scores[("bleu4", exact.pk)] > scores[("bleu4", wrong.pk)]
    assert scores[("meteor", exact.pk)] > 0.9
    assert scores[("length", wrong.pk)] == 5.0
