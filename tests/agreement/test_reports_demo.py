"""The report runs on the demo study: metrics cached, every section present, files stored."""
from pathlib import Path

import pytest

from agreement.demo import DEMO_TITLE, extend_demo
from agreement.models import MetricScore, Report
from judging.demo import load_demo
from judging.models import Comparison

pytestmark = [pytest.mark.django_db, pytest.mark.slow]
NLTK = Path(__file__).resolve().parents[2] / "var" / "nltk_data"


def test_demo_report(monkeypatch):
    if not (NLTK / "corpora" / "wordnet" / "lexnames").is_file():
        pytest.skip(f"WordNet absent from {NLTK}: run `make wordnet`")
    monkeypatch.setenv("NLTK_DATA", str(NLTK))
    load_demo(seed=7)
    out = extend_demo()
    assert out["created"]
    report = Report.objects.get(title=DEMO_TITLE)
    data = report.data
    assert report.status == Report.Status.DONE
    counts = data["snapshot"]["counts"]
    # the items are the sampled comparisons the crowd voted on (gold checks are not items):
    # every forced-choice one, and the conversations the simulated crowd reached
    compared = Comparison.objects.exclude(sampling="gold")
    assert counts["items"] == counts["items_with_human_votes"]
    assert compared.exclude(instance__kind="conversation").count() <= counts["items"] \
        <= compared.count()
    assert counts["human_votes"] > 200 and counts["graded_responses"] > 0
    # 150 demo answers (single-turn, and conversation turns per condition) scored by each
    # of the six lexical metrics
    assert MetricScore.objects.filter(metric="meteor").count() == 150
    acc = data["accuracy"]["metric:length"]
    assert acc["n_items"] > 0 and set(acc["by_level"]) <= {"5/5", "4/5", "3/5", "3/4", "4/4",
                                                          "2/3", "3/3", "2/2", "1/1"}
    assert data["reliability"]["pairwise_ab"]["krippendorff_alpha"]["alpha"] is not None
    assert "human" in data["category_win_rates"]
    assert data["biases"]["win_rate_gap"]["metric:bleu4"]["per_model"]
    assert extend_demo()["created"] is False  # idempotent
