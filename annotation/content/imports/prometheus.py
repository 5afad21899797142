"""Prometheus-Vision jsonl: each prompt split into instruction, response to evaluate, reference
answer (score 5) and score rubric; stored as an instance with its rubric attached.

The response to evaluate belongs to a model (the judging app's business); it is kept in
``Instance.extra["response"]`` so the file exports unchanged and judging can adopt it.

The reference answer (score 5) is written by the dataset's authors, not an LLM answer that people
rated, so it is stored as the reference without counting in Table 2.

Identity: a record is the same item when image, instruction, response, reference answer and
rubric criteria are the same (a content hash in ``external_id``, source ``prometheus``).
"""
from __future__ import annotations

from django.db import transaction

from annotation.content.formats import FormatError, parse_prometheus_jsonl
from annotation.content.imports.common import ImportFailed, ImportSummary, content_id
from annotation.content.imports.images import image_for_external_id
from annotation.core.db_text import storage_problem
from annotation.core.row_checks import database_refusal, field_problem, row_problem
from annotation.models import Image, Instance, InstanceImage, ScoreRubric
from studies.models import study_pk

SOURCE = "prometheus"


def import_prometheus(source, study=None) -> ImportSummary:
    """Parse the file, then write every record into ``study`` (None: the default study) in one
    transaction (all or nothing)."""
    sid = study_pk(study)
    try:
        records = parse_prometheus_jsonl(source)
    except FormatError as exc:
        raise ImportFailed(f"Prometheus-Vision jsonl: {exc}") from exc
    summary = ImportSummary()
    with transaction.atomic():
        for number, record in enumerate(records, start=1):
            _check(record, number)
            with database_refusal(_where(record, number), ImportFailed):
                created = _write(record, sid)
            summary.created += created
            summary.skipped += not created
    return summary


def _where(record, number: int) -> str:
    return f"Prometheus-Vision jsonl: record {number} (image {record.image[:60]!r})"


def _write(record, sid: int) -> bool:
    external_id = content_id(SOURCE, record.image, record.instruction, record.response,
                             record.reference_answer, record.rubric.criteria)
    if Instance.objects.filter(study_id=sid, source=SOURCE, external_id=external_id).exists():
        return False
    instance = Instance.objects.create(
        study_id=sid,
        kind=Instance.Kind.SINGLE, instruction=record.instruction,
        reference_output=record.reference_answer,
        reference_status=Instance.ReferenceStatus.VERIFIED, stage=Instance.Stage.DONE,
        source=SOURCE, external_id=external_id,
        extra={"image": record.image, "response": record.response,
               "task_description": record.task_description, "extra": record.extra},
    )
    InstanceImage.objects.create(
        instance=instance, image=image_for_external_id(record.image), position=0
    )
    d = record.rubric.score_descriptions
    ScoreRubric.objects.create(
        instance=instance, criteria=record.rubric.criteria, score1=d[0], score2=d[1],
        score3=d[2], score4=d[3], score5=d[4], reference_answer=record.reference_answer,
    )
    return True


def _check(record, number: int) -> None:
    """The importers' one set of field checks (``annotation.core.row_checks``)."""
    d = record.rubric.score_descriptions
    problem = storage_problem(record)
    if problem is None and (bad := field_problem(Image, "external_id", record.image)):
        problem = f"image: {bad}"
    problem = (problem or row_problem(Instance, {"instruction": record.instruction,
                                         "reference_output": record.reference_answer})
               or row_problem(ScoreRubric, {"criteria": record.rubric.criteria,
                                            **{f"score{i}": d[i - 1] for i in range(1, 6)}}))
    if problem is not None:
        raise ImportFailed(f"{_where(record, number)}: {problem}")
