"""``IdsIn`` selects what ``__in`` selects, on SQLite and PostgreSQL, and refuses what is not
an integer id instead of binding it."""
import pytest

from annotation.core.id_lists import IdsIn
from annotation.models import Worker

pytestmark = pytest.mark.django_db


@pytest.fixture
def workers():
    return [Worker.objects.create(external_id=f"w{i}") for i in range(30)]


def test_matches_the_orms_in_including_negation_and_duplicates(workers):
    ids = [w.pk for w in workers[::3]] + [workers[0].pk, 10**9]
    assert (sorted(Worker.objects.filter(IdsIn("pk", ids)).values_list("pk", flat=True))
            == sorted(Worker.objects.filter(pk__in=ids).values_list("pk", flat=True)))
    assert (Worker.objects.exclude(IdsIn("pk", ids)).count()
            == Worker.objects.exclude(pk__in=ids).count() == 20)


def test_an_empty_list_matches_nothing_and_excludes_nothing(workers):
    assert list(Worker.objects.filter(IdsIn("pk", []))) == []
    assert Worker.objects.exclude(IdsIn("pk", iter(()))).count() == 30


def test_values_must_be_integers(workers):
    assert Worker.objects.filter(IdsIn("pk", [str(workers[1].pk)])).get() == workers[1]
    with pytest.raises(ValueError):
        Worker.objects.filter(IdsIn("pk", ["1; DROP TABLE x"]))
