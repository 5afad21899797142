"""Votes of rejected work (``Judgment.rejected``): the readers that join to judgments from
another table, where ``Judgment.objects`` cannot leave them out, and the admin, which shows
them marked."""
import pytest
from django.urls import reverse
from django.utils import timezone

from judging.models import Comparison, Judgment
from judging.services.active_comparisons import _existing
from judging.services.comparisons import response_slots
from tests.judging import builders

pytestmark = pytest.mark.django_db


@pytest.fixture
def three_votes():
    ms = builders.models("m1", "m2")
    inst = builders.instance()
    comparison = Comparison.objects.create(
        instance=inst, response_a=builders.respond(inst, ms["m1"]),
        response_b=builders.respond(inst, ms["m2"]), sampling="uniform")
    for k in range(3):
        Judgment.objects.create(comparison=comparison, source=Judgment.HUMAN, annotator=f"w{k}",
                                choice="A", created_at=timezone.now())
    Judgment.objects.filter(annotator="w0").update(rejected=True)  # as its rejection would
    return comparison


def test_active_sampling_sees_only_the_votes_that_count(three_votes):
    assert [votes for *_, votes in _existing(response_slots(None))] == [2]


def test_the_admin_lists_rejected_votes_too(three_votes, admin_client_):
    html = admin_client_.get(reverse("admin:judging_judgment_changelist")).content.decode()
    assert "3 judgments" in html
    filtered = admin_client_.get(reverse("admin:judging_judgment_changelist") + "?rejected__exact=1")
    assert "1 judgment" in filtered.content.decode()
