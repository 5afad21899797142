"""Builders for judging tests: instances, models, responses, comparisons, conversations,
rubrics, and crowd votes cast through the engine."""
import itertools
from datetime import timedelta

from annotation.models import (
    ConversationTurn,
    Image,
    Instance,
    InstanceImage,
    InstructionFamily,
    ScoreRubric,
)
from judging.models import Comparison, EvalModel, Response

_ids = itertools.count(1)


def family(name="Chart reading", multi=False):
    return InstructionFamily.objects.get_or_create(name=name, defaults={"multi_image": multi})[0]


def instance(*, instruction=None, urls=None, category="Chart reading", kind="single",
             external_id=""):
    n = next(_ids)
    urls = urls if urls is not None else [f"https://example.org/img{n}.png"]
    if kind == "single" and len(urls) > 1:
        kind = "multi"
    inst = Instance.objects.create(
        family=family(category, multi=len(urls) > 1), kind=kind,
        instruction=instruction or f"What is shown in picture {n}?", stage="done",
        reference_status="verified", reference_output=f"Reference answer {n}.",
        external_id=external_id)
    for pos, url in enumerate(urls):
        image = Image.objects.filter(source_url=url).first() or Image.objects.create(source_url=url)
        InstanceImage.objects.create(instance=inst, image=image, position=pos)
    return inst


def models(*names, reference=None):
    out = {n: EvalModel.objects.get_or_create(name=n)[0] for n in names}
    if reference:
        out[reference] = EvalModel.objects.get_or_create(
            name=reference, defaults={"is_reference": True})[0]
    return out


def respond(inst, model, text=None, turn=0):
    return Response.objects.create(instance=inst, model=model, turn=turn,
                                   text=text or f"{model.name} says something about {inst.pk}/{turn}")


def comparison(model_a, model_b):
    """A comparison of the two models' responses on a new instance."""
    inst = instance()
    return Comparison.objects.create(instance=inst, response_a=respond(inst, model_a),
                                     response_b=respond(inst, model_b))


def crowd_batch(comparisons_and_votes, workers, **batch_options):
    """One active forced-choice batch over ``(comparison, votes)`` pairs, ``votes[k]`` cast by
    ``workers[k]`` through the engine (claim, submit); returns the batch."""
    from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
    from annotation.engine.services.claims import task_claim_next
    from annotation.engine.services.submissions import assignment_submit
    from annotation.models import Batch

    batch_options.setdefault("min_seconds", 0)  # the votes are cast at once
    batch = batch_create_from_rows(
        hit_type="pairwise_ab", title="crowd", assignments_per_task=len(workers),
        rows=[{"comparison": str(c.uuid)} for c, _ in comparisons_and_votes], **batch_options)
    batch_set_status(batch, Batch.Status.ACTIVE)
    plan = {str(c.uuid): votes for c, votes in comparisons_and_votes}
    for k, worker in enumerate(workers):
        while (a := task_claim_next(batch=batch, worker=worker)) is not None:
            assignment_submit(assignment=a, data={"choice": plan[a.task.payload["comparison"]][k]},
                              now=a.claimed_at + timedelta(seconds=5))
    return batch


def conversation(model_a, model_b):
    inst = instance(kind="conversation", instruction="Look at the picture.")
    questions = ["What objects are on the table?", "Why might the cup be empty?",
                 "Write a short story about the scene."]
    for turn, q in enumerate(questions, start=1):
        ConversationTurn.objects.create(
            instance=inst, turn=turn, capability=["perception", "reasoning", "creation"][turn - 1],
            instruction=q, focus_points=["Mentions the empty cup"] if turn == 3 else [])
        respond(inst, model_a, f"A answer to turn {turn}", turn=turn)
        respond(inst, model_b, f"B answer to turn {turn}", turn=turn)
    return inst


def rubric(inst):
    return ScoreRubric.objects.create(
        instance=inst, criteria="Does the response describe the chart accurately?",
        score1="Wrong", score2="Mostly wrong", score3="Partly right", score4="Mostly right",
        score5="Fully right", reference_answer="The tallest bar is the third one.")
