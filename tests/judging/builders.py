"""Builders for judging tests: instances, models, responses, conversations, rubrics."""
import itertools

from annotation.models import (
    ConversationTurn,
    Image,
    Instance,
    InstanceImage,
    InstructionFamily,
    ScoreRubric,
)
from judging.models import EvalModel, Response

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
