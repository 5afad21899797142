"""One service per pipeline transition; each is safe to run twice.

instruction submitted → ``instance_create_from_instruction`` (instance + caption task)
caption submitted     → ``captions_record`` (captions stored; LLM step queued after commit)
LLM step              → ``reference_generate`` (candidate stored; verification task queued)
verification answers  → ``verification_record`` (verified, or rejected with the reason)
admin bulk push       → ``pipeline_push`` (queues whatever a stage is waiting for)

Guards are conditional on the instance's stage and its current stage task, under a row lock, so a
repeated call (Celery redelivery, a double click) changes nothing. The LLM call never runs inside
a database transaction.
"""
from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from annotation.core.background import run_each_outside_request
from annotation.core.clients.llm import LlmError, estimate_cost, text_message
from annotation.engine.hit_types import get_hit_type
from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
from annotation.models import (
    Assignment,
    Batch,
    Image,
    Instance,
    InstanceImage,
    InstructionFamily,
    Task,
)
from annotation.pipeline.llm import llm_configured, llm_endpoint, reference_client
from annotation.pipeline.prompts import PROMPT_VERSION, build_reference_prompt
from annotation.pipeline.verdict import decide_verification
from studies.models import study_pk

log = logging.getLogger(__name__)

HIT_INSTRUCTION = "instruction_generation"
HIT_CAPTION = "instruction_caption"
HIT_VERIFICATION = "reference_verification"
Stage = Instance.Stage

_PIPELINE_BATCHES = {
    HIT_CAPTION: (
        "Pipeline: instruction-conditioned captions", "PIPELINE_CAPTION_ASSIGNMENTS",
        "Look at the image(s) and read the instruction. Write one dense caption per image, "
        "detailed enough that someone who only reads your text could follow the instruction. "
        "Mention exactly the details the instruction depends on (colours, counts, text, "
        "positions). Up to 2,000 characters per image.",
    ),
    HIT_VERIFICATION: (
        "Pipeline: verify candidate references", "PIPELINE_VERIFICATION_ASSIGNMENTS",
        "Read the caption(s), the instruction and the candidate response. Decide whether the "
        "response correctly follows the instruction. If not, say whether the caption was "
        "detailed enough (so the response is at fault) or underspecified.",
    ),
}


class PipelineError(Exception):
    """A transition asked of an instance that is not in the right state."""


# --- stage tasks ---------------------------------------------------------------------------

def pipeline_batch(hit_type: str, study=None) -> Batch:
    """``study``'s open batch collecting this stage's tasks (None: the default study's; created
    active on first use): an item's stage task sits in a batch of the item's study."""
    title, setting, instructions = _PIPELINE_BATCHES[hit_type]
    batch = (Batch.objects.filter(hit_type=hit_type, title=title, study_id=study_pk(study))
             .exclude(status=Batch.Status.FINISHED).order_by("-pk").first())
    if batch is None:
        batch = Batch.objects.create(
            hit_type=hit_type, title=title, instructions=instructions,
            assignments_per_task=getattr(settings, setting), status=Batch.Status.ACTIVE,
            description="Created by the benchmark-construction pipeline.",
            min_seconds=get_hit_type(hit_type).default_min_seconds(), study_id=study_pk(study),
        )
    return batch


def _queue_stage_task(instance: Instance, stage: str, hit_type: str) -> Task | None:
    with transaction.atomic():
        locked = Instance.objects.select_for_update().get(pk=instance.pk)
        if locked.stage != stage:
            return None
        if locked.stage_task_id:
            current = Task.objects.filter(pk=locked.stage_task_id, batch__hit_type=hit_type).first()
            if current is not None:
                return current
        batch = Batch.objects.select_for_update().get(
            pk=pipeline_batch(hit_type, locked.study_id).pk)
        if batch.status == Batch.Status.FINISHED:  # finished meanwhile (its work was all done)
            batch = Batch.objects.select_for_update().get(
                pk=pipeline_batch(hit_type, locked.study_id).pk)
        last = batch.tasks.aggregate(m=Max("position"))["m"] or 0
        task = Task.objects.create(batch=batch, position=last + 1,
                                   payload={"instance": str(locked.uuid)},
                                   max_assignments=batch.assignments_per_task)
        Instance.objects.filter(pk=locked.pk).update(stage_task=task)
        instance.stage_task = task
        return task


def caption_task_queue(instance: Instance) -> Task | None:
    """Captioning stage: make sure one caption task exists for the instance."""
    return _queue_stage_task(instance, Stage.CAPTIONING, HIT_CAPTION)


def verification_task_queue(instance: Instance) -> Task | None:
    """Verification stage: make sure one verification task exists for the instance."""
    return _queue_stage_task(instance, Stage.VERIFICATION, HIT_VERIFICATION)


# --- instruction generation ----------------------------------------------------------------

def instruction_batch_create(*, family: InstructionFamily, n_tasks: int, title: str = "",
                             assignments_per_task: int = 1, activate: bool = True, **options):
    """A batch asking workers for new (image URL, instruction) pairs of one family."""
    batch = batch_create_from_rows(
        hit_type=HIT_INSTRUCTION, title=title or f"New instructions: {family.name}",
        rows=[{"family": str(family.uuid)} for _ in range(n_tasks)],
        assignments_per_task=assignments_per_task,
        instructions=options.pop("instructions", (
            "Study the example. Find a publicly licensed image (e.g. on openverse.org) and write a "
            "new, creative instruction of the same family that cannot be followed without seeing "
            "the image. Give the image's direct URL and its licence.")), **options,
    )
    if activate:
        batch_set_status(batch, Batch.Status.ACTIVE)
    return batch


def instance_create_from_instruction(*, assignment: Assignment) -> Instance:
    """A submitted instruction becomes an instance in the captioning stage, with its task, in
    the study of the batch it was written for."""
    external_id = f"assignment:{assignment.uuid}"
    study_id = assignment.batch.study_id
    with transaction.atomic():
        existing = Instance.objects.filter(source="crowd", external_id=external_id,
                                           study_id=study_id).first()
        if existing is not None:
            return existing
        answer = assignment.answer
        family = InstructionFamily.objects.get(uuid=assignment.task.payload["family"])
        image = Image.objects.get(uuid=answer["image"])
        instance = Instance.objects.create(
            family=family, kind=Instance.Kind.SINGLE, instruction=answer["instruction"],
            source="crowd", external_id=external_id, stage=Stage.CAPTIONING, study_id=study_id,
            extra={"license": answer.get("license", ""), "image_url": answer["image_url"]},
        )
        InstanceImage.objects.create(instance=instance, image=image, position=0)
        caption_task_queue(instance)
    return instance


# --- captions ------------------------------------------------------------------------------

def captions_record(*, assignment: Assignment) -> bool:
    """Store the captions of a caption task and queue the LLM step after commit."""
    with transaction.atomic():
        instance = Instance.objects.select_for_update().get(uuid=assignment.task.payload["instance"])
        if instance.stage != Stage.CAPTIONING or instance.stage_task_id != assignment.task_id:
            return False
        captions = assignment.answer["captions"]
        images = list(instance.instance_images.order_by("position"))
        if len(captions) != len(images):
            raise PipelineError(f"{len(captions)} captions for {len(images)} images")
        for ii, caption in zip(images, captions, strict=True):
            ii.caption = caption
        InstanceImage.objects.bulk_update(images, ["caption"])
        Instance.objects.filter(pk=instance.pk).update(stage=Stage.REFERENCE, stage_task=None)
        _after_commit_generate(instance.pk)
    return True


def _after_commit_generate(*instance_ids: int) -> None:
    """The LLM step for these instances, once the transaction commits, never in the request
    that asked (a caption submit, an admin's push): a broker's workers, else one background
    thread of this process. An instance whose step was cut short stays in 'reference' and the
    next push queues it again."""
    from annotation.pipeline.tasks import generate_reference  # tasks import this module

    if instance_ids:
        transaction.on_commit(lambda: run_each_outside_request(
            generate_reference, [(pk,) for pk in instance_ids]), robust=True)


# --- the LLM reference step ----------------------------------------------------------------

def reference_generate(instance_id: int) -> str:
    """Ask the LLM for the candidate reference of an instance in the 'reference' stage.

    Returns ``generated``, ``skipped`` (not in this stage any more), ``not_configured``,
    ``failed`` (non-retryable provider error or refusal, recorded in ``reference_meta``).
    Raises ``LlmError`` with ``retryable`` set so the Celery task can retry later.
    """
    instance = Instance.objects.filter(pk=instance_id).first()
    if instance is None or instance.stage != Stage.REFERENCE:
        return "skipped"
    if not llm_configured():
        return "not_configured"
    captions = list(instance.instance_images.order_by("position").values_list("caption", flat=True))
    try:
        prompt = build_reference_prompt(instance.instruction, captions)
    except ValueError as exc:
        _record_error(instance.pk, str(exc))
        return "failed"
    config = llm_endpoint()
    try:
        with reference_client() as client:
            result = client.complete(
                [text_message("user", prompt)], temperature=settings.LLM_REFERENCE_TEMPERATURE,
                max_tokens=settings.LLM_REFERENCE_MAX_TOKENS,
                idempotency_key=f"reference-{instance.uuid}",
            )
    except LlmError as exc:
        _record_error(instance.pk, str(exc)[:500])
        if exc.retryable:
            raise
        return "failed"
    if result.refused:
        _record_error(instance.pk, f"refused: {result.refusal or result.finish_reason}")
        return "failed"
    meta = {
        "model": result.model or config.model, "provider": config.base_url.split("?")[0],
        "prompt_version": PROMPT_VERSION, "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "cost": estimate_cost(result.prompt_tokens, result.completion_tokens,
                              settings.LLM_PRICE_IN_PER_1K, settings.LLM_PRICE_OUT_PER_1K),
        "attempts": result.attempts, "latency_s": round(result.latency_s, 3),
        "generated_at": timezone.now().isoformat(),
    }
    with transaction.atomic():
        locked = Instance.objects.select_for_update().get(pk=instance.pk)
        if locked.stage != Stage.REFERENCE:
            return "skipped"
        locked.candidate_reference = result.text.strip()
        locked.reference_meta = meta
        locked.stage = Stage.VERIFICATION
        locked.stage_task = None
        locked.save(update_fields=["candidate_reference", "reference_meta", "stage", "stage_task"])
        verification_task_queue(locked)
    return "generated"


def _record_error(instance_id: int, message: str) -> None:
    with transaction.atomic():
        instance = Instance.objects.select_for_update().get(pk=instance_id)
        meta = dict(instance.reference_meta)
        meta.update(last_error=message, failed_at=timezone.now().isoformat())
        Instance.objects.filter(pk=instance_id).update(reference_meta=meta)


# --- verification --------------------------------------------------------------------------

def verification_record(*, assignment: Assignment) -> bool:
    """Once all of a verification task's answers are in, verify or reject the instance."""
    with transaction.atomic():
        instance = Instance.objects.select_for_update().get(uuid=assignment.task.payload["instance"])
        if instance.stage != Stage.VERIFICATION or instance.stage_task_id != assignment.task_id:
            return False
        answers = list(Assignment.objects.filter(
            task_id=assignment.task_id, counted=True,
            status__in=[Assignment.Status.SUBMITTED, Assignment.Status.APPROVED],
        ).values_list("answer", flat=True))
        if len(answers) < assignment.task.max_assignments:
            return False
        verified, reason, harmful = decide_verification(answers)
        instance.reference_status = (Instance.ReferenceStatus.VERIFIED if verified
                                     else Instance.ReferenceStatus.REJECTED)
        instance.rejection_reason = reason
        instance.flagged_harmful = harmful
        instance.reference_rated_by = Instance.RatedBy.CROWD
        instance.reference_output = instance.candidate_reference if verified else ""
        instance.stage, instance.stage_task = Stage.DONE, None
        instance.save(update_fields=["reference_status", "rejection_reason", "flagged_harmful",
                                     "reference_output", "reference_rated_by", "stage",
                                     "stage_task"])
    return True


# --- bulk push -----------------------------------------------------------------------------

PUSHABLE = (Stage.CAPTIONING, Stage.REFERENCE, Stage.VERIFICATION)


def pipeline_push(stage: str, *, limit: int | None = None, study=None) -> int:
    """Queue what ``stage`` is waiting for among ``study``'s instances (None: the default
    study's): caption or verification tasks for instances without one, or the LLM step for
    every instance in 'reference'. Returns how many were queued."""
    if stage not in PUSHABLE:
        raise PipelineError(f"stage must be one of {', '.join(PUSHABLE)}")
    waiting = (Instance.objects.filter(stage=stage, study_id=study_pk(study))
               .exclude(kind=Instance.Kind.CONVERSATION))
    if stage != Stage.REFERENCE:
        waiting = waiting.filter(stage_task__isnull=True)
    ids = list(waiting.order_by("pk").values_list("pk", flat=True)[:limit])
    if stage == Stage.REFERENCE:
        with transaction.atomic():
            _after_commit_generate(*ids)
        return len(ids)
    queue = caption_task_queue if stage == Stage.CAPTIONING else verification_task_queue
    with transaction.atomic():
        return sum(queue(instance) is not None for instance in Instance.objects.filter(pk__in=ids))


def images_fetch_queue(*, limit: int | None = None) -> int:
    """Queue downloads of images that only have a URL so far, outside the request (like the
    LLM step); a download cut short leaves its image pending for the next call."""
    from annotation.pipeline.tasks import fetch_image  # tasks import this module

    ids = list(Image.objects.filter(fetch_status=Image.FetchStatus.PENDING)
               .exclude(source_url="").order_by("pk").values_list("pk", flat=True)[:limit])
    if ids:
        transaction.on_commit(lambda: run_each_outside_request(fetch_image, [(pk,) for pk in ids]),
                              robust=True)
    return len(ids)
