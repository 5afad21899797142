"""More studies of the same size in a bench database: a study's models, instances, responses,
comparisons, judgments and cached metric scores copied into new studies, in SQL (about 40 s
per million judgments).

Each copy keeps every column but its ids (moved by ``OFFSET`` per copy), its uuids (new),
its study and its votes' assignments (none: those belong to the original's batches).
The sequences are then moved past the copies, so what is written afterwards is newer than
every copy, as it would be in a deployment whose other studies voted first.
"""
import time

OFFSET = 10**10  # id distance between copies (far above any bench's row count)


def _columns(model) -> list[str]:
    return [f.column for f in model._meta.concrete_fields]


def _copy_table(cursor, model, k: int, study_id: int, where: str, moved: tuple[str, ...],
                cleared: tuple[str, ...] = ()) -> int:
    """INSERT … SELECT of ``model``'s rows of the original study (``where``) as copy ``k``."""
    off = k * OFFSET
    select = []
    for column in _columns(model):
        if column == "id" or column in moved:
            select.append(f'"{column}" + {off}')
        elif column == "uuid":
            select.append("gen_random_uuid()")
        elif column == "study_id":
            select.append(str(study_id))
        elif column in cleared:
            select.append("NULL")
        else:
            select.append(f'"{column}"')
    table = model._meta.db_table
    cursor.execute(f'INSERT INTO "{table}" ({", ".join(_columns(model))}) '
                   f'SELECT {", ".join(select)} FROM "{table}" WHERE {where}')
    return cursor.rowcount


def add_copies(original, copies: int) -> list:
    """``copies`` new studies, each a copy of ``original``'s judged content; the new studies."""
    from django.db import connection, transaction

    from agreement.models import MetricScore
    from annotation.models import Instance
    from judging.models import Comparison, EvalModel, Judgment, Response
    from studies.models import Study

    made = []
    for k in range(1, copies + 1):
        t = time.perf_counter()
        with transaction.atomic(), connection.cursor() as cursor:
            study = Study.objects.create(name=f"Copy {k} of {original.name}",
                                         slug=f"{original.slug}-copy-{k}", visibility="public")
            of = f"study_id = {original.pk}"
            _copy_table(cursor, EvalModel, k, study.pk, of, ())
            _copy_table(cursor, Instance, k, study.pk, of, (), ("stage_task_id",))
            instances = f"instance_id IN (SELECT id FROM annotation_instance WHERE {of})"
            _copy_table(cursor, Response, k, study.pk, instances, ("instance_id", "model_id"))
            _copy_table(cursor, Comparison, k, study.pk, instances,
                        ("instance_id", "response_a_id", "response_b_id"))
            n = _copy_table(cursor, Judgment, k, study.pk, of,
                            ("comparison_id", "response_id"), ("assignment_id",))
            # the same scores under the same settings' hash, as a study with the same
            # responses would cache them (a metric's settings name no study)
            _copy_table(cursor, MetricScore, k, study.pk,
                        f"response_id IN (SELECT id FROM judging_response WHERE {instances})",
                        ("response_id",))
        made.append(study)
        print(f"  study {study.slug}: {n:,} judgments copied in {time.perf_counter() - t:.0f} s",
              flush=True)
    with connection.cursor() as cursor:
        for model in (EvalModel, Instance, Response, Comparison, Judgment, MetricScore, Study):
            table = model._meta.db_table
            cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                           f'(SELECT max(id) FROM "{table}"))')
            cursor.execute(f'VACUUM ANALYZE "{table}"')
    return made
