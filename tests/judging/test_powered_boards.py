"""A study's judge-powered board through the real path (rows in the database, the page, the
API). Worked examples: a judge that copies what people would have said gives the CIs of people
voting on every comparison; a judge blind to the responses gives the human-only CIs back."""
import itertools

import numpy as np
import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import Instance
from judging import ppi
from judging.models import Comparison, Judgment, Response
from judging.powered_boards import UnknownJudge, judge_powered_board
from tests.db_stats import analyze
from tests.studies import builders as sb

pytestmark = pytest.mark.django_db
BETA = np.array([1.0, 0.5, 0.0, -0.3, -0.8])  # true BT strengths, model m0 … m4 (m4: reference)
JUDGE = "gpt-judge"


def world(study, *, voted: int, total: int, judge: str, seed=0):
    """``total`` comparisons of random pairs, one hidden "what a person would say" outcome
    each; people vote (one vote) on the first ``voted``; the judge rates all of them, copying
    that outcome (``judge="copy"``) or at random (``"random"``). Returns the hidden outcomes
    as ``ppi.Pairs`` in model order."""
    rng = np.random.default_rng(seed)
    names = [f"m{k}" for k in range(len(BETA))]
    ms = sb.models(study, *names[:-1], reference=names[-1])
    pairs = list(itertools.combinations(range(len(BETA)), 2))
    instances = Instance.objects.bulk_create(
        Instance(study=study, instruction=f"Item {k}?", stage="done",
                 reference_status="verified") for k in range(total // len(pairs) + 1))
    responses = {(r.instance_id, r.model.name): r for r in Response.objects.bulk_create(
        Response(instance=i, model=ms[n], text=f"{n} on {i.pk}")
        for i in instances for n in names)}
    a, b = [], []
    made = []
    for k in range(total):
        x, y = pairs[rng.integers(len(pairs))]
        if rng.random() < 0.5:
            x, y = y, x
        inst = instances[k // len(pairs)]
        made.append(Comparison(instance=inst, response_a=responses[(inst.pk, names[x])],
                               response_b=responses[(inst.pk, names[y])]))
        a.append(x)
        b.append(y)
    made = Comparison.objects.bulk_create(made)
    a, b = np.array(a), np.array(b)
    p = 1 / (1 + np.exp(BETA[b] - BETA[a]))
    hidden = (rng.random(total) < p).astype(float)
    verdict = hidden if judge == "copy" else (rng.random(total) < 0.5).astype(float)
    now = timezone.now()
    choice = {1.0: "A", 0.0: "B"}
    votes = [Judgment(comparison=c, source=Judgment.HUMAN, annotator=f"w{k % 7}",
                      choice=choice[hidden[k]], created_at=now) for k, c in enumerate(made[:voted])]
    votes += [Judgment(comparison=c, source=JUDGE, annotator=f"{JUDGE}@1",
                       template_version="pairwise-v3", choice=choice[verdict[k]], created_at=now)
              for k, c in enumerate(made)]
    Judgment.objects.bulk_create(votes)
    analyze()
    return ppi.Pairs.of(a, b, hidden, hidden)


def test_a_judge_copying_people_gives_the_cis_of_people_voting_on_everything():
    study = sb.study("copy")
    everything = world(study, voted=300, total=2400, judge="copy")
    board = judge_powered_board(study, JUDGE)["ratings"]
    everyone = ppi.bradley_terry_human(everything, len(BETA))
    assert board["provenance"] == {
        "human_comparisons_used": 300, "human_votes_used": 300,
        "human_comparisons_without_verdict": 0, "judge_only_comparisons": 2100,
        "template_versions": ["pairwise-v3"]}
    assert board["median_ci_width"] == pytest.approx(np.median(everyone.width), rel=0.06)
    assert board["human_only_median_ci_width"] > 2.4 * board["median_ci_width"]  # ~sqrt(8)
    assert 2000 < board["effective_human_comparisons"] < 2900
    order = [row["model"] for row in board["rows"]]
    assert order[0] == "m0"
    rate = next(r for r in board["rows"] if r["model"] == "m0")["win_rate_vs_reference"]
    assert rate["se"] < rate["human_only_se"]
    # Rank sets: each holds the model's true rank (BETA's order), and the judge's verdicts
    # make them no wider than people's 300 votes alone, narrower for some model.
    for row in board["rows"]:
        true_rank = int(row["model"][1:]) + 1
        for low, high in (row["rank_set"], row["human_only_rank_set"]):
            assert low <= true_rank <= high
    spans = [(r["rank_set"][1] - r["rank_set"][0],
              r["human_only_rank_set"][1] - r["human_only_rank_set"][0]) for r in board["rows"]]
    assert all(mine <= theirs for mine, theirs in spans)
    assert any(mine < theirs for mine, theirs in spans)


def test_a_random_judge_gives_the_human_only_cis_back():
    study = sb.study("random")
    world(study, voted=500, total=2500, judge="random", seed=1)
    board = judge_powered_board(study, JUDGE)["ratings"]
    assert board["lambda"] < 0.2
    assert board["median_ci_width"] == pytest.approx(board["human_only_median_ci_width"],
                                                     rel=0.04)
    assert abs(board["effective_human_comparisons"] - 500) < 50


def test_unknown_judge_is_refused_and_humans_are_no_judge():
    study = sb.study("none")
    world(study, voted=20, total=40, judge="copy")
    for name in ("nobody", "human"):
        with pytest.raises(UnknownJudge):
            judge_powered_board(study, name)


def test_the_board_page_and_the_api_show_it_beside_the_human_board(admin_client_):
    study = sb.study("shown")
    world(study, voted=60, total=240, judge="copy")
    page = admin_client_.get(reverse("studies:board", args=[study.slug]), {"ppi": JUDGE})
    body = page.content.decode()
    assert page.status_code == 200
    assert 'id="ppi-ratings"' in body and "pairwise-v3" in body and "Rank set" in body
    api = admin_client_.get(reverse("study-judge-powered", args=[study.slug]), {"judge": JUDGE})
    assert api.status_code == 200
    data = api.json()
    assert data["judge"] == JUDGE and len(data["ratings"]["rows"]) == len(BETA)
    assert data["ratings"]["provenance"]["human_votes_used"] == 60
    bad = admin_client_.get(reverse("study-judge-powered", args=[study.slug]),
                            {"judge": "<script>"})
    assert bad.status_code == 400
    shown = admin_client_.get(reverse("studies:board", args=[study.slug]), {"ppi": "<b>x</b>"})
    assert 'id="ppi-error"' in shown.content.decode()
    assert "<b>x</b>" not in shown.content.decode()



def test_a_conversation_counts_once_by_its_overall_verdicts():
    """Multi-turn items: like the human board's "all" split, the judge-powered board takes
    each conversation's overall verdicts (one unit per comparison and turn); per-turn votes
    never blur into it, and a judge's per-turn verdicts never pair with people's overall ones."""
    from judging.powered_boards import comparison_shares
    from judging.selectors import pairwise_judgments_qs

    study = sb.study("turns")
    ms = sb.models(study, "a", reference="b")
    inst = Instance.objects.create(study=study, instruction="Chat?", stage="done")
    ra, rb = (Response.objects.create(instance=inst, model=ms[n], text=n) for n in ("a", "b"))
    comparison = Comparison.objects.create(instance=inst, response_a=ra, response_b=rb)
    now = timezone.now()
    people = [("overall", "A"), ("overall", "A"), ("overall", "B"), ("1", "B"), ("2", "B")]
    Judgment.objects.bulk_create(
        [Judgment(comparison=comparison, source=Judgment.HUMAN, annotator=f"w{k}", turn=t,
                  choice=c, created_at=now) for k, (t, c) in enumerate(people)]
        + [Judgment(comparison=comparison, source=JUDGE, annotator=f"{JUDGE}@1", turn=t,
                    template_version="pairwise-v3", choice=c, created_at=now)
           for t, c in (("overall", "A"), ("2", "B"))])
    human = comparison_shares(pairwise_judgments_qs(study=study))
    judged = comparison_shares(pairwise_judgments_qs(judge=JUDGE, study=study))
    assert set(human) == set(judged) == {(comparison.pk, "overall")}
    assert human[(comparison.pk, "overall")][2:] == (pytest.approx(2 / 3), 3)
    assert judged[(comparison.pk, "overall")][2:] == (1.0, 1)
