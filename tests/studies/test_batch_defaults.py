"""What a study decides for its new batches: its minimum time and allowed answers apply where
the batch names none, and a gold answer outside the allowed answers is refused, nothing
written."""
import pytest

from annotation.engine.services.batches import RowError, batch_create_from_rows
from annotation.models import Batch
from tests.factories import pairwise_rows
from tests.studies import builders

pytestmark = pytest.mark.django_db


def _study(answers, min_seconds=None):
    study = builders.study("rubric")
    study.default_answer_options = answers
    study.default_min_seconds = min_seconds
    study.save()
    return study


def _create(study, rows=None, **options):
    return batch_create_from_rows(hit_type="pairwise_ab", title="B", study=study,
                                  rows=rows or pairwise_rows(2), assignments_per_task=1,
                                  **options)


def test_a_batch_naming_nothing_gets_the_studys_answers_and_minimum_time():
    batch = _create(_study(["tie", "A", "B"], min_seconds=9))
    assert batch.hit_options["answers"] == "ab_tie"
    assert batch.min_seconds == 9


def test_the_batchs_own_options_win_and_other_options_are_kept():
    study = _study(["A", "B", "tie"])
    assert _create(study, hit_options={"answers": "ab_tie_bad"}).hit_options["answers"] == \
        "ab_tie_bad"
    kept = _create(study, hit_options={"strength": True}).hit_options
    assert kept["answers"] == "ab_tie" and kept["strength"] is True


def test_a_gold_answer_the_study_does_not_allow_is_refused_and_nothing_is_written():
    study = _study(["A", "B"])
    rows = pairwise_rows(2)
    rows[1]["_gold_answer"] = {"choice": "tie"}
    with pytest.raises(RowError, match=r"Row 2: .*'tie' is not offered in this batch"):
        _create(study, rows=rows)
    # Even a batch whose own options offer a tie: the study decides what gold may say.
    with pytest.raises(RowError, match=r"Row 2: .*'tie' is not offered in this study"):
        _create(study, rows=rows, hit_options={"answers": "ab_tie"})
    assert not Batch.objects.filter(study=study).exists()


def test_allowed_answers_that_are_no_answer_set_are_refused_by_name():
    with pytest.raises(RowError, match=r"Study “Rubric”: The answers A, bad are not an answer"):
        _create(_study(["A", "bad"]))
    assert not Batch.objects.exists()


def test_a_study_without_allowed_answers_keeps_the_hit_types_default():
    assert _create(_study([])).hit_options["answers"] == "ab"
