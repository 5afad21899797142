"""The demo study goes through the real engine: every crowd vote is an engine-recorded
judgment of its assignment, each batch gets the votes its HIT type records, and a second load
adds nothing."""
from collections import Counter

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotation.models import Assignment, Batch
from judging.demo import CROWD, load_demo
from judging.models import Judgment

pytestmark = [pytest.mark.django_db, pytest.mark.slow]
VOTES_PER_ASSIGNMENT = {"pairwise_ab": 1, "multiturn_ab": 4, "rubric_score": 1, "feedback_ab": 1}


def test_demo_loads_once_through_the_engine():
    result = load_demo(seed=3)
    assert result["created"] and result["submitted"] > 0
    batches = Batch.objects.filter(uuid__in=result["batches"])
    assert set(batches.values_list("hit_type", flat=True)) == set(VOTES_PER_ASSIGNMENT)
    counted = Assignment.objects.filter(batch__in=batches, counted=True)
    assert counted.count() == result["submitted"]
    for batch in batches:
        mine = counted.filter(batch=batch)
        assert max(Counter(mine.values_list("task_id", flat=True)).values()) <= \
            batch.assignments_per_task
        votes = Judgment.objects.filter(assignment__batch=batch)
        assert votes.count() == VOTES_PER_ASSIGNMENT[batch.hit_type] * mine.filter(
            task__is_gold=False).count(), batch.hit_type
    assert not Judgment.objects.filter(source=Judgment.HUMAN, assignment__isnull=True).exists()
    crowd = counted.exclude(worker__user__isnull=False).values("worker").distinct().count()
    assert crowd == len(CROWD)
    assert counted.filter(worker__user__username="anna").exists()  # 'My work' has history
    assert not counted.filter(worker__user__username="ben").exists()
    judgments = Judgment.objects.count()
    assert not load_demo(seed=3)["created"]
    assert Judgment.objects.count() == judgments


def test_demo_crowd_prefers_true_answers():
    """Votes follow what the answers say: the reference's true answers beat the demo's
    deliberately wrong ones in most votes (the crowd is reliable, not perfect)."""
    load_demo(seed=5)
    wins = Counter()
    for j in Judgment.objects.filter(source=Judgment.HUMAN, comparison__isnull=False, turn="")\
            .select_related("comparison__response_a__model", "comparison__response_b__model",
                            "comparison__instance"):
        a, b = j.comparison.response_a, j.comparison.response_b
        quality = j.comparison.instance.extra["demo"]["quality"]
        q = {side: 2 if r.model.is_reference else quality[r.model.name]
             for side, r in (("A", a), ("B", b))}
        if q["A"] != q["B"]:
            wins[j.choice == max(q, key=q.get)] += 1
    assert wins[True] > 2 * wins[False] > 0


def test_demo_leaves_work_for_the_demo_annotators(client):
    """ben (who has done nothing yet) gets a task page in every rating batch of the demo."""
    result = load_demo(seed=3)
    client.force_login(get_user_model().objects.get(username="ben"))
    for batch in Batch.objects.filter(uuid__in=result["batches"]):
        page = client.get(reverse("annotation:batch_next", args=[batch.uuid]), follow=True)
        assert page.status_code == 200
        assert b"All done" not in page.content and b"<form" in page.content, batch.hit_type
