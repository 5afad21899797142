"""Metric scores are computed in batches, cached by (metric, config, response, reference) and
never recomputed for an unchanged key; the Celery task is safe to run twice."""
import pytest

from agreement import metrics
from agreement.models import MetricRun, MetricScore
from agreement.services import metric_scores as svc
from agreement.tasks import compute_metrics
from annotation.models import Instance
from judging.models import Response

pytestmark = pytest.mark.django_db
LEXICAL = ["bleu4", "rouge_l", "cider_d", "length", "random"]


def _scores(metric):
    return dict(MetricScore.objects.filter(metric=metric).values_list("response_id", "score"))


def test_run_scores_every_response_with_a_reference(study):
    run = svc.metric_run_start(LEXICAL, options={"seed": 3})
    assert run.total == 8 * len(LEXICAL)
    compute_metrics.delay(run.pk)  # eager in tests: the real task body
    run.refresh_from_db()
    assert (run.status, run.done, run.cached) == (MetricRun.Status.DONE, 40, 0)
    responses = list(Response.objects.select_related("instance").order_by("pk"))
    bleu = _scores("bleu4")
    expected = metrics.bleu4([r.text for r in responses],
                             [r.instance.reference_output for r in responses])
    assert [bleu[r.pk] for r in responses] == pytest.approx(expected)
    lengths = _scores("length")
    assert {lengths[r.pk] for r in responses} == {3.0, 6.0, 8.0}


def test_second_run_and_redelivery_use_the_cache(study):
    first = svc.metric_run_start(LEXICAL)
    svc.metric_run_work(first.pk)
    before = dict(MetricScore.objects.values_list("pk", "score"))
    compute_metrics.delay(first.pk)  # redelivered: a finished run is left alone
    second = svc.metric_run_start(LEXICAL)
    svc.metric_run_work(second.pk)
    second.refresh_from_db()
    assert second.cached == second.total == 40
    assert dict(MetricScore.objects.values_list("pk", "score")) == before


def test_changed_reference_is_a_cache_miss(study):
    summary, scores = svc.metric_scores_ensure(["rouge_l"])
    assert summary["rouge_l"]["computed"] == 8
    inst = Instance.objects.get(external_id="c1")
    inst.reference_output = "one two three four five six"
    inst.save()
    summary2, scores2 = svc.metric_scores_ensure(["rouge_l"])
    assert (summary2["rouge_l"]["cached"], summary2["rouge_l"]["computed"]) == (6, 2)
    m1 = Response.objects.get(instance=inst, model__name="M1")
    assert scores2["rouge_l"][m1.pk] == pytest.approx(1.0) != scores["rouge_l"][m1.pk]


def test_before_scoring_is_told_only_when_something_is_scored(study):
    """(A report drops the judgments it read meanwhile before a metric is scored.)"""
    told = []
    svc.metric_scores_ensure(["length", "bleu4"], before_scoring=lambda: told.append(1))
    assert told == [1, 1]  # once per metric scored
    svc.metric_scores_ensure(["length", "bleu4"], before_scoring=lambda: told.append(2))
    assert told == [1, 1]  # all cached
    Instance.objects.filter(external_id="c1").update(reference_output="one two three")
    svc.metric_scores_ensure(["length", "bleu4"], before_scoring=lambda: told.append(3))
    assert told == [1, 1, 3, 3]


def test_a_reference_changed_back_reads_its_first_scores(study):
    """Rows scored against an earlier reference stay in the cache: changed back to it, each
    response's row for its current reference is read, whichever row the table returns last,
    in response order."""
    _, first = svc.metric_scores_ensure(["rouge_l"])
    inst = Instance.objects.get(external_id="c1")
    original = inst.reference_output
    inst.reference_output = "one two three four five six"
    inst.save()
    svc.metric_scores_ensure(["rouge_l"])
    inst.reference_output = original
    inst.save()
    summary, again = svc.metric_scores_ensure(["rouge_l"])
    assert (summary["rouge_l"]["cached"], summary["rouge_l"]["computed"]) == (8, 0)
    assert again["rouge_l"] == first["rouge_l"]
    assert list(again["rouge_l"]) == sorted(again["rouge_l"])


def test_cider_config_depends_on_the_scored_set(study):
    s1, _ = svc.metric_scores_ensure(["cider_d"])
    Instance.objects.filter(external_id="c2").update(reference_output="a new reference")
    s2, _ = svc.metric_scores_ensure(["cider_d"])
    assert s1["cider_d"]["config_hash"] != s2["cider_d"]["config_hash"]
    assert s2["cider_d"]["computed"] == 8  # IDF changed for the whole set


def test_random_metric_is_seeded_per_response(study):
    _, a = svc.metric_scores_ensure(["random"], {"seed": 5})
    MetricScore.objects.all().delete()
    svc.BATCH_SIZE, old = 3, svc.BATCH_SIZE  # other batch boundaries: same numbers
    try:
        _, b = svc.metric_scores_ensure(["random"], {"seed": 5})
    finally:
        svc.BATCH_SIZE = old
    _, c = svc.metric_scores_ensure(["random"], {"seed": 6})
    assert a == b and a["random"] != c["random"]


def test_unknown_metric_is_rejected_before_anything_is_written(study):
    with pytest.raises(svc.UnknownMetric, match="nope"):
        svc.metric_run_start(["bleu4", "nope"])
    assert not MetricRun.objects.exists()


def test_compute_metrics_command(study, capsys):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    call_command("compute_metrics", "--metrics", "length,bleu4")
    assert "16 scores, 0 from cache" in capsys.readouterr().out
    call_command("compute_metrics", "--metrics", "length,bleu4")
    assert "16 scores, 16 from cache" in capsys.readouterr().out
    with pytest.raises(CommandError, match="unknown metric"):
        call_command("compute_metrics", "--metrics", "bleu5")


def test_a_studys_scores_are_read_from_its_own_id_ranges(study, monkeypatch):
    """A configuration's rows are every study's (the settings of a metric name no study): the
    cache is read by ranges of the study's own response ids, so another study's rows (made
    after, as imports make them) are neither returned nor read."""
    from agreement import selectors
    from annotation.core import analytic
    from studies.models import Study

    _, own = svc.metric_scores_ensure(["length"])
    row = MetricScore.objects.filter(metric="length").first()
    other = Study.objects.create(name="Other", slug="other")
    model = Response.objects.first().model
    theirs = [Response.objects.create(instance=Instance.objects.create(
        study=other, instruction=f"Other {k}?", stage="done"), model=model, text=f"t {k}")
        for k in range(30)]
    MetricScore.objects.bulk_create(
        [MetricScore(metric="length", config_hash=row.config_hash, response=r,
                     reference_hash=row.reference_hash, score=99.0, created_at=row.created_at)
         for r in theirs])
    read = []
    real = analytic.each_row

    def counted(qs, **kw):
        for r in real(qs, **kw):
            read.append(r[0])
            yield r

    monkeypatch.setattr(analytic, "each_row", counted)
    summary, again = svc.metric_scores_ensure(["length"])
    own, again = own["length"], again["length"]
    assert dict(again) == dict(own) and summary["length"]["cached"] == len(own) == 8
    assert sorted(read) == sorted(own)  # none of the other study's 30 rows
    assert selectors._id_ranges([1, 2, 5, 9, 40], size=2) == [(1, 2), (5, 9), (40, 40)]
    assert selectors._id_ranges([]) == []
