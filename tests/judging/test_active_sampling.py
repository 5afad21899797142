"""Active comparison sampling: the pure core (no database), the command's active rounds and the
leaderboard's note of which sampling produced the data."""
from pathlib import Path

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from django.utils import timezone

from annotation.models import Batch
from judging import ratings
from judging.active_sampling import choose_pairs, design_free_intervals, design_strengths
from judging.models import Comparison, Judgment
from tests.judging import builders

# ----------------------------------------------------------------------------- the pure core


def _counts(m, games):
    """wins matrix from {(i, j): (i's wins, j's wins)}."""
    wins = np.zeros((m, m))
    for (i, j), (wi, wj) in games.items():
        wins[i, j] += wi
        wins[j, i] += wj
    return wins


def test_choice_is_deterministic_given_the_seed_and_seed_breaks_ties():
    wins = _counts(6, {(0, 1): (3, 2), (2, 3): (1, 4), (4, 5): (2, 2), (1, 2): (3, 3),
                       (3, 4): (2, 3)})
    first = choose_pairs(wins, k=12, seed=7)
    assert first == choose_pairs(wins.copy(), k=12, seed=7)
    assert len(first) == 12 and all(0 <= i < j < 6 for i, j in first)
    # With no data every pair is alike: only the seed decides, and it does.
    assert len({choose_pairs(np.zeros((8, 8)), k=1, seed=s)[0] for s in range(10)}) > 1


def test_prefers_the_uncertain_close_pair_over_a_lopsided_one():
    # 0 ~ 1 (5:5) and 2 >> 3 (9:1), equally many votes; 0-2 and 1-3 link them up.
    wins = _counts(4, {(0, 1): (5, 5), (2, 3): (9, 1), (0, 2): (25, 25), (1, 3): (25, 25)})
    only = np.zeros((4, 4))
    only[0, 1] = only[1, 0] = only[2, 3] = only[3, 2] = 10
    assert choose_pairs(wins, k=1, capacity=only, min_per_model=0) == [(0, 1)]
    # ... and, among pairs equally close, the one with fewer votes.
    wins = _counts(4, {(0, 1): (20, 20), (2, 3): (2, 2), (0, 2): (25, 25), (1, 3): (25, 25)})
    assert choose_pairs(wins, k=1, capacity=only, min_per_model=0) == [(2, 3)]


def test_under_sampled_models_come_first():
    wins = _counts(5, {(0, 1): (30, 30), (1, 2): (30, 30), (2, 3): (30, 30), (0, 3): (30, 30)})
    picks = choose_pairs(wins, k=2, min_per_model=2, seed=1)
    assert all(4 in pair for pair in picks)  # model 4 has never been compared
    # A comparison sampled but not voted on yet counts as the votes it will bring: the next
    # round goes on as if it had been picked in this one (not the same pair again).
    pending = np.zeros((5, 5))
    pending[picks[0]] = pending[picks[0][::-1]] = 1
    assert choose_pairs(wins, k=1, min_per_model=2, pending=pending, seed=1) == picks[1:]


def test_every_model_stays_connected():
    # Two well-measured islands {0, 1, 2} and {3, 4, 5}: the first pick bridges them.
    wins = _counts(6, {(0, 1): (40, 40), (1, 2): (40, 40), (0, 2): (40, 40),
                       (3, 4): (40, 40), (4, 5): (40, 40), (3, 5): (40, 40)})
    i, j = choose_pairs(wins, k=1, min_per_model=0, rule="d_optimal")[0]
    assert (i < 3) != (j < 3)
    # From nothing, a round of M - 1 picks spans every model.
    picks = choose_pairs(np.zeros((7, 7)), k=6, min_per_model=0, seed=3)
    seen = {0}
    for _ in picks:  # grow the component of model 0 along the picked pairs
        seen |= {x for pair in picks if seen & set(pair) for x in pair}
    assert seen == set(range(7))


def test_capacity_and_arguments():
    cap = np.zeros((3, 3))
    cap[0, 1] = cap[1, 0] = 2
    assert choose_pairs(np.zeros((3, 3)), k=5, capacity=cap, min_per_model=0) == [(0, 1)] * 2
    assert len(choose_pairs(np.zeros((3, 3)), k=4, capacity=cap, rule="uniform")) == 2
    with pytest.raises(ValueError, match="unknown rule"):
        choose_pairs(np.zeros((3, 3)), k=1, rule="greedy")
    with pytest.raises(ValueError, match="non-negative"):
        choose_pairs(-np.ones((3, 3)), k=1)


def test_design_strengths_stay_finite_for_an_unbeaten_model():
    beta = design_strengths(_counts(3, {(0, 1): (10, 0), (1, 2): (5, 5)}))
    assert np.isfinite(beta).all() and beta[0] > beta[1] and abs(beta[0] - beta[1]) < 5


# ----------------------------------------------------------------------------- the command



def _flip_votes(strength, pairs, votes, flip, rng):
    """wins matrix of ``votes`` votes per pair by workers who flip with probability ``flip``."""
    m = len(strength)
    wins = np.zeros((m, m))
    for i, j in pairs:
        p = 1 / (1 + np.exp(strength[j] - strength[i]))
        won = rng.binomial(votes, (1 - flip) * p + flip * (1 - p))
        wins[i, j] += won
        wins[j, i] += votes - won
    return wins


def _uniform_projection(strength, flip, weights):
    """The board's estimand, written out: BT fitted to every pair's vote probability."""
    d = strength[:, None] - strength[None, :]
    p = (1 - flip) / (1 + np.exp(-d)) + flip / (1 + np.exp(d))
    np.fill_diagonal(p, 0.0)
    beta = (ratings.bradley_terry_from_counts(p * 1e4) - ratings.INIT) * np.log(10) / 400
    return 400 / np.log(10) * (beta - beta @ weights / weights.sum()) + ratings.INIT


def test_design_free_intervals_keep_their_target_when_only_close_pairs_were_asked():
    """Asking only neighbours (what active sampling favours) stretches the plain BT board
    under flipping workers; the design-free board still covers the uniform-design truth."""
    rng = np.random.default_rng(3)
    strength = np.linspace(-2.5, 2.5, 10)
    neighbours = [(i, i + 1) for i in range(9)] + [(i, i + 2) for i in range(8)]
    wins = _flip_votes(strength, neighbours, 4000, 0.15, rng)
    votes = (wins + wins.T).sum(1)
    truth = _uniform_projection(strength, 0.15, votes)
    plain = ratings.bradley_terry_from_counts(wins)
    point, low, high = design_free_intervals(wins, 0.15)
    assert np.abs(plain - truth).max() > 60  # the stretched scale
    assert ((low <= truth) & (truth <= high)).all()
    assert np.abs(point - truth).max() < 30


def test_design_free_point_is_the_bt_fit_when_workers_do_not_flip():
    rng = np.random.default_rng(4)
    strength = rng.normal(0, 1, 6)
    pairs = [(i, j) for i in range(6) for j in range(i + 1, 6)]
    wins = _flip_votes(strength, pairs, 50, 0.0, rng)
    point, low, high = design_free_intervals(wins, 0.0, ridge=ratings.RIDGE)  # no prior
    np.testing.assert_allclose(point, ratings.bradley_terry_from_counts(wins), atol=0.01)
    assert (low < point).all() and (point < high).all()
    with pytest.raises(ValueError, match="flip_rate"):
        design_free_intervals(wins, 0.5)

def _study(n_instances=6, names=("m1", "m2", "m3", "m4")):
    ms = builders.models(*names)
    for _ in range(n_instances):
        inst = builders.instance()
        for m in ms.values():
            builders.respond(inst, m)
    return ms


def _items(qs):
    return [(c.instance_id, frozenset((c.response_a.model_id, c.response_b.model_id)))
            for c in qs.select_related("response_a", "response_b")]


@pytest.mark.django_db
def test_active_rounds_cover_every_model_and_never_repeat_an_item(capsys):
    _study()  # 4 models + the reference on 6 instances: 60 possible items
    call_command("sample_comparisons", "--mode", "active", "--budget", "8", "--seed", "1")
    assert "Sampled 8 comparisons (active)." in capsys.readouterr().out
    first = Comparison.objects.filter(sampling="active")
    assert first.count() == 8
    models = {m for _, pair in _items(first) for m in pair}
    assert len(models) == 5  # every model, the reference included, gets a comparison
    call_command("sample_comparisons", "--mode", "active", "--budget", "50", "--seed", "1")
    items = _items(Comparison.objects.all())
    assert len(items) == 58 and len(set(items)) == 58  # no item twice, across rounds
    call_command("sample_comparisons", "--mode", "active", "--budget", "5", "--seed", "1")
    assert Comparison.objects.count() == 60  # capacity runs out: only the 2 items left
    with pytest.raises(CommandError, match="not compared on it already"):
        call_command("sample_comparisons", "--mode", "active", "--budget", "5")


@pytest.mark.django_db
def test_active_round_is_seeded_and_goes_to_the_model_without_votes():
    ms = _study(names=("m1", "m2", "m3", "fresh"))
    # Plenty of human votes among m1, m2, m3 and the reference; none for "fresh".
    old = [m for n, m in ms.items() if n != "fresh"]
    for inst_n, (a, b) in enumerate([(0, 1), (1, 2), (0, 2)] * 2):
        inst = ms["m1"].responses.order_by("instance_id")[inst_n].instance
        ra, rb = (old[x].responses.get(instance=inst) for x in (a, b))
        c = Comparison.objects.create(instance=inst, response_a=ra, response_b=rb,
                                      sampling="uniform")
        for k, choice in enumerate("AABBA"):
            Judgment.objects.create(comparison=c, source=Judgment.HUMAN, annotator=f"w{k}",
                                    choice=choice, created_at=timezone.now())
    call_command("sample_comparisons", "--mode", "active", "--budget", "2", "--seed", "4",
                 "--models", "m1", "m2", "m3", "fresh")
    made = Comparison.objects.filter(sampling="active")
    assert all(ms["fresh"].pk in pair for _, pair in _items(made))
    picked = sorted(_items(made), key=repr)
    made.delete()
    call_command("sample_comparisons", "--mode", "active", "--budget", "2", "--seed", "4",
                 "--models", "m1", "m2", "m3", "fresh")
    assert sorted(_items(Comparison.objects.filter(sampling="active")), key=repr) == picked


@pytest.mark.django_db
def test_active_round_goes_into_a_batch_and_needs_a_budget():
    _study(n_instances=3)
    with pytest.raises(CommandError, match="needs a budget"):
        call_command("sample_comparisons", "--mode", "active")
    call_command("sample_comparisons", "--mode", "active", "--budget", "6", "--batch", "Round 2",
                 "--n", "3")
    batch = Batch.objects.get()
    # N distinct workers per task is the engine's invariant: (task, worker) is unique.
    assert batch.tasks.count() == 6 and batch.assignments_per_task == 3
    assert Comparison.objects.filter(sampling="active").count() == 6


# ----------------------------------------------------------------------------- the leaderboard


@pytest.mark.django_db
def test_leaderboard_says_which_sampling_produced_the_data(analyst_client):
    ms = builders.models("llava", "blip")
    for n, sampling in enumerate(["uniform", "active", "active", ""]):
        inst = builders.instance()
        c = Comparison.objects.create(instance=inst, response_a=builders.respond(inst, ms["llava"]),
                                      response_b=builders.respond(inst, ms["blip"]),
                                      sampling=sampling)
        for k in range(3):
            Judgment.objects.create(comparison=c, source=Judgment.HUMAN, annotator=f"w{k}",
                                    choice="AB"[(n + k) % 2], created_at=timezone.now())
    html = analyst_client.get(reverse("judging:leaderboard")).content.decode()
    assert "comparisons sampled: active 2 · uniform 1 · unrecorded 1" in html


def test_the_benchmarks_information_bound(monkeypatch):
    """``bench/active_sampling.py`` prints the most any design could save in its world: 1 for
    equal models (nothing to save), less the wider the strengths spread."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "bench"))
    from active_sampling import World

    world = World(6, 0.0, seed=0)
    world.beta = np.zeros(6)
    assert world.information_ratio() == pytest.approx(1.0)
    world.beta = np.array([0.0, 0.0, 0.0, 2.0, 2.0, 2.0])  # half the pairs 2 apart: 4σ'(2) ≈ 0.42
    cross = 4 * 0.880797 * 0.119203
    assert world.information_ratio() == pytest.approx((12 + 18 * cross) / 30)  # 30 ordered pairs
