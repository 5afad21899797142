"""Leaderboards: human votes from the engine and an automatic judge's imported verdicts go
through the same functions; splits, blocked workers, page / plots / downloads / API / command."""
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.engine.services.workers import worker_block
from judging.leaderboards import category_win_rates, leaderboard_build
from judging.models import Comparison, Judgment
from judging.selectors import comparison_majorities, pairwise_judgments
from tests.factories import make_workers
from tests.judging import builders

pytestmark = pytest.mark.django_db


def _crowd_votes(pairs, workers, *, category="Chart reading", urls=None):
    """One comparison per (winner shown as A?, model_a, model_b, votes) spec, voted by the
    workers through claim/submit; returns the comparisons."""
    comparisons = []
    for a, b, votes in pairs:
        inst = builders.instance(category=category, urls=urls)
        ra, rb = builders.respond(inst, a), builders.respond(inst, b)
        comparisons.append((Comparison.objects.create(instance=inst, response_a=ra,
                                                      response_b=rb), votes))
    builders.crowd_batch(comparisons, workers)
    return [c for c, _ in comparisons]


def test_hand_computed_small_case_and_majorities():
    ms = builders.models("llava", "blip", reference="reference")
    workers = make_workers(5)
    _crowd_votes([(ms["reference"], ms["llava"], "AAAAB"),  # llava wins 1 of 5 vs reference
                  (ms["blip"], ms["reference"], "BBBBB"),   # blip wins 0 of 5
                  (ms["llava"], ms["blip"], "AAABB")], workers)
    board = leaderboard_build("human", bootstrap_rounds=200)
    rows = {r["model"]: r for r in board.rows}
    assert board.judgments == 15 and board.reference == "reference"
    assert rows["llava"]["win_rate_vs_reference"] == 0.2 and rows["llava"]["n_vs_reference"] == 5
    assert rows["blip"]["win_rate_vs_reference"] == 0.0
    assert rows["reference"]["is_reference"] and rows["reference"]["win_rate_vs_reference"] is None
    assert [r["model"] for r in board.rows] == ["reference", "llava", "blip"]
    assert all(r["matches"] == 10 for r in board.rows)
    assert all(r["ci_low"] <= r["rating"] <= r["ci_high"] for r in board.rows)
    levels = sorted(m["level"] for m in comparison_majorities())
    assert levels == ["3/5", "4/5", "5/5"]
    first = [m for m in comparison_majorities() if m["level"] == "4/5"][0]
    assert first["winner_model"] == "reference"


def test_category_win_rates_are_per_category_and_hand_computed():
    ms = builders.models("llava", reference="reference")
    workers = make_workers(3)
    _crowd_votes([(ms["llava"], ms["reference"], "AAB")], workers, category="Chart reading")
    _crowd_votes([(ms["reference"], ms["llava"], "AAA"),
                  (ms["llava"], ms["reference"], "BBA")], workers, category="Humor")
    rates = category_win_rates()
    assert set(rates) == {"Chart reading", "Humor"}
    assert rates["Chart reading"]["llava"] == pytest.approx((2 / 3, 3))
    assert rates["Humor"]["llava"] == pytest.approx((1 / 6, 6))


def test_first_elo_update_follows_fastchat():
    ms = builders.models("x", "y")
    _crowd_votes([(ms["x"], ms["y"], "A")], make_workers(1))
    rows = {r["model"]: r for r in leaderboard_build("human", bootstrap_rounds=0).rows}
    assert rows["x"]["elo"] == 1002.0 and rows["y"]["elo"] == 998.0  # K=4, expected 0.5


def test_same_functions_for_human_and_automatic_judges():
    ms = builders.models("m1", "m2", "m3", reference="ref")
    workers = make_workers(3)
    _crowd_votes([(ms["ref"], ms["m1"], "AAB"), (ms["m2"], ms["m1"], "ABA"),
                          (ms["m3"], ms["ref"], "BBB"), (ms["m2"], ms["m3"], "AAB")], workers)
    for j in Judgment.objects.filter(source="human"):  # a judge agreeing with every human vote
        Judgment.objects.create(comparison=j.comparison, source="gpt4-noref", annotator="gpt4",
                                choice=j.choice, created_at=j.created_at)
    human = leaderboard_build("human", bootstrap_rounds=100)
    auto = leaderboard_build("gpt4-noref", bootstrap_rounds=100)
    assert human.rows == auto.rows and human.judgments == auto.judgments == 12


def test_splits_and_blocked_workers():
    ms = builders.models("a", "b")
    w1, w2 = make_workers(2)
    _crowd_votes([(ms["a"], ms["b"], "AB")], [w1, w2], category="Cats")
    _crowd_votes([(ms["a"], ms["b"], "BB")], [w1, w2], category="Dogs",
                 urls=["https://e.org/1.png", "https://e.org/2.png"])
    assert len(pairwise_judgments(split="single")) == 2
    assert [r[2] for r in pairwise_judgments(split="multi")] == ["B", "B"]
    assert len(pairwise_judgments(split="category:Cats")) == 2
    worker_block(w2, "failed gold")
    assert len(pairwise_judgments(exclude_blocked=True)) == 2
    board = leaderboard_build("human", "category:Dogs", bootstrap_rounds=0)
    assert board.rows[0]["model"] == "b"
    with pytest.raises(ValueError, match="unknown split"):
        pairwise_judgments(split="weird")


@pytest.fixture
def voted():
    ms = builders.models("llava", reference="reference")
    _crowd_votes([(ms["reference"], ms["llava"], "AAB")], make_workers(3))


def test_leaderboard_page_plots_and_downloads(voted, analyst_client, alice_client):
    url = reverse("judging:leaderboard")
    assert alice_client.get(url).status_code == 403
    page = analyst_client.get(url + "?judge=human&split=all")
    assert page.status_code == 200
    html = page.content.decode()
    assert "llava" in html and "33 % (3)" in html and 'id="ratings-plot"' in html
    for name in ("judging:leaderboard_ratings_png", "judging:leaderboard_categories_png"):
        png = analyst_client.get(reverse(name))
        assert png["Content-Type"] == "image/png" and png.content[:8] == b"\x89PNG\r\n\x1a\n"
        assert alice_client.get(reverse(name)).status_code == 403
    csv_text = analyst_client.get(reverse("judging:leaderboard_download", args=["csv"])
                                  ).content.decode()
    assert csv_text.splitlines()[0].startswith("rank,model,rating,ci_low,ci_high")
    data = json.loads(analyst_client.get(reverse("judging:leaderboard_download",
                                                 args=["json"])).content)
    assert data["judge"] == "human" and len(data["rows"]) == 2
    assert analyst_client.get(url + "?split=nope").status_code == 404


def test_api_leaderboard_and_majorities(voted, analyst_client, alice_client):
    assert alice_client.get("/api/eval/leaderboard/").status_code == 403
    data = analyst_client.get("/api/eval/leaderboard/?rounds=50").json()
    assert {r["model"] for r in data["rows"]} == {"llava", "reference"}
    assert analyst_client.get("/api/eval/judges/").json() == {"judges": ["human"],
                                                              "score_judges": []}
    majority = analyst_client.get("/api/eval/majorities/").json()["comparisons"][0]
    assert majority["level"] == "2/3" and majority["winner_model"] == "reference"
    assert analyst_client.get("/api/eval/leaderboard/?split=bad").status_code == 400
    assert analyst_client.get("/api/eval/models/").status_code == 200


def test_model_names_with_dots_are_reachable(analyst_client):
    from judging.models import EvalModel

    EvalModel.objects.create(name="gpt-4.1-mini")
    response = analyst_client.get("/api/eval/models/gpt-4.1-mini/")
    assert response.status_code == 200 and response.json()["name"] == "gpt-4.1-mini"


def test_ratings_command(voted, capsys):
    call_command("ratings", "--judge", "human", "--split", "all", "--format", "json",
                 "--rounds", "50")
    data = json.loads(capsys.readouterr().out)
    assert data["rows"][0]["model"] == "reference"
    call_command("ratings", "--format", "csv", "--rounds", "0")
    assert capsys.readouterr().out.count("\n") == 3


def test_the_boards_fast_read_equals_encoding_the_rows():
    """The leaderboard reads model ids and choices straight from the cursor; the result is
    the same encoding, in the same order, as ``ratings.encode`` of the named rows, and the
    board equals the ratings computed on those rows."""
    import numpy as np

    from judging import ratings
    from judging.selectors import pairwise_judgments_encoded

    ms = builders.models("zeta", "alpha", "Mid", reference="reference")
    _crowd_votes([(ms["zeta"], ms["alpha"], "ABAAB"), (ms["alpha"], ms["Mid"], "BBBAA"),
                  (ms["Mid"], ms["reference"], "ABBBB"), (ms["reference"], ms["zeta"], "AAAAB")],
                 make_workers(5))
    fast, slow = pairwise_judgments_encoded(), ratings.encode(pairwise_judgments())
    assert fast.models == slow.models == ("Mid", "alpha", "reference", "zeta")
    for column in ("a", "b", "outcome"):
        assert np.array_equal(getattr(fast, column), getattr(slow, column)), column
    board = leaderboard_build("human", bootstrap_rounds=100, seed=3)
    table = ratings.leaderboard(pairwise_judgments(), reference="reference",
                                bootstrap_rounds=100, seed=3)
    assert [(r["model"], r["rating"], r["ci_low"], r["elo"]) for r in board.rows] == \
        [(r.model, r.bt_rating, r.ci_low, r.elo) for r in table]
    assert pairwise_judgments_encoded(judge="nobody") is None
