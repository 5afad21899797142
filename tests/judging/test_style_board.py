"""The style-controlled board through the real path (rows in the database, the page, the API).
Worked examples: a judge that prefers the longer answer, where the weakest model writes the
longest answers, gets a large significant length coefficient and style-controlled ratings back
near the truth; a judge with no length preference gets a length CI covering 0 and no rank
change."""
import itertools

import numpy as np
import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import Instance
from judging.models import Comparison, Judgment, Response
from judging.ppi import ELO
from judging.ratings import INIT
from judging.style_board import style_controlled_board
from tests.db_stats import analyze
from tests.studies import builders as sb

pytestmark = pytest.mark.django_db
BETA = np.array([1.0, 0.4, -0.2, -0.8])  # true strengths m0 … m3; m3 is the reference
WORDS = [(20, 60), (60, 120), (60, 120), (250, 400)]  # the weakest model writes the most
JUDGE = "style-judge"
TRUTH = INIT + ELO * (BETA - BETA[-1])  # the true ratings on the board's scale


def world(study, *, length_logit: float, total: int = 900, seed=0, names=None):
    """``total`` comparisons of random pairs; the judge's verdict follows the true strengths
    plus ``length_logit`` times the normalised length difference (0: no length preference)."""
    rng = np.random.default_rng(seed)
    names = names or [f"m{k}" for k in range(len(BETA))]
    ms = sb.models(study, *names[:-1], reference=names[-1])
    pairs = list(itertools.permutations(range(len(BETA)), 2))
    instances = Instance.objects.bulk_create(
        Instance(study=study, instruction=f"Item {k}?", stage="done",
                 reference_status="verified") for k in range(total // len(pairs) + 1))
    words = {}
    made_responses = []
    for inst in instances:
        for k, name in enumerate(names):
            n = int(rng.integers(*WORDS[k]))
            words[(inst.pk, k)] = n
            made_responses.append(Response(instance=inst, model=ms[name], text="word " * n))
    responses = {(r.instance_id, r.model.name): r
                 for r in Response.objects.bulk_create(made_responses)}
    made, verdicts = [], []
    for j in range(total):
        x, y = pairs[j % len(pairs)]
        inst = instances[j // len(pairs)]
        la, lb = words[(inst.pk, x)], words[(inst.pk, y)]
        p = 1 / (1 + np.exp(-(BETA[x] - BETA[y] + length_logit * (la - lb) / (la + lb))))
        verdicts.append("A" if rng.random() < p else "B")
        made.append(Comparison(instance=inst, response_a=responses[(inst.pk, names[x])],
                               response_b=responses[(inst.pk, names[y])]))
    now = timezone.now()
    Judgment.objects.bulk_create(
        Judgment(comparison=c, source=JUDGE, annotator=f"{JUDGE}@1", template_version="v1",
                 choice=v, created_at=now) for c, v in zip(Comparison.objects.bulk_create(made),
                                                           verdicts, strict=True))
    analyze()


def _by_model(board):
    return {row["model"]: row for row in board["rows"]}


def test_a_length_loving_judge_gets_a_large_length_coefficient_and_ratings_near_the_truth():
    study = sb.study("long")
    world(study, length_logit=3.0)
    board = style_controlled_board(study, JUDGE)
    length = board["coefficients"][0]
    assert length["feature"] == "length" and length["significant"]
    assert length["ci"][0] > 200  # true: ELO * 3 ≈ 521 Elo points at z = 1 (261-543, seeds 0-9)
    rows = _by_model(board)
    raw = np.array([rows[f"m{k}"]["raw_rating"] for k in range(len(BETA))])
    styled = np.array([rows[f"m{k}"]["rating"] for k in range(len(BETA))])
    # the worst error shrinks to 0.01-0.49 of the raw board's over seeds 0-9
    assert np.abs(styled - TRUTH).max() < 0.6 * np.abs(raw - TRUTH).max()
    assert rows["m3"]["raw_rank"] < 4 and rows["m3"]["rank"] == 4  # the long writer falls back
    assert rows["m3"]["rank_change"] < 0
    assert [rows[f"m{k}"]["rank"] for k in range(len(BETA))] == [1, 2, 3, 4]


def test_a_judge_without_length_preference_gets_a_length_ci_covering_zero_and_same_ranks():
    study = sb.study("fair")
    world(study, length_logit=0.0, seed=1)
    board = style_controlled_board(study, JUDGE)
    low, high = board["coefficients"][0]["ci"]
    assert low < 0 < high and not board["coefficients"][0]["significant"]
    assert all(row["rank_change"] == 0 for row in board["rows"])
    assert [row["model"] for row in board["rows"]] == ["m0", "m1", "m2", "m3"]


def test_too_few_verdicts_give_a_note_not_a_fit():
    study = sb.study("empty")
    board = style_controlled_board(study, JUDGE)
    assert board["rows"] == [] and "fewer than 2" in board["note"]


def test_the_page_and_the_api_show_it_beside_the_raw_board(admin_client_):
    study = sb.study("shown")
    world(study, length_logit=3.0, total=240, names=["m0", "m1", "m2", "<i>m3</i>"])
    url = reverse("studies:board", args=[study.slug])
    page = admin_client_.get(url, {"judge": JUDGE, "style": "control"})
    body = page.content.decode()
    assert page.status_code == 200
    assert 'id="style-ratings"' in body and 'id="style-coefficients"' in body
    assert "<i>m3</i>" not in body and "&lt;i&gt;m3&lt;/i&gt;" in body
    plain = admin_client_.get(url, {"judge": JUDGE}).content.decode()
    assert 'id="style-ratings"' not in plain and "style=control" in plain
    assert admin_client_.get(url, {"style": "<b>x</b>"}).status_code == 400
    api_url = reverse("study-leaderboard", args=[study.slug])
    data = admin_client_.get(api_url, {"judge": JUDGE, "style": "control", "rounds": 0}).json()
    styled = data["style_control"]
    assert styled["judge"] == JUDGE and len(styled["rows"]) == len(BETA)
    assert [c["feature"] for c in styled["coefficients"]] == ["length", "headers",
                                                              "list_items", "bold"]
    assert styled["coefficients"][0]["significant"]
    assert "style_control" not in admin_client_.get(api_url, {"judge": JUDGE, "rounds": 0}).json()
    bad = admin_client_.get(api_url, {"style": "raw"})
    assert bad.status_code == 400 and "style" in bad.json()
