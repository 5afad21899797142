"""Dawid–Skene and MACE through ``fit_worker_model``: a hand-worked EM step, planted
confusions recovered, weighted labels beating majority with spammers, ties as a category,
anonymous released-shaped votes, and bad input."""

import numpy as np
import pytest
from scipy import stats

from agreement.statistics import human_majority
from agreement.statistics.crowd_simulation import simulate_crowd
from agreement.statistics.worker_models import DAWID_SKENE, MACE, MODELS, fit_worker_model


def _codes_by_item(fit) -> np.ndarray:
    out = np.empty(len(fit.items), dtype=np.int64)
    out[np.asarray(fit.items)] = fit.codes
    return out


def _majority_accuracy(crowd, seed=0) -> float:
    by_item = [[] for _ in crowd.truth]
    for item, _, label in crowd.votes:
        by_item[item].append(label)
    codes = human_majority(by_item, crowd.labels).codes
    draws = np.random.default_rng(seed).integers(len(crowd.labels), size=len(codes))
    return float((np.where(codes < 0, draws, codes) == crowd.truth).mean())


def test_one_dawid_skene_step_matches_the_hand_computation():
    """Start from the vote shares (2/3, 1/3 on i1 and i3; B on i2), one M-step gives
    w1: P(A|A)=1, P(A|B)=2/5; w2 and w3: P(A|A)=1/2, P(A|B)=1/5; priors (4/9, 5/9).
    The E-step then gives i1, i3: L(A)=4/9*1*1/2*1/2=1/9, L(B)=5/9*2/5*1/5*4/5=8/225,
    so P(A)=25/33; i2: P(A)=0. The last M-step: w1's P(A|B)=(8/33+8/33)/(8/33+1+8/33)=16/49."""
    votes = [("i1", "w1", "A"), ("i1", "w2", "A"), ("i1", "w3", "B"),
             ("i2", "w1", "B"), ("i2", "w2", "B"), ("i2", "w3", "B"),
             ("i3", "w1", "A"), ("i3", "w2", "B"), ("i3", "w3", "A")]
    fit = fit_worker_model(votes, DAWID_SKENE, labels=("A", "B"), n_iter=1)
    assert fit.items == ("i1", "i2", "i3")
    np.testing.assert_allclose(fit.posterior, [[25 / 33, 8 / 33], [0, 1], [25 / 33, 8 / 33]],
                               atol=1e-8)
    w1 = fit.worker("w1")
    np.testing.assert_allclose(w1.confusion, [[1, 0], [16 / 49, 33 / 49]], atol=1e-8)
    # accuracy: expected correct votes 25/33 + 1 + 25/33 = 83/33 of 3, Jeffreys interval
    assert w1.accuracy == pytest.approx(83 / 99)
    s = 83 / 33
    assert w1.ci == pytest.approx((stats.beta.ppf(0.025, s + 0.5, 3 - s + 0.5),
                                   stats.beta.ppf(0.975, s + 0.5, 3 - s + 0.5)))


@pytest.fixture(scope="module")
def crowd_with_spammers():
    return simulate_crowd(4000, spammer_share=0.2, seed=3)


def test_dawid_skene_recovers_planted_confusions(crowd_with_spammers):
    crowd = crowd_with_spammers
    fit = fit_worker_model(crowd.votes, DAWID_SKENE, labels=crowd.labels)
    assert len(fit.workers) == len(crowd.confusion) == 40
    errors = np.array([np.abs(w.confusion - crowd.confusion[w.worker]).max(axis=1)
                       for w in fit.workers])  # [worker, true label]
    # A and B are 45 % of the items each (~225 votes per worker), tie 10 % (~50)
    assert errors[:, :2].max() < 0.12 and errors[:, 2].max() < 0.2
    assert np.median(errors, axis=0).max() < 0.05
    # each always-A spammer is seen answering A whatever the truth
    always_a = [w for w in fit.workers
                if w.worker in crowd.spammers and crowd.confusion[w.worker][1, 0] == 1]
    assert always_a and all(w.confusion[:, 0].min() > 0.95 for w in always_a)


@pytest.mark.parametrize("model", MODELS)
def test_worker_accuracy_and_interval_cover_what_each_worker_did(crowd_with_spammers, model):
    crowd = crowd_with_spammers
    fit = fit_worker_model(crowd.votes, model, labels=crowd.labels)
    right: dict[str, list[bool]] = {}
    for item, worker, label in crowd.votes:
        right.setdefault(worker, []).append(crowd.labels.index(label) == crowd.truth[item])
    for w in fit.workers:
        realized = np.mean(right[w.worker])
        assert w.n_votes == len(right[w.worker])
        assert abs(w.accuracy - realized) < 0.04, w.worker
        assert w.ci[0] < realized < w.ci[1], w.worker
    good = [w.accuracy for w in fit.workers if w.worker not in crowd.spammers]
    spam = [w.accuracy for w in fit.workers if w.worker in crowd.spammers]
    assert min(good) > 0.75 > 0.55 > max(spam)


def test_weighted_labels_beat_majority_on_a_crowd_with_spammers():
    crowd = simulate_crowd(4000, spammer_share=0.4, seed=1)
    majority = _majority_accuracy(crowd)
    accuracy = {model: float((_codes_by_item(fit_worker_model(crowd.votes, model,
                                                              labels=crowd.labels))
                              == crowd.truth).mean()) for model in MODELS}
    assert majority < 0.88
    assert accuracy[DAWID_SKENE] > majority + 0.08
    assert accuracy[MACE] > majority + 0.05


def test_without_spammers_the_models_do_not_lose_to_majority():
    crowd = simulate_crowd(2000, spammer_share=0.0, seed=2)
    majority = _majority_accuracy(crowd)
    for model in MODELS:
        fit = fit_worker_model(crowd.votes, model, labels=crowd.labels)
        assert (_codes_by_item(fit) == crowd.truth).mean() >= majority - 0.005


def test_ties_are_their_own_category_and_other_labels_follow():
    votes = []
    for i in range(30):
        truth = ("A", "B", "tie")[i % 3]
        votes += [(i, w, truth) for w in ("w1", "w2", "w3")]
        votes.append((i, "always-tie", "tie"))
    votes.append((0, "w4", "both bad"))
    fit = fit_worker_model(votes, DAWID_SKENE)
    assert fit.labels == ("A", "B", "tie", "both bad")
    assert [fit.predicted()[i] for i in range(6)] == ["A", "B", "tie"] * 2
    always_tie = fit.worker("always-tie")
    assert always_tie.accuracy == pytest.approx(1 / 3, abs=0.01)
    np.testing.assert_allclose(always_tie.confusion[:3, 2], 1, atol=1e-6)
    assert fit.worker("w1").accuracy > 0.99
    # "both bad", one stray vote, is a category of its own that no item is decided by
    assert fit.posterior.shape == (30, 4) and 3 not in fit.codes


def test_a_label_nobody_used_gets_zero_posterior_and_an_undefined_row():
    votes = [(i, w, "AB"[(i + (w == "w3")) % 2]) for i in range(20) for w in ("w1", "w2", "w3")]
    for model in MODELS:
        fit = fit_worker_model(votes, model, labels=("A", "B", "tie"))
        assert fit.posterior.shape == (20, 3) and (fit.posterior[:, 2] == 0).all()
        np.testing.assert_allclose(fit.posterior.sum(axis=1), 1)
        assert np.isnan(fit.worker("w1").confusion[2]).all()
        assert fit.worker("w3").accuracy < 0.1 < 0.9 < fit.worker("w1").accuracy


def _visit_bench_shaped_rows():
    """Rows like visit_bench_human_preferences.csv: no worker id, about five forced-choice
    votes per (image, instruction, A, B), the same instruction asked of many images."""
    rng = np.random.default_rng(7)
    rows = []
    for t in range(60):
        instruction = "Describe the image in one sentence." if t % 2 else "What is unusual here?"
        key = (f"https://example.org/{t}.png", instruction, f"answer a{t}", f"answer b{t}")
        votes_a = [5, 4, 3, 2, 1, 0][t % 6]
        for v in rng.permutation(["A"] * votes_a + ["B"] * (5 - votes_a)).tolist():
            rows.append({"image_url": key[0], "instruction": key[1], "A": key[2], "B": key[3],
                         "model_selection.A": v == "A", "model_selection.B": v == "B"})
    return rows


def test_anonymous_votes_pool_into_one_worker_and_items_stay_distinct():
    rows = _visit_bench_shaped_rows()
    votes = [((r["image_url"], r["instruction"], r["A"], r["B"]), "" if n % 2 else None,
              "A" if r["model_selection.A"] else "B") for n, r in enumerate(rows)]
    for model in MODELS:
        fit = fit_worker_model(votes, model, labels=("A", "B"))
        assert len(fit.items) == 60 and len({item[1] for item in fit.items}) == 2
        (crowd,) = fit.workers
        assert crowd.worker is None and crowd.n_votes == len(rows) == 300
        assert crowd.ci[0] < crowd.accuracy < crowd.ci[1]
        votes_a = {item: sum(v[2] == "A" for v in votes if v[0] == item) for item in fit.items}
        predicted = fit.predicted()
        # one shared confusion: the label follows the vote count, as a majority does
        assert all(predicted[item] == ("A" if a >= 3 else "B") for item, a in votes_a.items())


@pytest.mark.parametrize("votes, kwargs, message", [
    ([], {}, "no votes"),
    ([("i1", "w1")], {}, "must be an \\(item, worker, label\\) triple"),
    ([("i1", "w1", ["A"])], {}, "hashable"),
    ([("i1", "w1", "C")], {"labels": ("A", "B")}, "unknown label 'C' in vote 0"),
    ([("i1", "w1", "A")], {"model": "glad"}, "unknown reliability model 'glad'"),
    ([("i1", "w1", "A")], {"confidence": 1.5}, "confidence"),
    ([("i1", "w1", "A")], {"labels": ("A", "A")}, "distinct"),
])
def test_bad_input_is_a_clear_error(votes, kwargs, message):
    with pytest.raises(ValueError, match=message):
        fit_worker_model(votes, **kwargs)
