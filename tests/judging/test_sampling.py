"""Comparison sampling: uniform tuples incl. the reference, new model vs existing, budgets,
randomized and recorded sides."""
from decimal import Decimal

import pytest

from judging.models import Comparison
from judging.services.comparisons import (
    SamplingError,
    budget_limit,
    comparisons_sample,
)
from judging.services.responses import reference_responses_sync
from tests.judging import builders

pytestmark = pytest.mark.django_db


def _world(n_instances=10, names=("m1", "m2", "m3")):
    ms = builders.models(*names)
    instances = [builders.instance() for _ in range(n_instances)]
    for inst in instances:
        for m in ms.values():
            builders.respond(inst, m)
    assert reference_responses_sync().created == n_instances  # the reference competes
    assert reference_responses_sync().created == 0  # idempotent
    return instances, ms


def test_uniform_tuples_include_the_reference_without_repeats():
    _world()
    made = comparisons_sample(mode="uniform", tuples=40, seed=1)
    assert len(made) == 40
    pairs = {(c.instance_id, frozenset((c.response_a.model_id, c.response_b.model_id)))
             for c in made}
    assert len(pairs) == 40  # no tuple twice
    names = {c.response_a.model.name for c in made} | {c.response_b.model.name for c in made}
    assert "Human-verified reference" in names
    assert all(c.response_a.instance_id == c.response_b.instance_id == c.instance_id
               for c in made)
    swapped = sum(c.swapped for c in made)
    assert 8 <= swapped <= 32  # sides drawn at random and recorded
    # Asking for more than exist gives all of them: 10 instances x C(4, 2) pairs.
    assert len(comparisons_sample(mode="uniform", tuples=10_000, seed=2)) == 60


def test_sampling_is_seeded():
    _world()
    first = [(c.instance_id, c.response_a_id, c.response_b_id)
             for c in comparisons_sample(tuples=15, seed=5)]
    Comparison.objects.all().delete()
    again = [(c.instance_id, c.response_a_id, c.response_b_id)
             for c in comparisons_sample(tuples=15, seed=5)]
    assert first == again


def test_new_model_meets_a_random_existing_model_on_every_instance():
    instances, _ = _world(n_instances=12)
    newcomer = builders.models("newcomer")["newcomer"]
    for inst in instances[:9]:
        builders.respond(inst, newcomer)
    made = comparisons_sample(mode="new_model", new_model="newcomer", seed=3)
    assert len(made) == 9 and len({c.instance_id for c in made}) == 9
    for c in made:
        assert newcomer.pk in (c.response_a.model_id, c.response_b.model_id)
    opponents = {c.response_b.model_id if c.response_a.model_id == newcomer.pk
                 else c.response_a.model_id for c in made}
    assert len(opponents) >= 2


def test_budget_caps_count_and_cost():
    _world()
    assert budget_limit(wanted=1000, max_cost=Decimal("10"), reward=Decimal("0.10"),
                        judgments_per_comparison=5) == 20
    made = comparisons_sample(tuples=1000, max_cost=Decimal("10"), reward=Decimal("0.10"))
    assert len(made) == 20
    assert len(comparisons_sample(tuples=1000, max_comparisons=7, seed=9)) == 7


def test_sampling_errors_write_nothing():
    _world(n_instances=2)
    with pytest.raises(SamplingError, match="unknown model"):
        comparisons_sample(models=["m1", "nope"])
    with pytest.raises(SamplingError, match="new_model"):
        comparisons_sample(mode="new_model", new_model="ghost")
    assert not Comparison.objects.exists()
