"""The report is honest (issue #27, item 5): its summary says plainly when no automatic source
beats chance (95% CI above 50%) and never calls such a source "best"; trial batches' votes are
in no report unless the analyst includes them; thin models are provisional in its ratings."""
import re

import pytest
from django.template.loader import render_to_string

from agreement.models import Report
from agreement.reports.html import summary
from agreement.services.reports import report_generate
from judging.models import Judgment
from judging.services.judgments.record import judgments_record
from tests.factories import make_workers
from tests.judging import builders

pytestmark = pytest.mark.django_db
PARAMS = {"metrics": [], "bootstrap_rounds": 50, "seed": 1}


def _acc(estimate, n, low, high):
    return {"overall": {"estimate": estimate, "n": n, "wilson": [low, high]}}


def _summary_html(data) -> str:
    return render_to_string("agreement/report_summary.html",
                            {"summary": summary(data), "small_n": 30})


def _judged_items(judge: str, verdict) -> None:
    """14 items with one human vote each and ``judge``'s verdict ``verdict(human vote)``."""
    ms = builders.models("m1", "m2")
    rows = []
    for k in range(14):
        comparison = builders.comparison(ms["m1"], ms["m2"])
        human = "A" if k % 3 else "B"
        rows += [{"source": Judgment.HUMAN, "annotator": "w1", "choice": human,
                  "comparison": comparison},
                 {"source": judge, "annotator": f"{judge}@1", "choice": verdict(human),
                  "comparison": comparison}]
    judgments_record(rows)


class TestSummaryAndChance:
    def test_all_sources_below_chance_are_named_no_best(self):
        # the report: a judge at 40.7% and the Random metric at 48.1%
        data = {"accuracy": {"gpt-judge": _acc(0.407, 27, 0.245, 0.593),
                             "metric:random": _acc(0.481, 27, 0.307, 0.660)}}
        s = summary(data)
        assert s["best_judge"] is None and s["best_metric"] is None
        assert s["no_source_beats_chance"] is True
        assert [r["beats_chance"] for r in s["ranking"]] == [False, False]
        html = _summary_html(data)
        assert 'id="no-source-beats-chance"' in html and "No automatic source beats chance" in html
        text = re.sub(r"<[^>]+>", " ", html)  # what a reader sees (class names aside)
        assert "best" not in text.lower()
        assert 'id="best-judge"' not in html and 'id="best-metric"' not in html

    def test_only_a_source_whose_interval_is_above_half_is_called_best(self):
        data = {"accuracy": {"lucky": _acc(0.8, 10, 0.49, 0.94),  # highest, CI reaches 49%
                             "steady": _acc(0.7, 200, 0.633, 0.759),
                             "metric:bleu": _acc(0.52, 300, 0.463, 0.576)}}
        s = summary(data)
        assert s["best_judge"]["source"] == "steady"
        assert s["best_metric"] is None and s["no_metric_beats_chance"] is True
        assert s["no_source_beats_chance"] is False
        html = _summary_html(data)
        best = re.search(r'<li id="best-judge">(.*?)</li>', html, re.S).group(1)
        assert "<strong>steady</strong>" in best and "lucky" in best  # the runner-up, overlapping
        assert 'id="no-metric-beats-chance"' in html and 'id="best-metric"' not in html

    def test_a_judge_beating_chance_in_a_real_report_is_named_best(self):
        _judged_items("good-judge", lambda human: human)
        report = report_generate(PARAMS)
        acc = report.data["accuracy"]["good-judge"]["overall"]
        assert acc["estimate"] == 1.0 and acc["wilson"][0] > 0.5
        html = bytes(report.files.get(name="report.html").content).decode()
        best = re.search(r'<li id="best-judge">(.*?)</li>', html, re.S).group(1)
        assert "<strong>good-judge</strong>" in best
        assert 'id="no-source-beats-chance"' not in html

    def test_a_real_report_whose_judge_disagrees_says_none_beats_chance(self):
        _judged_items("contrary", lambda human: "B" if human == "A" else "A")
        html = bytes(report_generate(PARAMS).files.get(name="report.html").content).decode()
        assert 'id="no-source-beats-chance"' in html
        assert "Best automatic judge" not in html


class TestTrialBatchesInReports:
    def _trial_votes(self):
        ms = builders.models("llava", "blip")
        return builders.crowd_batch([(builders.comparison(ms["llava"], ms["blip"]), "AAB"),
                                     (builders.comparison(ms["blip"], ms["llava"]), "BBA")],
                                    make_workers(3), trial=True)

    def test_trial_votes_are_in_no_report_until_included(self):
        self._trial_votes()
        excluded = report_generate(PARAMS)
        assert excluded.data["snapshot"]["counts"]["human_votes"] == 0
        assert excluded.data["ratings"] == {}
        included = report_generate({**PARAMS, "include_trial": True})
        assert included.data["snapshot"]["counts"]["human_votes"] == 6
        assert included.data["snapshot"]["filters"]["include_trial"] is True
        assert {r["model"] for r in included.data["ratings"]["human"]["rows"]} == {"llava",
                                                                                   "blip"}

    def test_the_analysts_form_and_the_api_take_the_choice(self, analyst_client):
        analyst_client.post("/reports/new/", {"split": "all", "seed": 0, "bootstrap_rounds": 10,
                                              "include_trial": "on"})
        assert Report.objects.get().params["include_trial"] is True
        response = analyst_client.post("/api/agreement/reports/", {"metrics": []},
                                       content_type="application/json")
        assert response.status_code == 202
        assert Report.objects.order_by("-created_at").first().params["include_trial"] is False

    def test_thin_models_are_provisional_in_the_reports_ratings(self):
        self._trial_votes()
        board = report_generate({**PARAMS, "include_trial": True}).data["ratings"]["human"]
        assert board["min_matches"] == 30
        assert all(r["provisional"] and r["rank"] is None for r in board["rows"])
