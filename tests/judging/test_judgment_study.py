"""Every judgment carries the study of the item it judged, whichever way it is written (the
one writer, a bulk write, a bare ``create``), so a study's boards read its own index range:
another study's votes, rows written through any path, never leak into it."""
import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from judging.models import Comparison, Judgment, Response
from judging.selectors import pairwise_judgments_qs
from judging.services.judgments.record import judgment_record, judgments_record
from tests.studies import builders

pytestmark = pytest.mark.django_db


@pytest.fixture
def two():
    made = {}
    for slug in ("study-a", "study-b"):
        study = builders.study(slug)
        ms = builders.models(study, "llava", "blip")
        made[slug] = (study, builders.voted(study, [(ms["llava"], ms["blip"], "AB")])[0])
    return made


def test_every_write_path_fills_the_items_study(two):
    study_b, comparison_b = two["study-b"]
    response_b = comparison_b.response_a
    fresh = Comparison.objects.get(pk=comparison_b.pk)  # its instance not loaded: one query
    now = timezone.now()
    written = [
        judgment_record(source="human", annotator="x", comparison=comparison_b, choice="A"),
        Judgment.objects.create(source="human", annotator="y", comparison=fresh, choice="B",
                                created_at=now),
        *judgments_record([{"kind": "score", "response_id": response_b.pk, "score": 3.0}],
                          judge=type("J", (), {"name": "grader", "ident": "g"})()),
        *Judgment.with_rejected.bulk_create(
            [Judgment(source="human", annotator="z", comparison_id=comparison_b.pk, choice="A",
                      created_at=now),
             Judgment(source="grader", annotator="g2", kind="score", score=2.0,
                      response=Response.objects.get(pk=response_b.pk), created_at=now)]),
    ]
    assert {j.study_id for j in written} == {study_b.pk}
    assert set(Judgment.with_rejected.filter(pk__in=[j.pk for j in written])
               .values_list("study_id", flat=True)) == {study_b.pk}


def test_a_studys_votes_are_its_own(two):
    (study_a, comparison_a), (study_b, comparison_b) = two["study-a"], two["study-b"]
    judgment_record(source="human", annotator="late", comparison=comparison_b, choice="A")
    assert set(pairwise_judgments_qs(study=study_a).values_list("comparison_id", flat=True)) \
        == {comparison_a.pk}
    assert pairwise_judgments_qs(study=study_b).count() == 3


def test_a_judgment_without_an_item_is_refused(two):
    with pytest.raises(IntegrityError), transaction.atomic():
        Judgment.objects.create(source="human", annotator="x", choice="A",
                                created_at=timezone.now())
