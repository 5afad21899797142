"""Does each hand-written statement (annotation/core/sql.py, engine/statements.py) still pay? ORM against it, same run.

Usage: eval "$(scripts/services.sh start)"; .venv/bin/python bench/hot_path_sql.py [--quick]
On a fresh PostgreSQL database filled through the real services (200 tasks x 5 submitted by 30
workers, a second batch half done, a live lease), each statement runs CALLS times per round
as the ORM would write it, as written in sql.py but unprepared (DATABASE_PREPARED_STATEMENTS=0),
and prepared (the default, as production and tests run it); rounds interleave the variants.
Prints microseconds per call: median over rounds, worst round, and the ORM's median over this
one's. Also the held-lease lookup with its status as a parameter, and which plans PostgreSQL
chose for it (a generic plan cannot use the partial index over leased rows).
A statement whose prepared ratio stays near 1 has no business in sql.py.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _postgres import django_on_fresh_database  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    rounds, calls = (2, 30) if args.quick else (args.rounds, args.calls)
    django_on_fresh_database("hot_path_sql", DATABASE_CONN_MAX_AGE="60")

    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.db import connection, transaction
    from django.db.models import Exists, F, OuterRef, Q
    from django.utils import timezone

    from annotation.core import sql
    from annotation.core.permissions import ANALYST, ANNOTATOR
    from annotation.engine import statements
    from annotation.engine.services.claims import task_claim_next
    from annotation.engine.services.submissions import assignment_submit
    from annotation.models import Assignment, Task
    from tests.factories import make_batch, make_workers

    User = get_user_model()
    batch, workers = make_batch(200, n=5), make_workers(30)
    for w in workers:
        while (a := task_claim_next(batch=batch, worker=w)) is not None:
            assignment_submit(assignment=a, data={"choice": "A"})
    other, w0 = make_batch(300, n=5), workers[0]
    for w in workers:
        for _ in range(150 if w is w0 else 20):
            assignment_submit(assignment=task_claim_next(batch=other, worker=w),
                              data={"choice": "A"})
    lease = task_claim_next(batch=other, worker=w0)
    user = User.objects.create(username="bench")
    user.groups.add(Group.objects.get(name=ANNOTATOR))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    print(f"{Assignment.objects.count()} assignments, {Task.objects.count()} tasks; "
          f"{rounds} rounds x {calls} calls")

    (held_cols, held_text) = statements._held_lease_query()
    held_param = held_text.replace(statements._LEASED, "%s")

    def held_with_status_parameter():
        with sql.statement_cursor() as cursor:
            cursor.execute(held_param, [other.pk, w0.pk, Assignment.Status.LEASED])
            return held_cols[0].load(cursor.fetchone())[0]

    def member(name):
        return Exists(User.groups.through.objects.filter(user_id=OuterRef("pk"),
                                                         group__name=name))

    cas = Assignment.objects.get(pk=lease.pk)
    cas.review_note = "x"
    live = {"status": Assignment.Status.LEASED, "expires_at": cas.expires_at}
    ops = {
        "assignment lookup": (
            lambda: Assignment.objects.select_related("task", "batch", "worker")
            .filter(uuid=lease.uuid).first(),
            lambda: statements.assignment_with_context(lease.uuid)),
        "held lease": (
            lambda: Assignment.objects.select_related("task").filter(
                batch=other, worker=w0, status=Assignment.Status.LEASED).first(),
            lambda: statements.held_lease(other, w0)),
        "worker position": (
            lambda: (Assignment.objects.filter(batch=other, worker=w0,
                                               submitted_at__isnull=False).count(),
                     Assignment.objects.filter(Q(submitted_at__isnull=False)
                                               | Q(status=Assignment.Status.LEASED),
                                               batch=other, worker=w0).count()
                     + Task.objects.filter(batch=other, slots_taken__lt=F("max_assignments"))
                     .filter(~Exists(Assignment.objects.filter(task=OuterRef("pk"), worker=w0)))
                     .count()),
            lambda: statements.submitted_and_total(other.pk, w0.pk)),
        "submit (compare-and-set)": (
            lambda: Assignment.objects.filter(pk=cas.pk, **live).update(review_note="x"),
            lambda: sql.save_if(cas, ["review_note"], live)),
        "user with roles": (
            lambda: User.objects.annotate(a=member(ANNOTATOR), b=member(ANALYST))
            .filter(pk=user.pk).first(),
            lambda: sql.user_with_roles(user.pk, (ANNOTATOR, ANALYST))),
    }
    now = timezone.now()

    def orm_claim(b, w):
        """The claim as the ORM writes it (what SQLite ran before): pick, take, insert."""
        with transaction.atomic():
            task = (Task.objects.filter(batch=b, slots_taken__lt=F("max_assignments"))
                    .filter(~Exists(Assignment.objects.filter(task=OuterRef("pk"), worker=w)))
                    .order_by("position").select_for_update(skip_locked=True, of=("self",))
                    .first())
            if task is None or not Task.objects.filter(
                    pk=task.pk, slots_taken__lt=F("max_assignments")).update(
                    slots_taken=F("slots_taken") + 1):
                return None
            return Assignment.objects.create(
                task=task, batch=b, worker=w, status=Assignment.Status.LEASED, claimed_at=now,
                expires_at=now, hit_type_version="1")

    def sql_claim(b, w):
        return statements.claim_next_task(Assignment(
            batch=b, worker=w, status=Assignment.Status.LEASED, claimed_at=now, expires_at=now,
            hit_type_version="1"))

    claimers = make_workers(calls)
    raw = connection.connection

    def unprepared(fn):
        def run(*a):
            raw.prepare_threshold = None
            try:
                return fn(*a)
            finally:
                raw.prepare_threshold = 0
        return run

    variants = {name: {"ORM": orm, "sql.py unprepared": unprepared(mine), "sql.py prepared": mine}
                for name, (orm, mine) in ops.items()}
    variants["held lease"]["prepared, status a parameter"] = held_with_status_parameter
    claims = {"ORM": orm_claim, "sql.py unprepared": unprepared(sql_claim),
              "sql.py prepared": sql_claim}
    for fns in variants.values():  # prepare, and past PostgreSQL's five custom plans
        for fn in fns.values():
            for _ in range(10):
                fn()
    times = {(op, v): [] for op, fns in {**variants, "claim": claims}.items() for v in fns}
    for _ in range(rounds):
        for op, fns in variants.items():
            for v, fn in fns.items():
                t0 = time.perf_counter()
                for _ in range(calls):
                    fn()
                times[(op, v)].append((time.perf_counter() - t0) / calls * 1e6)
        for v, fn in claims.items():
            b = make_batch(calls, n=1)
            t0 = time.perf_counter()
            for w in claimers:
                assert fn(b, w) is not None
            times[("claim", v)].append((time.perf_counter() - t0) / calls * 1e6)

    print(f"{'statement':>26} {'variant':>29} {'median µs':>10} {'worst':>8}  ORM/this")
    for (op, v), xs in times.items():
        orm = statistics.median(times[(op, "ORM")])
        print(f"{op:>26} {v:>29} {statistics.median(xs):>10.0f} {max(xs):>8.0f}"
              f"  {orm / statistics.median(xs):.2f}x")
    with sql.statement_cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements"
                       " WHERE statement LIKE %s", ['%a."status" = %'])
        for statement, generic, custom in cursor.fetchall():
            kind = "parameter" if "$3" in statement else "literal"
            print(f"held lease, status a {kind}: {generic} generic plans, {custom} custom plans")


if __name__ == "__main__":
    main()
