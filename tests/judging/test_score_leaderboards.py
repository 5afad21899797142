"""Score leaderboards over human grades (rating HITs and imported files), on the page, the API,
the downloads and the command; every JSON output at full precision, the CSV rounded; each crowd
vote stamped with its HIT type and version."""
import csv
import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_submit
from annotation.engine.services.workers import worker_block
from annotation.models import Batch
from judging import ratings, scores
from judging.leaderboards import leaderboard_build, score_leaderboard_build
from judging.models import Comparison, Judgment
from judging.selectors import (
    leaderboard_sources,
    pairwise_judgments,
    score_judge_names,
    score_judgments,
)
from judging.services.judgments.formats import COLUMNS
from judging.services.judgments.imports import judgments_import
from tests.factories import make_workers
from tests.judging import builders

pytestmark = pytest.mark.django_db
FEEDBACK = "Reads the chart right but misses the units."


def _do_all(hit_type, rows, answers, workers):
    """Each worker answers every task of a new batch: ``answers[k]`` is worker k's answer."""
    batch = batch_create_from_rows(hit_type=hit_type, title="t", rows=rows,
                                   assignments_per_task=len(workers))
    batch_set_status(batch, Batch.Status.ACTIVE)
    for worker, answer in zip(workers, answers, strict=True):
        while (a := task_claim_next(batch=batch, worker=worker)) is not None:
            assignment_submit(assignment=a, data=answer,
                              now=a.claimed_at + timedelta(seconds=30))


def _graded(model, grades, workers):
    inst = builders.instance()
    builders.rubric(inst)
    response = builders.respond(inst, model)
    _do_all("rubric_score", [{"response": str(response.uuid)}],
            [{"score": str(g), "feedback": FEEDBACK} for g in grades], workers[:len(grades)])
    return response


def _import_grade(model_name, score):
    row = {"item_id": f"imp-{model_name}", "dataset": "import", "instruction": "Describe it.",
           "image_urls": '["https://e.org/imported.png"]', "model_a": model_name,
           "response_a": f"{model_name} imported answer", "model_b": "", "response_b": "",
           "annotator": "mturk:W9", "source": "human", "choice": "", "score": str(score),
           "turn": "", "timestamp": "2024-01-02T03:04:05+00:00"}
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    writer.writerow(row)
    judgments_import("grades.csv", out.getvalue().encode(), create_missing=True)


@pytest.fixture
def graded():
    ms = builders.models("llava", "blip")
    workers = make_workers(3)
    _graded(ms["llava"], [5, 4, 3], workers)  # one item, mean 4
    _graded(ms["blip"], [2, 2, 1], workers)  # one item, mean 5/3
    _import_grade("blip", 1)  # an imported human grade: a second blip item
    return workers


def test_human_score_board_counts_hit_votes_and_imported_grades(graded):
    board = score_leaderboard_build("human", bootstrap_rounds=200)
    rows = {r["model"]: r for r in board.rows}
    assert [r["model"] for r in board.rows] == ["llava", "blip"]
    assert (rows["llava"]["mean"], rows["llava"]["n"], rows["llava"]["judgments"]) == (4.0, 1, 3)
    assert rows["blip"]["mean"] == pytest.approx((5 / 3 + 1) / 2)
    assert (rows["blip"]["n"], rows["blip"]["judgments"]) == (2, 4)
    assert (board.judgments, board.items) == (7, 3)
    assert board.scale is None and (board.observed_min, board.observed_max) == (1.0, 5.0)
    assert rows["blip"]["ci_low"] <= rows["blip"]["mean"] <= rows["blip"]["ci_high"]
    assert score_judge_names() == ["human"] and "human" in leaderboard_sources()
    assert pairwise_judgments() == []  # grades never enter the pairwise ratings


def test_blocked_workers_grades_can_be_left_out(graded):
    worker_block(graded[0], "failed gold")
    rows = {r["model"]: r for r in score_leaderboard_build(
        "human", exclude_blocked=True, bootstrap_rounds=0).rows}
    assert rows["llava"]["mean"] == 3.5 and rows["llava"]["judgments"] == 2


def test_score_board_on_the_page_api_downloads_and_command(graded, analyst_client, capsys):
    expected = scores.score_board(score_judgments(), rounds=1000, seed=0)
    full = {r.model: r for r in expected}

    html = analyst_client.get(reverse("judging:leaderboard") + "?judge=human").content.decode()
    assert 'id="score-leaderboard"' in html and "observed 1–5" in html
    assert f"{full['blip'].mean:.2f}" in html and "No judgments" not in html

    api = analyst_client.get("/api/eval/score-leaderboard/?judge=human&rounds=1000").json()
    assert {r["model"]: r["mean"] for r in api["rows"]} == {m: r.mean for m, r in full.items()}
    assert {r["model"]: r["ci_low"] for r in api["rows"]} == {
        m: r.ci_low for m, r in full.items()}
    assert analyst_client.get("/api/eval/score-leaderboard/?split=bad").status_code == 400
    assert analyst_client.get("/api/eval/judges/").json()["score_judges"] == ["human"]

    url = reverse("judging:leaderboard_scores_download", args=["json"])
    data = json.loads(analyst_client.get(url + "?judge=human").content)
    assert data["rows"][1]["mean"] == full["blip"].mean  # 1.3333…, not rounded
    url = reverse("judging:leaderboard_scores_download", args=["csv"])
    table = list(csv.DictReader(io.StringIO(analyst_client.get(url).content.decode())))
    assert table[1]["model"] == "blip" and table[1]["mean"] == str(round(full["blip"].mean, 3))

    call_command("ratings", "--board", "score", "--format", "json")
    printed = json.loads(capsys.readouterr().out)
    assert printed["rows"][1]["mean"] == full["blip"].mean
    assert printed["rows"][1]["ci_high"] == full["blip"].ci_high


def _pairwise_votes():
    ms = builders.models("llava", "blip", reference="reference")
    workers = make_workers(3)
    rows = []
    for a, b in ((ms["reference"], ms["llava"]), (ms["llava"], ms["blip"]),
                 (ms["reference"], ms["blip"])):
        inst = builders.instance()
        c = Comparison.objects.create(instance=inst, response_a=builders.respond(inst, a),
                                      response_b=builders.respond(inst, b))
        rows.append({"comparison": str(c.uuid)})
    _do_all("pairwise_ab", rows, [{"choice": "A"}, {"choice": "A"}, {"choice": "B"}], workers)


def test_every_json_output_of_the_pairwise_board_has_full_precision(analyst_client, capsys):
    _pairwise_votes()
    table = ratings.leaderboard(pairwise_judgments(), reference="reference",
                                bootstrap_rounds=100, seed=0)
    exact = {r.model: r for r in table}
    assert any(r.bt_rating != round(r.bt_rating, 1) for r in table)  # precision to lose

    def check(rows):
        for row in rows:
            r = exact[row["model"]]
            assert (row["rating"], row["ci_low"], row["ci_high"], row["elo"]) == (
                r.bt_rating, r.ci_low, r.ci_high, r.elo)
            assert row["win_rate_vs_reference"] == r.win_rate_vs_reference

    check(leaderboard_build("human", bootstrap_rounds=100).rows)
    check(analyst_client.get("/api/eval/leaderboard/?rounds=100").json()["rows"])
    call_command("ratings", "--format", "json", "--rounds", "100")
    check(json.loads(capsys.readouterr().out)["rows"])
    call_command("ratings", "--format", "csv", "--rounds", "100")
    by_model = {r["model"]: r for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    assert by_model["llava"]["rating"] == str(round(exact["llava"].bt_rating, 1))


def test_download_json_has_full_precision(analyst_client):
    _pairwise_votes()
    exact = {r.model: r for r in ratings.leaderboard(pairwise_judgments(),
                                                     reference="reference", seed=0)}
    data = json.loads(analyst_client.get(
        reverse("judging:leaderboard_download", args=["json"])).content)
    assert {r["model"]: r["rating"] for r in data["rows"]} == {
        m: r.bt_rating for m, r in exact.items()}


def test_crowd_votes_carry_their_hit_type_and_version(graded):
    _pairwise_votes()
    versions = dict(Judgment.objects.filter(assignment__isnull=False)
                    .values_list("kind", "template_version").distinct())
    assert versions == {"score": "rubric_score@1", "pairwise": "pairwise_ab@1"}
    assert set(Judgment.objects.filter(assignment__isnull=True)
               .values_list("template_version", flat=True)) == {""}  # imported


def test_score_api_refuses_bad_parameters(analyst_client, alice_client):
    assert alice_client.get("/api/eval/score-leaderboard/").status_code == 403
    assert analyst_client.get("/api/eval/score-leaderboard/?judge=%00").status_code == 400
    assert analyst_client.get("/api/eval/score-leaderboard/?rounds=-1").status_code == 400
    empty = analyst_client.get("/api/eval/score-leaderboard/?judge=nobody").json()
    assert (empty["rows"], empty["judgments"], empty["observed_min"]) == ([], 0, None)
