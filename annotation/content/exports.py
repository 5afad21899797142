"""Export the benchmark in its source formats (VisIT-Bench CSV, ConvBench xlsx, Prometheus jsonl)
and as a full JSONL dump. Each source-format export re-imports to the same records.

Selectors build ``dataset_formats`` records from the database; the writers there do the format.
"""
from __future__ import annotations

import json

from django.db.models import Prefetch, QuerySet

from annotation.content.formats import (
    ConvBenchRecord,
    HumanVerification,
    ImageRef,
    PrometheusRecord,
    Rubric,
    VisitDataset,
    VisitRecord,
    write_convbench_xlsx,
    write_prometheus_jsonl,
    write_visit_csv,
)
from annotation.models import Image, Instance, InstanceImage, InstructionFamily, ScoreRubric
from studies.models import study_pk

FORMATS = ("visitbench", "convbench", "prometheus", "jsonl")


def _instances(study=None, **filters) -> QuerySet[Instance]:
    """``study``'s instances (None: the default study): an export never mixes studies."""
    return (
        Instance.objects.filter(study_id=study_pk(study), **filters)
        .select_related("family")
        .prefetch_related(
            Prefetch("instance_images", InstanceImage.objects.select_related("image")),
            "turns", Prefetch("rubrics", ScoreRubric.objects.order_by("pk")),
        )
        .order_by("pk")
    )


def _verification(instance: Instance) -> HumanVerification | None:
    """The human_ratings_* flags, only for an LLM answer people rated (empty otherwise)."""
    Status, Reason = Instance.ReferenceStatus, Instance.RejectionReason
    if instance.reference_status == Status.PENDING \
            or instance.reference_rated_by == Instance.RatedBy.NOBODY:
        return None
    return HumanVerification(
        gpt4_correct=instance.reference_status == Status.VERIFIED,
        problem_in_caption=instance.reference_status == Status.REJECTED
        and instance.rejection_reason == Reason.CAPTION,
        problem_in_gpt4=instance.reference_status == Status.REJECTED
        and instance.rejection_reason == Reason.RESPONSE,
    )


def visit_records(layout: str = "multi", source: str | None = None,
                  study=None) -> list[VisitRecord]:
    """Single- and multi-image instances whose images have URLs, as VisIT-Bench records.

    The single layout holds one image and no candidate/rating columns, so it takes only
    one-image instances and leaves those fields out; its ``output_human_annotated`` is the
    instance's reference. The multi layout's ``reference_output`` is the source dataset's label
    (``source_label``), as in the released file; the reference itself travels as
    ``gpt4_prediction`` with its ratings.
    """
    filters = {"kind__in": [Instance.Kind.SINGLE, Instance.Kind.MULTI]}
    if source:
        filters["source"] = source
    records = []
    for instance in _instances(study, **filters):
        images = list(instance.instance_images.all())
        if not images or (layout == "single" and len(images) != 1):
            continue
        if not all(ii.image.source_url for ii in images):
            continue  # the format needs an image URL (e.g. Prometheus rows name only a file)
        refs = [ImageRef(ii.image.source_url, ii.caption or None, ii.blip2_caption or None)
                for ii in images]
        record = VisitRecord(
            category=instance.family.name if instance.family else (instance.source or "unknown"),
            instruction=instance.instruction, images=refs,
            reference_output=(instance.source_label if layout == "multi"
                              else instance.reference_output) or None,
        )
        if layout == "multi":
            record.candidate_reference = instance.candidate_reference or None
            record.human_verification = _verification(instance)
            record.public_images_metadata = instance.extra.get("public_images_metadata", {})
        records.append(record)
    return records


def export_visitbench(layout: str = "multi", source: str | None = None, study=None) -> bytes:
    return write_visit_csv(VisitDataset(layout, visit_records(layout, source, study))
                           ).encode("utf-8")


def convbench_records(study=None) -> list[ConvBenchRecord]:
    records = []
    for number, instance in enumerate(_instances(study, kind=Instance.Kind.CONVERSATION),
                                      start=1):
        turns = [t.instruction for t in instance.turns.all()]
        image = next(iter(instance.instance_images.all()), None)
        image_id = instance.extra.get("image_id") or (image.image.external_id if image else "")
        records.append(ConvBenchRecord(int(instance.extra.get("convbench_id") or number),
                                       image_id, turns))
    return records


def export_convbench(study=None) -> bytes:
    return write_convbench_xlsx(convbench_records(study))


def prometheus_records(study=None) -> list[PrometheusRecord]:
    records = []
    for instance in _instances(study, rubrics__isnull=False).distinct():
        rubric = instance.rubrics.all()[0]
        extra = instance.extra
        kwargs = {"task_description": extra["task_description"]} if "task_description" in extra \
            else {}
        records.append(PrometheusRecord(
            image=extra.get("image", ""), instruction=instance.instruction,
            response=extra.get("response", ""),
            reference_answer=rubric.reference_answer or instance.reference_output,
            rubric=Rubric(rubric.criteria, [s for _, s in rubric.levels()]),
            extra=extra.get("extra", {}), **kwargs,
        ))
    return records


def export_prometheus(study=None) -> bytes:
    return write_prometheus_jsonl(prometheus_records(study)).encode("utf-8")


def _image_dump(image: Image) -> dict:
    """An image by its public UUID, URL and content hash; the storage names travel too so a
    database sharing the media storage keeps the files (the bytes themselves are not dumped)."""
    return {
        "uuid": str(image.uuid), "url": image.source_url, "sha256": image.sha256,
        "external_id": image.external_id, "license": image.license,
        "attribution": image.attribution, "width": image.width, "height": image.height,
        "format": image.format, "file": image.file.name or "",
        "thumbnail": image.thumbnail.name or "", "fetch_status": image.fetch_status,
        "fetch_error": image.fetch_error,
    }


def _family_dump(family: InstructionFamily) -> dict:
    through = InstructionFamily.seed_images.through
    seeds = (through.objects.filter(instructionfamily=family).select_related("image")
             .order_by("pk"))
    return {
        "uuid": str(family.uuid), "name": family.name, "skill": family.skill,
        "origin": family.origin, "multi_image": family.multi_image,
        "seed_instruction": family.seed_instruction, "seed_output": family.seed_output,
        "seed_images": [_image_dump(row.image) for row in seeds],
    }


def dump_jsonl(source: str | None = None, study=None) -> bytes:
    """Every instance of ``study`` (None: the default study) with everything we hold about it,
    one JSON object per line.

    No integer primary key appears: records refer to each other by UUID (instances, images,
    families, rubrics), so ``annotation.content.imports.jsonl_dump`` restores them into any database.
    """
    families: dict[int, dict] = {}
    lines = []
    for instance in _instances(study, **({"source": source} if source else {})):
        family = None
        if instance.family is not None:
            if instance.family_id not in families:
                families[instance.family_id] = _family_dump(instance.family)
            family = families[instance.family_id]
        lines.append(json.dumps({
            "uuid": str(instance.uuid), "kind": instance.kind, "source": instance.source,
            "external_id": instance.external_id, "family": family,
            "instruction": instance.instruction, "stage": instance.stage,
            "candidate_reference": instance.candidate_reference,
            "reference_output": instance.reference_output,
            "source_label": instance.source_label,
            "reference_status": instance.reference_status,
            "reference_rated_by": instance.reference_rated_by,
            "rejection_reason": instance.rejection_reason,
            "flagged_harmful": instance.flagged_harmful, "reference_meta": instance.reference_meta,
            "extra": instance.extra,
            "images": [{**_image_dump(ii.image), "caption": ii.caption,
                        "blip2_caption": ii.blip2_caption}
                       for ii in instance.instance_images.all()],
            "turns": [{"turn": t.turn, "capability": t.capability, "category": t.category,
                       "instruction": t.instruction, "reference_answer": t.reference_answer,
                       "focus_points": t.focus_points} for t in instance.turns.all()],
            "rubrics": [{"uuid": str(r.uuid), "criteria": r.criteria,
                         "scores": [s for _, s in r.levels()],
                         "reference_answer": r.reference_answer}
                        for r in instance.rubrics.all()],
        }, ensure_ascii=False))
    return ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8")


def export_dataset(fmt: str, *, layout: str = "multi", source: str | None = None,
                   study=None) -> bytes:
    """The one entry point the command and the pipeline page call; ``study``'s instances only
    (None: the default study)."""
    if fmt == "visitbench":
        return export_visitbench(layout, source, study)
    if fmt == "convbench":
        return export_convbench(study)
    if fmt == "prometheus":
        return export_prometheus(study)
    if fmt == "jsonl":
        return dump_jsonl(source, study)
    raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
