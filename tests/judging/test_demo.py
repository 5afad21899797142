"""The demo study goes through the real engine: counts and invariants hold afterwards."""
from collections import Counter

import pytest

from annotation.models import Assignment, Batch
from judging.demo import CROWD, load_demo
from judging.models import Judgment

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def test_demo_loads_once_through_the_engine():
    result = load_demo(seed=3)
    assert result["created"] and result["submitted"] > 0
    batch = Batch.objects.get(title__startswith="Demo:")
    counted = Assignment.objects.filter(batch=batch, counted=True)
    assert counted.count() == result["submitted"] == Judgment.objects.count()
    assert max(Counter(counted.values_list("task_id", flat=True)).values()) <= 5
    assert counted.values("worker").distinct().count() == len(CROWD)
    assert not load_demo(seed=3)["created"]
    assert Judgment.objects.count() == result["submitted"]
