"""The hot path's hand-written statements (annotation.core.sql, annotation.engine.statements)
return what the ORM would, on SQLite and PostgreSQL, and run prepared on PostgreSQL in tests
as in production."""
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import DatabaseError, connection
from django.db.models import Exists, F, OuterRef, Q
from django.test.utils import CaptureQueriesContext, override_settings
from django.utils import timezone

from annotation.core import sql
from annotation.core.auth_backend import RoleAwareBackend
from annotation.core.permissions import ANALYST, ANNOTATOR, ROLE_FLAGS
from annotation.core.sql import save_if, statement_cursor
from annotation.engine import statements
from annotation.engine.selectors import assignment_with_context, worker_position
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_return, assignment_submit
from annotation.engine.services.workers import worker_for_user
from annotation.models import Assignment, Task, Worker
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


def test_worker_position_counts_the_workers_own_tasks_as_the_orm_does(alice, bob):
    """n is the worker's own: done + held + still open to them. Of 5 tasks (1 answer each),
    alice submitted 2 and holds 1, bob holds 1 and skipped 1 (back in the pool): alice's n is
    4, not 5 — bob's held task is not hers."""
    batch = make_batch(5, n=1)
    worker, other = worker_for_user(alice), worker_for_user(bob)
    for _ in range(2):
        assignment_submit(assignment=task_claim_next(batch=batch, worker=worker),
                          data={"choice": "A"})
    assignment_return(assignment=task_claim_next(batch=batch, worker=other))
    task_claim_next(batch=batch, worker=other)
    task_claim_next(batch=batch, worker=worker)
    orm = (Assignment.objects.filter(batch=batch, worker=worker, submitted_at__isnull=False)
           .count(),
           Assignment.objects.filter(Q(submitted_at__isnull=False) | Q(status="leased"),
                                     batch=batch, worker=worker).count()
           + Task.objects.filter(batch=batch, slots_taken__lt=F("max_assignments"))
           .filter(~Exists(Assignment.objects.filter(task=OuterRef("pk"), worker=worker)))
           .count())
    assert statements.submitted_and_total(batch.pk, worker.pk) == orm == (2, 4)
    assert worker_position(batch, worker) == (3, 4)
    # bob skipped one and holds one: his queue is the held one and the one still open
    assert worker_position(batch, other) == (1, 2)


def test_held_lease_matches_the_orm(alice):
    batch = make_batch(2, n=1)
    worker = worker_for_user(alice)
    assert statements.held_lease(batch, worker) is None
    leased = task_claim_next(batch=batch, worker=worker)
    held = statements.held_lease(batch, worker)
    assert held.pk == leased.pk
    _same_as_orm(held)
    assignment_submit(assignment=held, data={"choice": "A"})
    assert statements.held_lease(batch, worker) is None


def test_the_user_with_roles_matches_the_orm(alice, analyst, django_user_model):
    backend = RoleAwareBackend()
    for person in (alice, analyst):
        loaded, orm = backend.get_user(person.pk), django_user_model.objects.get(pk=person.pk)
        for field in get_user_model()._meta.concrete_fields:
            assert getattr(loaded, field.attname) == getattr(orm, field.attname), field.name
        for role in (ANNOTATOR, ANALYST):
            in_group = orm.groups.filter(name=role).exists()
            assert getattr(loaded, ROLE_FLAGS[role]) is in_group
    assert backend.get_user(alice.pk + analyst.pk + 1000) is None


def test_status_literals_come_from_the_model_and_names_are_quoted():
    """The one literal (the held-lease status) is made from the enum; every statement names
    tables and columns through the connection's quoting."""
    _, held = statements._held_lease_query()
    assert f"= '{Assignment.Status.LEASED.value}'" in held
    quote = connection.ops.quote_name
    texts = [held, statements._assignment_query()[1], statements._position_sql(),
             statements._take_next_slot()[1], sql._user_with_roles_query(2)[1]]
    if connection.vendor == "postgresql":
        texts.append(statements._claim_statement()[2])
    for statement in texts:
        assert quote(Assignment._meta.db_table) in statement or "auth_user" in statement
        assert " id " not in statement and ".id " not in statement  # every column quoted


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


def _prepared(fragment: str) -> int:
    with statement_cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
                       [f"%{fragment}%"])
        return cursor.fetchone()[0]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements: PostgreSQL")
@pytest.mark.parametrize("debug", [False, True])
def test_hot_path_statements_are_prepared_and_logged_in_tests_and_debug_alike(alice, debug):
    """The test suite runs the production path: the statements are prepared (once per
    connection, reused after), and recording queries (DEBUG, assertNumQueries) sees them
    without switching them to another path."""
    batch = make_batch(1, n=1)
    leased = task_claim_next(batch=batch, worker=worker_for_user(alice))
    with override_settings(DEBUG=debug), CaptureQueriesContext(connection) as queries:
        for _ in range(2):
            assert assignment_with_context(leased.uuid).pk == leased.pk
    assert len(queries) == 2 and all('a."uuid" = ' in q["sql"] for q in queries)
    assert _prepared('a."uuid" = $1') == 1
    assert _prepared('"slots_taken" + 1') == 1  # the claim


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
