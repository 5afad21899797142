"""Writers that make scoped rows put them in the study asked for, and leave other studies'
rows alone: a batch's inline rows, a judge run's items, the reference model."""
import pytest
from django.core.exceptions import ValidationError

from annotation.engine.services.batches import batch_create_from_rows
from annotation.models import Instance
from judging.judges.models import Judge
from judging.judges.services import default_items, judge_run_start
from judging.models import Comparison, EvalModel
from judging.services.responses import reference_model_set
from studies.models import default_study_id
from tests.studies import builders

pytestmark = pytest.mark.django_db


def _rows(n):
    return [{"instruction": f"Which answer is better for picture {i}?",
             "model_a": "llava", "response_a": f"llava on {i}",
             "model_b": "blip", "response_b": f"blip on {i}"} for i in range(n)]


def test_a_batch_of_named_rows_creates_its_items_and_models_in_its_study():
    other = builders.study("other")
    EvalModel.objects.create(name="llava")  # the default study's llava: not reused
    batch = batch_create_from_rows(hit_type="pairwise_ab", title="B", rows=_rows(3),
                                   assignments_per_task=1, study=other)
    assert batch.study_id == other.pk
    assert Instance.objects.filter(study=other).count() == 3
    assert not Instance.objects.filter(study_id=default_study_id()).exists()
    assert set(EvalModel.objects.in_study(other).values_list("name", flat=True)) == \
        {"llava", "blip"}
    assert list(EvalModel.objects.in_study().values_list("name", flat=True)) == ["llava"]
    assert Comparison.objects.filter(instance__study=other).count() == 3


def test_a_studys_default_minimum_time_applies_to_its_batches():
    other = builders.study("other")
    other.default_min_seconds = 17
    other.save()
    batch = batch_create_from_rows(hit_type="pairwise_ab", title="B", rows=_rows(1),
                                   assignments_per_task=1, study=other)
    assert batch.min_seconds == 17


def test_a_judge_run_reads_one_study():
    other = builders.study("other")
    mine = builders.voted(default_study_id(), [(
        *builders.models(default_study_id(), "a", "b").values(), [])])
    theirs = builders.voted(other, [(*builders.models(other, "a", "b").values(), [])])
    judge = Judge.objects.create(name="j", kind="pairwise", base_url="http://127.0.0.1:9/v1",
                                 model_name="stand-in")
    assert default_items(judge) == [mine[0].uuid]
    assert default_items(judge, other) == [theirs[0].uuid]
    with pytest.raises(ValidationError, match="does not exist"):
        judge_run_start(judge=judge, item_uuids=[theirs[0].uuid], dispatch=False)
    run = judge_run_start(judge=judge, item_uuids=[theirs[0].uuid], dispatch=False, study=other)
    assert run.study_id == other.pk


def test_setting_a_reference_touches_one_study():
    other = builders.study("other")
    builders.models(default_study_id(), "x", reference="ref")
    builders.models(other, "x", "y")
    reference_model_set("y", study=other)
    assert EvalModel.objects.in_study().get(is_reference=True).name == "ref"
    assert EvalModel.objects.in_study(other).get(is_reference=True).name == "y"


def test_predictions_go_into_the_study_asked_for_and_match_its_items_only():
    from judging.models import Response
    from judging.services.responses import predictions_import

    other = builders.study("other")
    question = "Which shape is red?"
    theirs = Instance.objects.create(study=other, instruction=question, stage="done")
    Instance.objects.create(instruction=question, stage="done")  # the default study's twin
    data = b'{"instruction": "Which shape is red?", "prediction": "The circle."}\n'
    report = predictions_import("p.jsonl", data, model="newcomer", study=other)
    assert (report.created, report.unmatched) == (1, [])
    (response,) = Response.objects.filter(model__name="newcomer")
    assert response.instance == theirs and response.model.study_id == other.pk
    assert not EvalModel.objects.in_study().filter(name="newcomer").exists()
    # Without a study: the default study's twin, never the other study's.
    report = predictions_import("p.jsonl", data, model="newcomer")
    assert (report.created, report.unmatched) == (1, [])
    assert EvalModel.objects.in_study().get(name="newcomer").responses.get().instance != theirs


def test_a_judgments_export_of_one_study_leaves_the_others_out():
    from judging.services.judgments.exports import judgments_export

    other = builders.study("other")
    ours = builders.models(None, "ours-a", "ours-b")
    theirs = builders.models(other, "theirs-a", "theirs-b")
    builders.voted(None, [(ours["ours-a"], ours["ours-b"], "AB")])
    builders.voted(other, [(theirs["theirs-a"], theirs["theirs-b"], "A")])
    mine = judgments_export("csv", study=default_study_id())
    assert "ours-a" in mine and "theirs-a" not in mine and mine.count("\n") == 3
    assert "theirs-a" in judgments_export("csv", study=other)
    assert judgments_export("csv") == mine  # no study named: the default study's
