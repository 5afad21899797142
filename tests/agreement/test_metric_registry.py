"""The metric registry: a metric is one ``Metric`` record declared with ``@register``, and every
table that used to be keyed by a metric's name reads it. A toy metric registered here (what a
new module would declare) is accepted by a report, scored and cached, judged pairwise, labelled
and compared with its paper defaults, and served by the API, with no other file touched."""
import html

import pytest
from rest_framework.test import APIClient

from agreement import metrics
from agreement.models import MetricScore
from agreement.services import metric_scores as svc
from agreement.services.reports import report_generate

pytestmark = pytest.mark.django_db
TOY = "toy_vowels"
TOY_NOTE = ("Vowel share: vowels aeiou instead of vowels aeiouy (the paper's default) — scores "
            "are not comparable to the paper's")


def vowel_share(candidates, references):
    """Share of a candidate's letters that are vowels: a toy, but it ranks texts."""
    return [sum(ch in "aeiou" for ch in c) / max(1, sum(ch.isalpha() for ch in c))
            for c in candidates]


@pytest.fixture
def toy():
    metrics.register(name=TOY, label="Vowel share", default=False,
                     settings=lambda options: {"vowels": "aeiou", "scale": "0-1"},
                     paper_default={"vowels": "aeiouy"})(vowel_share)
    yield metrics.METRICS[TOY]
    del metrics.METRICS[TOY]


def test_the_built_in_metrics_are_records_in_report_order():
    assert list(metrics.METRICS) == ["bleu4", "rouge_l", "meteor", "cider_d", "bertscore",
                                     "length", "random"]
    assert svc.DEFAULT_METRICS == list(metrics.METRICS)
    assert svc.LEXICAL_METRICS == [m for m in metrics.METRICS if m != "bertscore"]
    assert [m for m, rec in metrics.METRICS.items() if rec.corpus] == ["cider_d"]
    assert metrics.METRICS["bleu4"].fn is metrics.bleu4


def test_a_name_registered_twice_is_refused(toy):
    with pytest.raises(RuntimeError, match="registered twice"):
        metrics.register(name=TOY, label="Other", settings=dict)(lambda c, r: [])
    assert metrics.METRICS[TOY].fn is vowel_share


def test_an_unregistered_metric_is_refused_by_name(study):
    with pytest.raises(svc.UnknownMetric, match=TOY):
        svc.check_metrics([TOY])


def test_a_toy_metric_flows_into_a_report_end_to_end(study, analyst, toy):
    report = report_generate({"metrics": ["length", TOY], "bootstrap_rounds": 0})
    assert report.status == "done", report.error
    cached = dict(MetricScore.objects.filter(metric=TOY)
                  .values_list("response_id", "score"))
    assert len(cached) == 8 and len(set(cached.values())) > 1
    client = APIClient()
    client.force_login(analyst)
    data = client.get(f"/api/agreement/reports/{report.uuid}/json/").json()
    summary = data["metrics"][TOY]
    assert summary["config"] == {"metric": TOY, "version": svc.METRIC_VERSION,
                                 "vowels": "aeiou", "scale": "0-1"}
    assert (summary["computed"], summary["cached"]) == (8, 0)
    prov = data["metric_provenance"]["metrics"][TOY]
    assert (prov["label"], prov["note"], prov["comparable_to_paper"]) == (
        "Vowel share", TOY_NOTE, False)
    assert f"metric:{TOY}" in data["accuracy"]
    page = html.unescape(client.get(f"/reports/{report.uuid}/").content.decode())
    assert "Vowel share (metric)" in page and TOY_NOTE in page
    again = report_generate({"metrics": [TOY], "bootstrap_rounds": 0})
    assert (again.data["metrics"][TOY]["cached"], again.data["metrics"][TOY]["computed"]) == (
        8, 0)
