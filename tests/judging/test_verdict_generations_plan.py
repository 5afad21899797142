"""The superseded-verdict check (``selectors.current_verdicts``) looks up a verdict's later
generations through an index on the item, whatever the planner's statistics say.

With the statistics a flushed test table leaves (0 tuples on a few pages), PostgreSQL planned
the correlated check as a scan of every verdict of the source, filtered by comparison, for each
verdict: the judge-powered board of 2,400 comparisons ran for over ten minutes in CI. The
``(comparison, source, kind, turn)`` index makes the check one descent."""
import pytest
from django.db import connection

from judging.selectors import pairwise_judgments_qs
from tests.judging import test_powered_boards as boards
from tests.studies import builders as sb

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]

# What a flushed table leaves in pg_class, as the CI run that stalled had them.
FLUSHED = (("judging_comparison", 13), ("judging_response", 46), ("judging_judgment", 0),
           ("annotation_instance", 0))


def test_the_later_generation_check_is_an_index_lookup_on_the_item(monkeypatch):
    with connection.cursor() as cursor:
        for table, pages in FLUSHED:  # rolled back with the test
            cursor.execute("UPDATE pg_class SET reltuples = 0, relpages = %s WHERE relname = %s",
                           [pages, table])
    monkeypatch.setattr(boards, "analyze", lambda: None)  # keep the flushed statistics
    study = sb.study("plan")
    boards.world(study, voted=300, total=2400, judge="copy")  # the stalled test's size
    plan = pairwise_judgments_qs(judge=boards.JUDGE, study=study).explain()
    # The NOT EXISTS of a later generation on the same comparison: found through an index,
    # not filtered out of a scan of every verdict of the source.
    lookups = [line.strip() for line in plan.splitlines()
               if "comparison_id = judging_judgment.comparison_id" in line]
    assert lookups and all(line.startswith("Index Cond:") for line in lookups), plan
