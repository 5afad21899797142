"""Fixtures for the automatic-judge tests: a real loopback OpenAI server and content builders."""
import io
import itertools
from decimal import Decimal

import pytest
from django.core.files.base import ContentFile
from PIL import Image as PILImage

from annotation.models import (
    ConversationTurn,
    Image,
    Instance,
    InstanceImage,
    ScoreRubric,
)
from judging.judges.calls import close_clients
from judging.judges.models import Judge
from judging.models import Comparison, EvalModel, Response
from tests.support.fake_openai import FakeOpenAIServer

_ids = itertools.count(1)


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv
    close_clients()


def png_bytes(color=(200, 40, 40)) -> bytes:
    out = io.BytesIO()
    PILImage.new("RGB", (8, 8), color).save(out, "PNG")
    return out.getvalue()


def make_judge(server, kind="pairwise", **kw) -> Judge:
    defaults = dict(name=f"judge-{next(_ids)}", version="1", kind=kind, base_url=server.base_url,
                    model_name="stand-in", max_tokens=256, concurrency=1, max_retries=3,
                    backoff_base_s=0.01, backoff_max_s=0.05, timeout_s=5,
                    price_in_per_1k=Decimal("0.01"), price_out_per_1k=Decimal("0.03"))
    defaults.update(kw)
    return Judge.objects.create(**defaults)


def make_models(*names):
    return [EvalModel.objects.get_or_create(name=n)[0] for n in names]


def reference_model():
    return EvalModel.objects.get_or_create(name="Human reference",
                                           defaults={"is_reference": True})[0]


def make_instance(*, kind=Instance.Kind.SINGLE, caption="A red square on white.",
                  with_file=False, reference="The square is red."):
    n = next(_ids)
    instance = Instance.objects.create(kind=kind, instruction=f"What colour is shape {n}?",
                                       reference_output=reference, stage="done")
    image = Image(source_url=f"https://example.org/{n}.png")
    if with_file:
        image.format = "PNG"
        image.file.save(f"judge-test-{n}.png", ContentFile(png_bytes()), save=False)
    image.save()
    InstanceImage.objects.create(instance=instance, image=image, position=0, caption=caption)
    return instance


def make_comparison(model_a, model_b, **kw) -> Comparison:
    instance = make_instance(**kw)
    ra = Response.objects.create(instance=instance, model=model_a, text=f"{model_a} answer {instance.pk}")
    rb = Response.objects.create(instance=instance, model=model_b, text=f"{model_b} answer {instance.pk}")
    return Comparison.objects.create(instance=instance, response_a=ra, response_b=rb)


def make_comparisons(n: int) -> list[Comparison]:
    """``n`` comparisons of models m1 and m2, one instance each."""
    m1, m2 = make_models("m1", "m2")
    return [make_comparison(m1, m2) for _ in range(n)]


# A judge's answer for the first response, in the format the strict parser reads.
VERDICT = "Step 1: compared.\nOverall, Response A is better."


def make_conversation_instance(focus=("Is the poem romantic?",)) -> Instance:
    instance = make_instance(kind=Instance.Kind.CONVERSATION, reference="")
    for turn, capability in ((1, "perception"), (2, "reasoning"), (3, "creation")):
        ConversationTurn.objects.create(
            instance=instance, turn=turn, capability=capability,
            instruction=f"Turn {turn} question about {instance.pk}?",
            reference_answer=f"Reference turn {turn} of {instance.pk}.",
            focus_points=list(focus) if turn == 3 else [])
    return instance


def conversation_responses(instance, model, condition="generated", texts=None):
    """Three turns; substituted turns hold the reference text (as the ablation import stores)."""
    from judging.judges.plans import SUBSTITUTED

    refs = {t.turn: t.reference_answer for t in instance.turns.all()}
    out = {}
    for turn in (1, 2, 3):
        if turn in SUBSTITUTED[condition] or model.is_reference:
            text = refs[turn]
        else:
            text = (texts or {}).get(turn, f"{model.name} {condition} turn {turn}")
        out[turn] = Response.objects.create(instance=instance, model=model, turn=turn,
                                            condition=condition, text=text)
    return out


def make_rubric(instance) -> ScoreRubric:
    return ScoreRubric.objects.create(
        instance=instance, criteria="Does the response name the colour correctly?",
        score1="Wrong colour.", score2="Vague.", score3="Partly right.", score4="Right.",
        score5="Right and precise.", reference_answer="It is a red square.")
