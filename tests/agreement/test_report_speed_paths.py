"""The report's metric step reads the scored set once and the cache once per metric; the
numbers are the ones scoring metric by metric gives, and the ones stored in the cache."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agreement.models import MetricScore
from agreement.reports.params import ReportParams
from agreement.services import metric_scores as svc
from agreement.services.reports import report_data_compute
from annotation.models import Instance

pytestmark = pytest.mark.django_db
LEXICAL = ["bleu4", "rouge_l", "cider_d", "length", "random"]


def _stored(metric: str) -> dict[int, float]:
    """What the cache holds for the metric's current rows (every response's reference is
    unchanged here, so one row per response)."""
    return dict(MetricScore.objects.filter(metric=metric).values_list("response_id", "score"))


def test_all_metrics_at_once_equal_metric_by_metric(study):
    one_by_one = {}
    for name in LEXICAL:
        summary, scores = svc.metric_scores_ensure([name], {"seed": 2})
        assert summary[name]["computed"] == 8
        one_by_one.update(scores)
    summary, together = svc.metric_scores_ensure(LEXICAL, {"seed": 2})
    assert together == one_by_one
    assert all(summary[n]["cached"] == 8 and summary[n]["computed"] == 0 for n in LEXICAL)
    assert all(together[n] == _stored(n) for n in LEXICAL)


def test_a_fully_cached_call_reads_the_targets_once_and_each_metric_once(study):
    svc.metric_scores_ensure(LEXICAL)
    with CaptureQueriesContext(connection) as queries:
        svc.metric_scores_ensure(LEXICAL)
    # Each metric's rows are read in one query, streamed (with its transaction's statements
    # around it); besides them, the responses, their instances' references (each read once)
    # and the reference model.
    reads = [q["sql"] for q in queries.captured_queries
             if "SELECT" in q["sql"] or "DECLARE" in q["sql"]]
    scores = [sql for sql in reads if "agreement_metricscore" in sql]
    assert len(scores) == len(LEXICAL) and len(reads) == 3 + len(LEXICAL)


def test_first_computation_returns_what_the_cache_then_holds(study):
    _, scores = svc.metric_scores_ensure(LEXICAL)
    assert all(scores[n] == _stored(n) and len(scores[n]) == 8 for n in LEXICAL)


def test_a_row_for_an_old_reference_is_never_taken_for_the_current_one(study):
    _, before = svc.metric_scores_ensure(["rouge_l"])
    inst = Instance.objects.get(external_id="c1")
    inst.reference_output = "one two three four five six"
    inst.save()
    summary, after = svc.metric_scores_ensure(["rouge_l"])
    assert (summary["rouge_l"]["cached"], summary["rouge_l"]["computed"]) == (6, 2)
    summary, cached = svc.metric_scores_ensure(["rouge_l"])  # both rows stay in the table
    assert summary["rouge_l"]["computed"] == 0 and cached == after != before
    assert MetricScore.objects.filter(metric="rouge_l").count() == 10


def test_the_report_reads_the_targets_once_and_says_which_metric_it_is_on(study, monkeypatch):
    calls, stages = [], []
    original = svc.metric_targets
    monkeypatch.setattr(svc, "metric_targets", lambda **kw: calls.append(1) or original(**kw))
    params = ReportParams.from_dict({"metrics": ["bleu4", "length"], "bootstrap_rounds": 20})
    report_data_compute(params, lambda stage, percent: stages.append(stage))
    assert len(calls) == 1
    assert stages[:2] == ["metrics 1/2 (bleu4)", "metrics 2/2 (length)"]


def test_corpus_metrics_are_computed_first_and_returned_in_the_order_asked(study):
    """CIDEr-D (every response at once) runs first, so its memory peak comes before the
    others have grown the heap; what the caller gets keeps the caller's order."""
    started = []
    summary, scores = svc.metric_scores_ensure(
        ["bleu4", "length", "cider_d"], on_metric=lambda i, name: started.append((i, name)))
    assert started == [(0, "cider_d"), (1, "bleu4"), (2, "length")]
    assert list(summary) == list(scores) == ["bleu4", "length", "cider_d"]
    assert all(summary[m]["computed"] == summary[m]["n"] > 0 for m in summary)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("cached", [True, False])
def test_judgments_read_in_a_thread_give_the_report_reading_them_here_gives(
        study, monkeypatch, cached):
    """On PostgreSQL the judgments are read in a thread while the metric cache is read (and
    dropped, read again, when a metric is scored): the same report as reading them here."""
    import threading

    from agreement.reports import meanwhile
    from agreement.reports import params as report_params

    params = ReportParams(metrics=["length", "bleu4"], bootstrap_rounds=20)
    if cached:
        svc.metric_scores_ensure(params.metrics)
    readers = []
    real = report_params.read_pairwise_data
    monkeypatch.setattr(report_params, "read_pairwise_data", lambda p: (
        readers.append(threading.current_thread().name), real(p))[1])
    threaded, _ = report_data_compute(params)
    assert readers == (["report read"] if cached else ["report read", "MainThread"])
    monkeypatch.setattr(meanwhile, "connection", type("Elsewhere", (), {  # read here
        "vendor": "sqlite", "in_atomic_block": False})())
    here, _ = report_data_compute(params)
    assert readers[-1] == "MainThread" and len(readers) == 3 - cached
    for data in (threaded, here):  # when it was made, and how many scores were cached
        data["snapshot"].pop("generated_at")
        for summary in data.pop("metrics").values():
            summary.pop("cached"), summary.pop("computed")
            data.setdefault("summaries", []).append(summary)
    assert threaded == here and threaded["snapshot"]["counts"]
