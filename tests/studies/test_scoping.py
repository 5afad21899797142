"""A second study's rows stay out of the first one's boards and report, byte for byte; each
study's board reads only its own rows and its own reference model."""
import json

import pytest
from django.db import IntegrityError

from agreement.services.reports import report_generate
from judging import rating_cache
from judging.leaderboards import category_win_rates, leaderboard_build, score_leaderboard_build
from judging.models import EvalModel
from judging.selectors import comparison_majorities, judge_names, reference_model_name
from studies.models import default_study_id
from tests.studies import builders

pytestmark = pytest.mark.django_db

# Parts of a report that differ between two builds of the same data (when and how long).
VOLATILE = {"generated_at", "timings", "duration_seconds", "created_at", "finished_at"}


def _stable(value):
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _boards() -> str:
    """Every board of the default study, as the JSON the pages and API serve."""
    return json.dumps({
        "pairwise": leaderboard_build("human", bootstrap_rounds=50).as_dict(),
        "scores": score_leaderboard_build("human", bootstrap_rounds=50).as_dict(),
        "categories": category_win_rates("human"),
        "majorities": sorted(comparison_majorities(), key=lambda m: m["comparison"]),
        "cached": rating_cache.leaderboard("human", bootstrap_rounds=50).as_dict(),
        "judges": judge_names(),
    }, sort_keys=True, default=str)


def _report() -> str:
    report = report_generate({"metrics": [], "bootstrap_rounds": 20, "judges": []})
    assert report.status == "done", report.error
    return json.dumps(_stable(report.data), sort_keys=True, default=str)


@pytest.fixture
def first_study():
    """The default study (every row made without a study): three models, votes, grades."""
    default = default_study_id()
    ms = builders.models(default, "llava", "blip", reference="reference")
    builders.voted(default, [(ms["llava"], ms["reference"], "AAB"),
                             (ms["blip"], ms["reference"], "BBB"),
                             (ms["llava"], ms["blip"], "AAB")])
    builders.voted(default, [(ms["reference"], ms["llava"], "ABA")], category="Humor")
    builders.grades(default, ms["llava"], [4, 5])
    builders.grades(default, ms["blip"], [2, 3])
    return ms


def test_a_second_study_changes_nothing_of_the_first(first_study):
    before_boards, before_report = _boards(), _report()
    other = builders.study("other")
    # The same model names, another reference, many opposite votes, grades and a category.
    ms = builders.models(other, "llava", "blip", "gpt4v", reference="human-written")
    builders.voted(other, [(ms["blip"], ms["llava"], "AAAAA"),
                           (ms["gpt4v"], ms["human-written"], "AAAAA"),
                           (ms["blip"], ms["human-written"], "AAAAA")] * 3, category="Humor")
    builders.grades(other, ms["llava"], [1, 1, 1])
    builders.voted(other, [(ms["gpt4v"], ms["blip"], "AB")], source="gpt-judge")

    assert _boards() == before_boards
    assert _report() == before_report

    board = leaderboard_build("human", bootstrap_rounds=50, study=other)
    assert {r["model"] for r in board.rows} == {"llava", "blip", "gpt4v", "human-written"}
    assert board.judgments == 45 and board.reference == "human-written"
    assert reference_model_name() == "reference" and reference_model_name(other) == "human-written"
    assert judge_names(other) == ["human", "gpt-judge"] and judge_names() == ["human"]
    scores = score_leaderboard_build("human", bootstrap_rounds=50, study=other)
    assert [(r["model"], r["mean"]) for r in scores.rows] == [("llava", 1.0)]


def test_the_cached_board_is_per_study(first_study):
    default_board = rating_cache.leaderboard("human", bootstrap_rounds=50)
    other = builders.study("other")
    ms = builders.models(other, "solo-a", "solo-b")
    builders.voted(other, [(ms["solo-a"], ms["solo-b"], "AAA")])
    other_board = rating_cache.leaderboard("human", bootstrap_rounds=50, study=other)
    assert {r["model"] for r in other_board.rows} == {"solo-a", "solo-b"}
    assert rating_cache.leaderboard("human", bootstrap_rounds=50).as_dict() == \
        default_board.as_dict()
    assert rating_cache.leaderboard_sources(other) == ["human"]


def test_model_names_are_unique_per_study_not_across():
    other = builders.study("other")
    EvalModel.objects.create(name="llava")
    EvalModel.objects.create(name="llava", study=other)  # another study: allowed
    with pytest.raises(IntegrityError):
        EvalModel.objects.create(name="llava", study=other)


def test_each_study_has_at_most_one_reference():
    other = builders.study("other")
    EvalModel.objects.create(name="ref", is_reference=True)
    EvalModel.objects.create(name="ref", is_reference=True, study=other)
    with pytest.raises(IntegrityError):
        EvalModel.objects.create(name="ref2", is_reference=True, study=other)
