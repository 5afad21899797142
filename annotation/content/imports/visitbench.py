"""VisIT-Bench CSVs (single- and multi-image layouts) into instances, atomically.

Mapping: ``instruction_category`` → instruction family; each image URL → an ``Image`` row kept
``pending`` (no network during import); dense / BLIP-2 captions → the instance's images in order;
``gpt4_prediction`` → ``candidate_reference``; the three ``human_ratings_*`` flags → the
verification outcome (correct → verified; caption / response problem → rejected with that reason;
all false → rejected without a reason), recorded as rated by imported ratings.

The reference follows VisIT-Bench's convention, not the column names: in the multi-image file
``reference_output`` is the *source dataset's* label ("Yes", "Image 2", often empty) and is kept
in ``source_label``; the benchmark's reference is the human-verified GPT-4 answer, so a row rated
correct gets ``gpt4_prediction`` as its reference and a rejected or unrated row gets none.
Single-layout rows carry a human-written reference (``output_human_annotated``): stored as the
verified reference, rated by nobody. Unrated multi rows land in the pipeline stage their data
reaches.

Identity: a record is the same item as one already stored when its layout, category,
instruction and image URLs are the same (a content hash in ``external_id``, source
``visitbench``); re-importing skips it. Two records differing in any of those are two items.
"""
from __future__ import annotations

from django.db import transaction

from annotation.content.formats import FormatError, VisitRecord, parse_visit_csv
from annotation.content.imports.common import ImportFailed, ImportSummary, content_id
from annotation.content.imports.images import image_for_url
from annotation.core.db_text import storage_problem
from annotation.core.row_checks import database_refusal, row_problem
from annotation.models import Image, Instance, InstanceImage, InstructionFamily
from studies.models import study_pk

SOURCE = "visitbench"


def import_visitbench(source, study=None) -> ImportSummary:
    """Parse the whole file, then write every record into ``study`` (None: the default study)
    in one transaction (all or nothing)."""
    sid = study_pk(study)
    try:
        dataset = parse_visit_csv(source)
    except FormatError as exc:
        raise ImportFailed(f"VisIT-Bench CSV: {exc}") from exc
    summary = ImportSummary(details={"layout": dataset.format})
    with transaction.atomic():
        for number, record in enumerate(dataset.records, start=1):
            _check(record, number)
            with database_refusal(_where(record, number), ImportFailed):
                created = _write(record, dataset.format, number, sid)
            summary.created += created
            summary.skipped += not created
    return summary


def _where(record: VisitRecord, number: int) -> str:
    return f"VisIT-Bench CSV: record {number} ({record.instruction[:60]!r})"


def _check(record: VisitRecord, number: int) -> None:
    """The importers' one set of field checks (``annotation.core.row_checks``) on what the
    record will be stored as."""
    problem = (storage_problem(record)
               or row_problem(InstructionFamily, {"name": record.category})
               or row_problem(Instance, {"instruction": record.instruction,
                                         "reference_output": record.reference_output or "",
                                         "candidate_reference": record.candidate_reference or ""}))
    for ref in record.images:
        problem = problem or row_problem(Image, {"source_url": ref.url}) or row_problem(
            InstanceImage, {"caption": ref.caption or "", "blip2_caption": ref.blip2_caption or ""})
    if problem is not None:
        raise ImportFailed(f"{_where(record, number)}: {problem}")


def visit_external_id(record: VisitRecord, layout: str) -> str:
    return content_id(SOURCE, layout, record.category, record.instruction,
                      *(i.url for i in record.images))


def _write(record: VisitRecord, layout: str, number: int, sid: int) -> bool:
    external_id = visit_external_id(record, layout)
    if Instance.objects.filter(study_id=sid, source=SOURCE, external_id=external_id).exists():
        return False
    status, reason, stage = _outcome(record, layout, number)
    multi = len(record.images) > 1
    family, _ = InstructionFamily.objects.get_or_create(
        name=record.category, defaults={"skill": record.category, "multi_image": multi}
    )
    extra = {"layout": layout}
    if layout == "multi":
        extra["public_images_metadata"] = record.public_images_metadata
        reference = (record.candidate_reference or "") if status == Status.VERIFIED else ""
        label = record.reference_output or ""
    else:
        reference, label = record.reference_output or "", ""
    instance = Instance.objects.create(
        study_id=sid,
        family=family, kind=Instance.Kind.MULTI if multi else Instance.Kind.SINGLE,
        instruction=record.instruction, reference_output=reference, source_label=label,
        candidate_reference=record.candidate_reference or "", reference_status=status,
        rejection_reason=reason, stage=stage, source=SOURCE, external_id=external_id, extra=extra,
        reference_rated_by=(Instance.RatedBy.IMPORTED if record.human_verification is not None
                            else Instance.RatedBy.NOBODY),
    )
    InstanceImage.objects.bulk_create(
        InstanceImage(instance=instance, image=image_for_url(ref.url), position=position,
                      caption=ref.caption or "", blip2_caption=ref.blip2_caption or "")
        for position, ref in enumerate(record.images)
    )
    return True


Status = Instance.ReferenceStatus


def _outcome(record: VisitRecord, layout: str, number: int) -> tuple[str, str, str]:
    Reason, Stage = Instance.RejectionReason, Instance.Stage
    hv = record.human_verification
    if hv is None:
        if layout == "single":
            return Status.VERIFIED, Reason.NONE, Stage.DONE
        if not all(i.caption for i in record.images):
            return Status.PENDING, Reason.NONE, Stage.CAPTIONING
        if not record.candidate_reference:
            return Status.PENDING, Reason.NONE, Stage.REFERENCE
        return Status.PENDING, Reason.NONE, Stage.VERIFICATION
    if hv.gpt4_correct + hv.problem_in_caption + hv.problem_in_gpt4 > 1:
        raise ImportFailed(f"{_where(record, number)}: at most one human_ratings_* flag may be True")
    if hv.gpt4_correct:
        return Status.VERIFIED, Reason.NONE, Stage.DONE
    if hv.problem_in_caption:
        return Status.REJECTED, Reason.CAPTION, Stage.DONE
    if hv.problem_in_gpt4:
        return Status.REJECTED, Reason.RESPONSE, Stage.DONE
    return Status.REJECTED, Reason.NONE, Stage.DONE
