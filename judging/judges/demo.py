"""Demo judges of all six kinds, run over the demo study against a STAND-IN judge server.

The stand-in is the bundled loopback OpenAI-compatible server (``tests/support/fake_openai.py``):
its verdicts come from a hash of the prompt and say nothing about answer quality; they only show
the pipeline (orderings, parsing, extraction, costs, leaderboards, the ablation table) working.
Point a judge at a real endpoint by editing its base URL / model / API-key env var in the admin
and bumping its version.

``extend_demo(rnd)`` adds a small rubric per demo instance and two ConvBench-style conversations
(with responses under the three ablation conditions), creates the judges, and runs them when the
stand-in (or ``DEMO_JUDGE_BASE_URL``) is reachable; otherwise it starts the stand-in in-process
for the duration of the call. Safe to call again: judges are reused and cached calls are free.
"""
import os
import random
from decimal import Decimal

import httpx
from django.db import transaction

from annotation.models import ConversationTurn, Instance, InstanceImage, ScoreRubric

from ..models import EvalModel, Response
from ..services.responses import reference_model
from .ablation import ablation_comparisons
from .models import Judge
from .services import default_items, judge_run_execute, judge_run_start

STAND_IN_URL = "http://127.0.0.1:8765/v1"
STAND_IN_NOTE = ("STAND-IN judge: a bundled loopback server whose verdicts are derived from a "
                 "hash of the prompt (tests/support/fake_openai.py). Not a real model.")
KINDS = [(Judge.Kind.PAIRWISE, "Stand-in pairwise judge"),
         (Judge.Kind.PAIRWISE_REFERENCE, "Stand-in reference-backed judge"),
         (Judge.Kind.PAIRWISE_VLM, "Stand-in VLM judge"),
         (Judge.Kind.MULTI_TURN, "Stand-in multi-turn judge"),
         (Judge.Kind.RUBRIC, "Stand-in rubric judge"),
         (Judge.Kind.DIRECT, "Stand-in direct-grading judge")]
CONVERSATIONS = [
    ("What is drawn in the picture, and in which colours?",
     "Why might someone have drawn shapes like these?",
     "Write a four-line poem about the picture.",
     ["Does the poem mention the shapes?", "Does it mention the colours?"]),
    ("How many bars are in the chart?",
     "Which bar would you remove to make the trend clearer, and why?",
     "Write a one-paragraph caption for a newspaper using the chart.",
     ["Is the caption factual?", "Is it written for a general audience?"]),
]


def _reachable(base_url: str) -> bool:
    try:
        return httpx.get(base_url.rstrip("/") + "/models", timeout=0.5).status_code == 200
    except httpx.HTTPError:
        return False


@transaction.atomic
def _rubrics() -> int:
    made = 0
    for instance in Instance.objects.filter(source="demo", rubrics__isnull=True):
        ScoreRubric.objects.create(
            instance=instance, criteria="Does the response answer the instruction using what "
            "is actually visible in the image?", score1="Ignores the image or is wrong.",
            score2="Mostly wrong, with one correct detail.", score3="Partly correct.",
            score4="Correct but misses a detail.", score5="Correct, specific and complete.",
            reference_answer=instance.reference_output)
        made += 1
    return made


@transaction.atomic
def _conversations(rnd: random.Random) -> list:
    if Instance.objects.filter(source="demo-convbench").exists():
        return []
    template = InstanceImage.objects.filter(instance__source="demo").select_related("image")
    models = [m for m in EvalModel.objects.filter(name__in=["GPT-4V (demo)", "LLaVA-1.5 (demo)"])]
    made = []
    for i, (q1, q2, q3, focus) in enumerate(CONVERSATIONS):
        instance = Instance.objects.create(kind=Instance.Kind.CONVERSATION, instruction=q1,
                                           source="demo-convbench", stage=Instance.Stage.DONE)
        source = template[i] if len(template) > i else None
        if source is not None:
            InstanceImage.objects.create(instance=instance, image=source.image, position=0,
                                         caption=source.caption)
        refs = {}
        for turn, (capability, question) in enumerate(
                zip(("perception", "reasoning", "creation"), (q1, q2, q3), strict=True), 1):
            refs[turn] = f"(Reference, turn {turn}) A careful human answer to: {question}"
            ConversationTurn.objects.create(instance=instance, turn=turn, capability=capability,
                                            instruction=question, reference_answer=refs[turn],
                                            focus_points=focus if turn == 3 else [])
        for model in models:
            for condition, substituted in (("generated", ()), ("perfect_perception", (1,)),
                                           ("perfect_perception_reasoning", (1, 2))):
                for turn in (1, 2, 3):
                    text = refs[turn] if turn in substituted else (
                        f"{model.name} answers turn {turn} ({condition}): "
                        f"{rnd.choice(['briefly', 'in detail', 'with one mistake'])}.")
                    Response.objects.create(instance=instance, model=model, turn=turn,
                                            condition=condition, text=text)
        made.append(instance)
    for model in models:
        ablation_comparisons(model=model, instances=made)
    return made


def _judges(base_url: str) -> list[Judge]:
    judges = []
    for kind, name in KINDS:
        judge, _ = Judge.objects.get_or_create(name=name, version="demo-1", defaults={
            "kind": kind, "base_url": base_url, "model_name": "fake-judge-stand-in",
            "max_tokens": 512, "concurrency": 4, "k": 1, "notes": STAND_IN_NOTE,
            "send_images": kind == Judge.Kind.RUBRIC,
            "price_in_per_1k": Decimal("0.0025"), "price_out_per_1k": Decimal("0.01")})
        judges.append(judge)
    return judges


def extend_demo(rnd: random.Random) -> dict:
    """Create the demo judges and run them; returns a summary for the demo loader."""
    reference_model()
    rubrics = _rubrics()
    conversations = _conversations(rnd)
    base_url = os.environ.get("DEMO_JUDGE_BASE_URL", STAND_IN_URL)
    judges = _judges(base_url)
    server = None
    if not _reachable(base_url):
        if base_url != STAND_IN_URL:
            return {"judges": len(judges), "runs": 0, "rubrics": rubrics,
                    "conversations": len(conversations),
                    "note": f"judge server {base_url} unreachable; runs skipped"}
        from tests.support.fake_openai import FakeOpenAIServer

        server = FakeOpenAIServer(port=8765).start()
    runs = {}
    try:
        for judge in judges:
            items = default_items(judge)
            if not items:
                continue
            run = judge_run_execute(judge_run_start(judge=judge, item_uuids=items,
                                                    created_by="demo", dispatch=False))
            runs[judge.name] = (run.status, run.units_done, run.units_failed)
    finally:
        if server is not None:
            server.stop()
    return {"judges": len(judges), "runs": runs, "rubrics": rubrics,
            "conversations": len(conversations), "stand_in": base_url == STAND_IN_URL,
            "note": STAND_IN_NOTE}
