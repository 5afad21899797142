"""Aggregation as a report choice: the headline accuracy against the plain majority (default,
unchanged) or against a reliability model's weighted labels, the majority kept beside it. The
crowd: two annotators who give the truth, three who always say "A"; judge J gives the truth."""
import pytest
from django.template.loader import render_to_string

from agreement.models import Report
from agreement.reports.html import sections, summary
from agreement.reports.params import ReportParams
from agreement.reports.tables import all_tables
from agreement.services.reports import report_data_compute, report_generate
from judging.services.judgments.imports import judgments_import
from tests.agreement.test_reports_worker_models import _bloc_csv
from tests.judging import builders

pytestmark = pytest.mark.django_db
PARAMS = {"metrics": [], "bootstrap_rounds": 50, "seed": 3}


@pytest.fixture
def bloc():
    builders.models("M1", "M2")
    assert judgments_import("bloc.csv", _bloc_csv(40), create_missing=True,
                            dataset="bloc").created == 40 * 6


def _overall(acc: dict) -> tuple:
    return acc["J"]["overall"]["successes"], acc["J"]["overall"]["n"]


def test_the_default_headline_is_the_plain_majority(bloc):
    data, _ = report_data_compute(ReportParams.from_dict(PARAMS))
    assert ReportParams.from_dict(PARAMS).aggregation == "majority"
    assert _overall(data["accuracy"]) == (20, 40)  # the majority says A everywhere
    assert data["accuracy_majority"] == data["accuracy"]
    assert data["aggregation"] == {"requested": "majority", "headline": "majority"}
    assert summary(data)["against"] == "human majority"
    heading = next(s["heading"] for s in sections(data, lambda stem: None)
                   if s["id"] == "accuracy")
    assert heading == "Accuracy vs the human majority (VisIT-Bench fig. 7)"


@pytest.mark.parametrize("model", ["dawid-skene", "mace"])
def test_a_model_headline_uses_its_weighted_labels_and_keeps_the_majority_beside(bloc, model):
    data, _ = report_data_compute(ReportParams.from_dict({**PARAMS, "aggregation": model}))
    assert data["aggregation"] == {"requested": model, "headline": model}
    assert data["accuracy"] == data["accuracy_weighted"][model]
    assert _overall(data["accuracy_majority"]) == (20, 40)
    if model == "dawid-skene":  # g1 and g2 agree beyond chance: their labels win
        assert _overall(data["accuracy"]) == (40, 40)
    against = summary(data)["against"]
    assert against.endswith("-weighted human labels")
    page = render_to_string("agreement/report_summary.html", {"summary": summary(data),
                                                              "small_n": 30})
    assert f"accuracy vs the {against}</abbr>" in page
    heading = next(s["heading"] for s in sections(data, lambda stem: None)
                   if s["id"] == "accuracy")
    assert heading.startswith(f"Accuracy vs the {against}")
    # the side-by-side table still shows the plain majority as "majority"
    rows = [r for r in all_tables(data)["accuracy_by_aggregation"] if r["source"] == "J"]
    assert next(r for r in rows if r["aggregation"] == "majority")["accuracy"] == 0.5


def test_a_model_that_cannot_be_fitted_leaves_the_headline_on_the_majority(bloc, settings):
    settings.REPORT_WORKER_MODELS_MAX_VOTES = 10
    data, _ = report_data_compute(ReportParams.from_dict({**PARAMS,
                                                          "aggregation": "dawid-skene"}))
    assert data["aggregation"]["headline"] == "majority"
    assert "REPORT_WORKER_MODELS_MAX_VOTES" in data["aggregation"]["error"]
    assert _overall(data["accuracy"]) == (20, 40)


def test_an_unknown_aggregation_is_refused_and_writes_nothing(analyst_client):
    with pytest.raises(ValueError, match="aggregation must be one of"):
        ReportParams.from_dict({**PARAMS, "aggregation": "median"})
    response = analyst_client.post("/api/agreement/reports/",
                                   {"metrics": [], "aggregation": "median"},
                                   content_type="application/json")
    assert response.status_code == 400 and not Report.objects.exists()


def test_the_form_the_api_and_the_stored_report_carry_the_choice(bloc, analyst_client):
    analyst_client.post("/reports/new/", {"split": "all", "seed": 0, "bootstrap_rounds": 10,
                                          "aggregation": "mace"})
    assert Report.objects.get().params["aggregation"] == "mace"
    response = analyst_client.post("/api/agreement/reports/",
                                   {"metrics": [], "aggregation": "dawid-skene"},
                                   content_type="application/json")
    assert response.status_code == 202
    assert Report.objects.order_by("-created_at").first().params["aggregation"] == "dawid-skene"
    report = report_generate({**PARAMS, "aggregation": "dawid-skene"})
    assert report.data["snapshot"]["filters"]["aggregation"] == "dawid-skene"


def test_the_reports_aggregations_are_majority_and_every_reliability_model():
    from agreement.reports.params import AGGREGATIONS, MAJORITY
    from agreement.statistics.worker_models import MODELS

    assert AGGREGATIONS == (MAJORITY, *MODELS)
