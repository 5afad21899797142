"""Demo content for the construction pipeline: instances waiting in every stage.

Pictures of coloured squares are drawn from seeds (``demo_images``); the family's seed example,
every caption and every candidate reference is written from what the picture shows. Candidates
waiting for verification are one true and one plausibly wrong, so "No" is sometimes the honest
answer; finished instances were verified when true and rejected when wrong (once because the
caption left the colours out). Seeds and whether each candidate is true are kept in
``Instance.extra["demo"]`` for the truth tests.

The LLM step runs only when ``LLM_BASE_URL`` is configured (e.g. the loopback stand-in
``tests/support/fake_openai.py``); otherwise those instances wait in the 'reference' stage, as
they would in production without a provider.
"""
from __future__ import annotations

import random

from django.db import transaction

from annotation.content.imports.images import image_store_bytes
from annotation.models import Instance, InstanceImage, InstructionFamily
from annotation.pipeline import demo_images
from annotation.pipeline import services as pipeline
from annotation.pipeline.llm import llm_configured

FAMILY = "Demo pipeline: colour and counting"
SEED_PICTURE = 1  # the family's example picture
MOST = "Which colour appears most often?"
BUSIEST = "In which picture are there the most squares?"
ORDINALS = ("first", "second", "third")


def _store(picture: demo_images.Picture):
    return image_store_bytes(picture.png, license="CC0 (generated)",
                             attribution="Drawn by the demo generator")


def _pictures(seed: int, n: int) -> list[demo_images.Picture]:
    """``n`` squares pictures from ``seed`` on, skipping seeds until the totals all differ
    (so "which picture has the most squares" has one answer)."""
    pictures: list[demo_images.Picture] = []
    while len(pictures) < n:
        picture = demo_images.squares(seed)
        seed += 1
        if len(picture.facts["shapes"]) not in {len(p.facts["shapes"]) for p in pictures}:
            pictures.append(picture)
    return pictures


def seed_output(facts: dict) -> str:
    counts = sorted(demo_images.colour_counts(facts).items(), key=lambda kv: (-kv[1], kv[0]))
    parts = [demo_images.n_of(n, f"{colour} square") for colour, n in counts]
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"There are {listed}."


def _candidate(question: str, pictures, *, true: bool) -> str:
    """The answer to ``question`` about ``pictures``: the true one, or a plausible wrong one."""
    if question == MOST:
        counts = sorted(demo_images.colour_counts(pictures[0].facts).items(),
                        key=lambda kv: (-kv[1], kv[0]))
        colour, n = counts[0] if true else counts[1]
        return (f"{colour.capitalize()} appears most often: {demo_images.n_of(n, 'square')} "
                f"{'is' if n == 1 else 'are'} {colour}.")
    totals = [len(p.facts["shapes"]) for p in pictures]
    ranked = sorted(range(len(totals)), key=lambda i: -totals[i])
    index = ranked[0] if true else ranked[1]
    return (f"The {ORDINALS[index]} picture, with {demo_images.n_of(totals[index], 'square')}.")


def _instance(family, seed, *, n_images, stage, captioned=True, candidate=None,
              underspecified=False, **fields) -> Instance:
    """An instance over ``n_images`` squares pictures. ``candidate`` (True/False) adds a true
    or a wrong candidate reference; ``underspecified`` captions leave the colours out."""
    pictures = _pictures(seed, n_images)
    question = MOST if n_images == 1 else BUSIEST
    extra = {"pictures": [{"kind": p.kind, "seed": p.seed} for p in pictures]}
    if candidate is not None:
        fields["candidate_reference"] = _candidate(question, pictures, true=candidate)
        extra["candidate_true"] = candidate
    instance = Instance.objects.create(
        family=family, kind=Instance.Kind.MULTI if n_images > 1 else Instance.Kind.SINGLE,
        source="demo", stage=stage, instruction=question, extra={"demo": extra}, **fields)
    for position, picture in enumerate(pictures):
        caption = demo_images.caption(picture.kind, picture.facts)
        if underspecified:
            caption = (f"{demo_images.n_of(len(picture.facts['shapes']), 'square').capitalize()}"
                       " on an off-white background.")
        InstanceImage.objects.create(instance=instance, image=_store(picture), position=position,
                                     caption=caption if captioned else "")
    return instance


@transaction.atomic
def _content(rnd: random.Random) -> dict:
    example = demo_images.squares(SEED_PICTURE)
    family = InstructionFamily.objects.create(
        name=FAMILY, skill="Counting and naming colours",
        seed_instruction="How many squares of each colour are there?",
        seed_output=seed_output(example.facts))
    family.seed_images.add(_store(example))
    batch = pipeline.instruction_batch_create(family=family, n_tasks=3, title="Demo: new "
                                              "instructions (colour and counting)")
    Stage, Status = Instance.Stage, Instance.ReferenceStatus
    start = rnd.randrange(1000, 100000, 1000)
    seeds = iter(range(start, start + 1000, 10))  # each instance's pictures: its own seeds
    captioning = [_instance(family, next(seeds), n_images=n, stage=Stage.CAPTIONING,
                            captioned=False) for n in (1, 2)]
    for instance in captioning:
        pipeline.caption_task_queue(instance)
    reference = [_instance(family, next(seeds), n_images=n, stage=Stage.REFERENCE)
                 for n in (1, 2, 1)]
    verification = []
    for n, true in ((1, True), (3, False)):
        instance = _instance(family, next(seeds), n_images=n, stage=Stage.VERIFICATION,
                             candidate=true, reference_meta={"model": "demo (canned text)",
                                                             "prompt_version": "demo"})
        pipeline.verification_task_queue(instance)
        verification.append(instance)
    outcomes = [(True, Status.VERIFIED, "", False), (True, Status.VERIFIED, "", False),
                (False, Status.REJECTED, Instance.RejectionReason.CAPTION, True),
                (False, Status.REJECTED, Instance.RejectionReason.RESPONSE, False)]
    done = []
    for i, (true, status, reason, underspecified) in enumerate(outcomes):
        instance = _instance(family, next(seeds), n_images=1 + i % 2, stage=Stage.DONE,
                             candidate=true, underspecified=underspecified,
                             reference_status=status, rejection_reason=reason)
        if status == Status.VERIFIED:
            Instance.objects.filter(pk=instance.pk).update(
                reference_output=instance.candidate_reference)
        done.append(instance)
    return {"family": family, "instruction_batch": batch, "reference": reference,
            "counts": {"instruction tasks": 3, "captioning": len(captioning),
                       "reference": len(reference), "verification": len(verification),
                       "done": len(done)}}


def extend_demo(rnd: random.Random) -> dict:
    """Add the pipeline demo (idempotent). Returns counts per stage."""
    if InstructionFamily.objects.filter(name=FAMILY).exists():
        return {"created": False}
    content = _content(rnd)
    generated = 0
    if llm_configured():  # leave one waiting so every stage stays visible
        for instance in content["reference"][:-1]:
            generated += pipeline.reference_generate(instance.pk) == "generated"
    return {"created": True, "stages": content["counts"], "references_generated": generated,
            "instruction_batch": str(content["instruction_batch"].uuid)}
