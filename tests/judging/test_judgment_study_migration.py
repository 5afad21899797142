"""judging 0017 copies each judgment's study from the item it judged (a comparison's or a
response's instance), for studies that already hold votes, and every new row gets it too."""
import pytest
from django.utils import timezone

from tests.support.migrations import migrate_to

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("judging", "0016_judgment_source_time_index"), ("studies", "0003_required_qualification")]
AFTER = [("judging", "0017_judgment_study")]


def _votes_in(apps, slug: str) -> list[int]:
    """A study with a compared pair (two human votes) and a graded response (one grade);
    the ids of its judgments."""
    study = apps.get_model("studies", "Study").objects.create(name=slug, slug=slug)
    EvalModel = apps.get_model("judging", "EvalModel")
    Response = apps.get_model("judging", "Response")
    Judgment = apps.get_model("judging", "Judgment")
    inst = apps.get_model("annotation", "Instance").objects.create(
        study=study, instruction=f"{slug}?", stage="done")
    a, b = (Response.objects.create(instance=inst, text=name,
                                    model=EvalModel.objects.create(name=name, study=study))
            for name in ("m1", "m2"))
    comparison = apps.get_model("judging", "Comparison").objects.create(
        instance=inst, response_a=a, response_b=b)
    now = timezone.now()
    rows = [Judgment.objects.create(source="human", annotator=f"w{k}", kind="pairwise",
                                    comparison=comparison, choice="A", created_at=now)
            for k in range(2)]
    rows.append(Judgment.objects.create(source="grader", annotator="g", kind="score",
                                        response=a, score=4.0, created_at=now))
    return [j.pk for j in rows]


def test_each_judgment_takes_its_items_study(back_to_latest):
    apps = migrate_to(BEFORE)
    ids = {slug: _votes_in(apps, slug) for slug in ("first", "second")}

    apps = migrate_to(AFTER)
    Judgment = apps.get_model("judging", "Judgment")
    for slug, pks in ids.items():
        assert sorted(Judgment.objects.filter(study__slug=slug).values_list("pk", flat=True)) \
            == sorted(pks), slug
    assert not Judgment.objects.filter(study__isnull=True).exists()


@pytest.mark.postgres
def test_the_study_index_carries_rejected():
    """(judging 0018) ``rejected`` rides in ``judgment_study_time``, so a study's counted
    judgments can be counted from the index alone (the plan itself is the planner's to
    choose, and depends on the rows there are: docs/scale.md has the measured queries)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'judgment_study_time'")
        assert cursor.fetchone()[0].endswith(
            "(study_id, source, created_at, id) INCLUDE (rejected)")
