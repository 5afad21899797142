"""The hot path's hand-written statements return what the ORM would (on SQLite and PostgreSQL)."""
from datetime import timedelta

import pytest
from django.db import DatabaseError, connection
from django.utils import timezone

from annotation.core.sql import save_if, statement_cursor
from annotation.engine.selectors import assignment_with_context, worker_position
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_submit
from annotation.engine.services.workers import worker_for_user
from annotation.models import Assignment, Worker
from tests.factories import make_batch

pytestmark = pytest.mark.django_db

FIELDS = [f.attname for f in Assignment._meta.concrete_fields]


def _same_as_orm(loaded):
    orm = Assignment.objects.select_related("task", "batch", "worker").get(pk=loaded.pk)
    for name in FIELDS:
        assert getattr(loaded, name) == getattr(orm, name), name
    for relation in ("task", "batch", "worker"):
        mine, theirs = getattr(loaded, relation), getattr(orm, relation)
        for field in type(theirs)._meta.concrete_fields:
            assert getattr(mine, field.attname) == getattr(theirs, field.attname), field.name


def test_assignment_with_context_matches_the_orm_before_and_after_submit(alice):
    batch = make_batch(2, n=1, gold_every=1)
    worker = worker_for_user(alice)
    leased = task_claim_next(batch=batch, worker=worker)
    loaded = assignment_with_context(leased.uuid)
    assert loaded.status == "leased" and loaded.answer is None
    _same_as_orm(loaded)
    assignment_submit(assignment=loaded, data={"choice": "B"})
    done = assignment_with_context(leased.uuid)
    assert done.answer == {"choice": "B"} and done.counted and done.gold_correct is False
    assert done.task.gold_answer == {"choice": "A"} and done.task.is_gold
    _same_as_orm(done)
    assert worker_position(batch, worker) == (2, 2)
    assert assignment_with_context("00000000-0000-0000-0000-000000000000") is None


def test_save_if_writes_only_while_the_row_still_matches(alice):
    batch = make_batch(1, n=1)
    leased = task_claim_next(batch=batch, worker=worker_for_user(alice))
    leased.review_note = "checked"
    assert not save_if(leased, ["review_note"], {"status": "submitted"})
    assert Assignment.objects.get(pk=leased.pk).review_note == ""
    assert save_if(leased, ["review_note"], {"status": "leased", "expires_at": leased.expires_at})
    assert Assignment.objects.get(pk=leased.pk).review_note == "checked"
    stale = leased.expires_at + timedelta(seconds=1)
    assert not save_if(leased, ["review_note"], {"expires_at": stale})


def test_a_submit_that_lost_its_lease_meanwhile_takes_the_locking_path(alice):
    """The compare-and-set fails when the row changed after this request read it (here the
    lease expired and was swept); the submit then re-reads it and applies the late rule."""
    batch = make_batch(1, n=2)
    read = assignment_with_context(task_claim_next(batch=batch, worker=worker_for_user(alice)).uuid)
    Assignment.objects.filter(pk=read.pk).update(status="expired",
                                                 expires_at=timezone.now() - timedelta(1))
    outcome = assignment_submit(assignment=read, data={"choice": "A"})
    stored = Assignment.objects.get(pk=read.pk)
    assert not outcome.duplicate and stored.status == "submitted"
    assert stored.late and stored.counted  # a slot was still free


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements: PostgreSQL")
def test_hot_path_statements_are_prepared_on_postgresql(alice):
    batch = make_batch(1, n=1)
    leased = task_claim_next(batch=batch, worker=worker_for_user(alice))
    for _ in range(2):
        assignment_with_context(leased.uuid)
    with statement_cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
                       ["%a.uuid = $1%"])
        assert cursor.fetchone()[0] == 1  # prepared once on this connection, reused after


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements: PostgreSQL")
@pytest.mark.django_db(transaction=True)
def test_a_statement_a_migration_made_stale_retires_its_connection(alice):
    """A migration run elsewhere changes a column under a prepared statement; the statement
    fails once, the connection is then not reused, and a fresh one prepares it anew."""
    import psycopg

    leased = task_claim_next(batch=make_batch(1, n=1), worker=worker_for_user(alice))
    assert assignment_with_context(leased.uuid) is not None  # prepared on this connection
    length = Worker._meta.get_field("external_id").max_length
    with psycopg.connect(connection.connection.info.dsn, autocommit=True) as other:
        other.execute("ALTER TABLE annotation_worker ALTER COLUMN external_id TYPE text")
        try:
            with pytest.raises(DatabaseError, match="result type"):
                assignment_with_context(leased.uuid)
            assert not connection.is_usable()
            connection.close()
            assert assignment_with_context(leased.uuid).uuid == leased.uuid
            assert connection.is_usable()
        finally:
            other.execute("ALTER TABLE annotation_worker ALTER COLUMN external_id "
                          f"TYPE varchar({length})")


def test_a_claim_returns_its_task_batch_and_worker_loaded(alice, django_assert_num_queries):
    """The task page a submit answers with is rendered from the claim's own result."""
    batch = make_batch(2, n=1)
    worker = worker_for_user(alice)
    for _ in range(2):  # a new lease, then the same live lease handed back
        claimed = task_claim_next(batch=batch, worker=worker)
        with django_assert_num_queries(0):
            assert claimed.task.position == 1 and claimed.task.payload["response_a"]
            assert claimed.batch is batch and claimed.worker is worker
        _same_as_orm(claimed)
