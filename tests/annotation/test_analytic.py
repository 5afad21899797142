"""Large analytic reads: the same rows as the ORM, nothing for a filter that matches nothing,
and on PostgreSQL, when asked, the JIT compiler off for that query only."""
import pytest
from django.db import connection

from annotation.core import analytic
from annotation.core.id_lists import IdsIn
from annotation.models import Worker

pytestmark = pytest.mark.django_db


def test_rows_are_the_orms_rows():
    for i in range(5):
        Worker.objects.create(external_id=f"w{i}", blocked=i % 2 == 0)
    qs = Worker.objects.filter(blocked=True).order_by("pk").values_list("pk", "external_id")
    assert analytic.rows(qs) == [tuple(r) for r in qs] and len(analytic.rows(qs)) == 3


def test_a_filter_matching_nothing_gives_no_rows():
    Worker.objects.create(external_id="w")
    assert analytic.rows(Worker.objects.filter(IdsIn("pk", [])).values_list("pk")) == []
    assert list(analytic.each_row(Worker.objects.filter(IdsIn("pk", [])).values_list("pk"))) \
        == []


@pytest.mark.parametrize("chunk", [1, 2, 7, 20_000])
def test_each_row_gives_the_rows_in_order_across_chunks(chunk):
    for i in range(7):
        Worker.objects.create(external_id=f"w{i}", blocked=i % 3 == 0)
    qs = Worker.objects.order_by("-pk").values_list("pk", "external_id", "blocked")
    streamed = analytic.each_row(qs, chunk=chunk)
    assert next(streamed) == tuple(qs[0])  # a generator: rows come before the read ends
    assert [tuple(qs[0]), *streamed] == analytic.rows(qs) and len(analytic.rows(qs)) == 7


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)  # no test transaction around: SET LOCAL must end
def test_jit_is_off_for_the_query_and_back_after_it():
    def jit():
        with connection.cursor() as cursor:
            cursor.execute("SHOW jit")
            return cursor.fetchone()[0]

    Worker.objects.create(external_id="w")
    before = jit()
    setting = Worker.objects.extra(select={"jit": "current_setting('jit')"}).values_list("jit")
    assert analytic.rows(setting, jit=False) == [("off",)] and before == "on"
    assert jit() == before  # SET LOCAL ended with the read's own transaction
    assert analytic.rows(setting) == [("on",)]  # left alone unless asked
    assert list(analytic.each_row(setting, jit=False)) == [("off",)]  # streamed: the same
    assert jit() == before and list(analytic.each_row(setting)) == [("on",)]
    fraction = Worker.objects.extra(
        select={"f": "current_setting('cursor_tuple_fraction')"}).values_list("f")
    # A streamed read's plan is made for every row, not for the first tenth (the default).
    assert list(analytic.each_row(fraction)) == [("1",)] and analytic.rows(fraction) == [("0.1",)]
