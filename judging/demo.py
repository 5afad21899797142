"""A small, truthful study for `make demo`, built through the real services.

Content: pictures drawn from seeds (``annotation.pipeline.demo_images``), instructions and
answers written from what each picture shows (``demo_texts``): the reference is true and
complete; a model's answer is true and complete, true but thin, or plausibly wrong, with a rate
that depends on the model's latent strength. No answer names its author or grades itself.
Facts and each answer's quality are kept in ``Instance.extra["demo"]`` so tests can check them.

Crowd work: stored comparisons sampled by ``comparisons_sample`` (sides randomised there) go to a
forced-choice batch with gold attention checks and to a multi-turn batch; a rubric batch (with
gold) and a which-feedback-is-better batch built from the rubric's own feedback. A simulated
crowd works through the real claim/submit services; each worker has a reliability (the chance
of preferring the better answer, of scoring within the rubric, of writing specific feedback).
So every leaderboard (Elo/Bradley–Terry, score board) comes from judgments the engine recorded.
"""
import random
from datetime import timedelta
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone

from annotation.content.imports.images import image_store_bytes
from annotation.engine.services.batches import batch_create_from_rows, batch_set_status
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.submissions import assignment_submit
from annotation.engine.services.workers import worker_for_external, worker_for_user
from annotation.models import (
    Batch,
    ConversationTurn,
    Instance,
    InstanceImage,
    InstructionFamily,
    ScoreRubric,
)
from annotation.pipeline import demo_images

from . import demo_texts
from .judges.plans import SUBSTITUTED
from .leaderboards import leaderboard_build
from .models import Comparison, EvalModel, Judgment, Response
from .services.comparisons import (
    comparison_batch_create,
    comparisons_sample,
    gold_comparison_create,
)
from .services.responses import REFERENCE_NAME

DEMO_PASSWORD = "demo-password"
SOURCE = "demo-visitbench"
CONVERSATION_SOURCE = "demo-convbench"
MODELS = {  # name -> (family, latent strength); invented models, labelled as such
    REFERENCE_NAME: (EvalModel.HUMAN_FAMILY, 2.0),
    "Vega-VL (demo)": ("vega", 1.2),
    "Orion-VL (demo)": ("orion", 0.5),
    "Lyra-VL (demo)": ("lyra", -0.2),
    "Pavo-VL (demo)": ("pavo", -1.0),
}
ABLATION_MODELS = ("Vega-VL (demo)", "Orion-VL (demo)")  # also answer the ConvBench conditions
# The simulated crowd: local workers without a login (the demo's batches run locally, where
# anna and ben work too; a batch takes workers of its own provider only), with reliabilities.
CROWD = [("local", "simulated-expert", 0.95), ("local", "simulated-careful", 0.9),
         ("local", "simulated-steady", 0.8), ("local", "simulated-hasty", 0.7),
         ("local", "simulated-noisy", 0.6), ("local", "simulated-guesser", 0.5)]
SPECIFIC_FEEDBACK = 0.8  # workers at least this reliable write what is right or wrong
# (family, skill, picture kind, question writers); two pictures per writer
SINGLE = [
    ("Shape counting", "Counting and naming colours", "shapes",
     (demo_texts.shapes_count, demo_texts.shapes_colours, demo_texts.shapes_most)),
    ("Chart understanding", "Reading values from a chart", "bars",
     (demo_texts.bars_tallest, demo_texts.bars_range, demo_texts.bars_order)),
    ("Scene description", "Describing a simple scene", "scene",
     (demo_texts.scene_trees, demo_texts.scene_colours, demo_texts.scene_sun)),
]
DIFFERENCE = ("Spot the difference", "Comparing two images")
CONVERSATIONS = [("shapes", demo_texts.shapes_conversation),
                 ("bars", demo_texts.bars_conversation),
                 ("scene", demo_texts.scene_conversation)]
RUBRIC_LEVELS = ("Wrong about the picture, or ignores it.",
                 "Mostly wrong, with one true detail.",
                 "Partly right: the main fact is right but part of the instruction is missed.",
                 "Right, but leaves out a detail the instruction asks for.",
                 "Right and complete: every part of the instruction answered as drawn.")
RUBRIC_SCORE = {2: 5, 1: 3, 0: 1}  # what a reliable rater gives each answer quality
VAGUE_FEEDBACK = "Seems fine to me overall, nothing in particular stands out."


def error_rate(strength: float) -> float:
    return min(0.9, max(0.0, 0.5 - 0.25 * strength))


def detail_rate(strength: float) -> float:
    return min(1.0, max(0.1, 0.5 + 0.25 * strength))


@transaction.atomic
def _users():
    User = get_user_model()
    groups = {n: Group.objects.get_or_create(name=n)[0]
              for n in ("annotator", "analyst", "submitter")}
    # sam submits models: kit → submission → the stand-in judge → the board (make demo)
    specs = [("admin", True, None), ("analyst", False, "analyst"),
             ("anna", False, "annotator"), ("ben", False, "annotator"),
             ("sam", False, "submitter")]
    users = {}
    for name, staff, group in specs:
        user, created = User.objects.get_or_create(
            username=name, defaults={"is_staff": staff, "is_superuser": staff})
        if created:
            user.set_password(DEMO_PASSWORD)
            user.save()
        if group:
            user.groups.add(groups[group])
        users[name] = user
    return users


# ------------------------------------------------------------------ content


def _picture(kind: str, seed: int):
    picture = demo_images.picture(kind, seed)
    image = image_store_bytes(picture.png, license="CC0 (generated)",
                              attribution="Drawn by the demo generator")
    return picture, image


def _instance(*, family, kind, source, instruction, pictures, reference="", extra=None):
    """An instance showing ``pictures`` (list of (Picture, Image)), captioned truthfully."""
    verified = {"reference_output": reference,
                "reference_status": Instance.ReferenceStatus.VERIFIED} if reference else {}
    instance = Instance.objects.create(
        family=family, kind=kind, instruction=instruction, source=source,
        stage=Instance.Stage.DONE, **verified,
        extra={"demo": {"pictures": [{"kind": p.kind, "seed": p.seed} for p, _ in pictures],
                        **(extra or {})}})
    for position, (picture, image) in enumerate(pictures):
        InstanceImage.objects.create(instance=instance, image=image, position=position,
                                     caption=demo_images.caption(picture.kind, picture.facts))
    return instance


def _rubric(instance: Instance, question: demo_texts.Question) -> None:
    ScoreRubric.objects.create(
        instance=instance, criteria=question.criteria,
        **{f"score{i}": text for i, text in enumerate(RUBRIC_LEVELS, start=1)},
        reference_answer=question.reference())


def _answer(model: str, question, rnd: random.Random, *, easier: bool = False):
    strength = MODELS[model][1] + (1.0 if easier else 0.0)
    return question.answer(rnd, error_rate=error_rate(strength),
                           detail_rate=detail_rate(strength))


def _single(rnd: random.Random, models: dict) -> list[Instance]:
    """Single-image instances (three questions × two pictures per kind) and spot-the-
    difference pairs, each with every model's answer and a rubric."""
    made, seed = [], 100
    for fam_name, skill, kind, writers in SINGLE:
        family, _ = InstructionFamily.objects.get_or_create(name=fam_name,
                                                            defaults={"skill": skill})
        for writer in writers:
            for _ in range(2):
                seed += 1
                picture, image = _picture(kind, seed)
                made.append(_answered(family, writer(picture.facts), [(picture, image)],
                                      Instance.Kind.SINGLE, rnd, models))
    family, _ = InstructionFamily.objects.get_or_create(
        name=DIFFERENCE[0], defaults={"skill": DIFFERENCE[1], "multi_image": True})
    for _ in range(3):
        seed += 1
        before, after = _picture("shapes", seed), _picture("changed", seed)
        question = demo_texts.spot_difference(before[0].facts, after[0].facts)
        made.append(_answered(family, question, [before, after], Instance.Kind.MULTI, rnd,
                              models))
    return made


def _answered(family, question, pictures, kind, rnd, models) -> Instance:
    answers = {name: _answer(name, question, rnd) for name in models if name != REFERENCE_NAME}
    instance = _instance(family=family, kind=kind, source=SOURCE,
                         instruction=question.instruction, pictures=pictures,
                         reference=question.reference(),
                         extra={"quality": {n: a.quality for n, a in answers.items()},
                                "notes": {n: a.note for n, a in answers.items()}})
    Response.objects.bulk_create(Response(instance=instance, model=models[name], text=a.text)
                                 for name, a in answers.items())
    _rubric(instance, question)
    return instance


def _conversations(rnd: random.Random, models: dict) -> list[Instance]:
    """Three-turn conversations, one per picture kind; every model answers the ``generated``
    condition, the ablation models also the two ConvBench conditions (substituted turns hold
    the reference text; later turns are then a little easier)."""
    made = []
    for number, (kind, writer) in enumerate(CONVERSATIONS):
        picture, image = _picture(kind, 500 + number)
        questions = writer(picture.facts)
        quality: dict[str, dict[str, list[int]]] = {}
        instance = _instance(family=None, kind=Instance.Kind.CONVERSATION,
                             source=CONVERSATION_SOURCE, instruction=questions[0].instruction,
                             pictures=[(picture, image)])
        for turn, (capability, question) in enumerate(
                zip(("perception", "reasoning", "creation"), questions, strict=True), start=1):
            ConversationTurn.objects.create(
                instance=instance, turn=turn, capability=capability,
                instruction=question.instruction, reference_answer=question.reference(),
                focus_points=list(question.focus_points))
        for name, model in models.items():
            if name == REFERENCE_NAME:
                continue
            conditions = list(SUBSTITUTED) if name in ABLATION_MODELS else \
                [Response.Condition.GENERATED]
            for condition in conditions:
                substituted = SUBSTITUTED[condition]
                qualities = []
                for turn, question in enumerate(questions, start=1):
                    if turn in substituted:
                        text, q = question.reference(), 2
                    else:
                        answer = _answer(name, question, rnd, easier=bool(substituted))
                        text, q = answer.text, answer.quality
                    Response.objects.create(instance=instance, model=model, turn=turn,
                                            condition=condition, text=text)
                    qualities.append(q)
                quality.setdefault(name, {})[condition] = qualities
        instance.extra["demo"]["quality"] = quality
        instance.save(update_fields=["extra"])
        made.append(instance)
    return made


@transaction.atomic
def _content(rnd: random.Random) -> tuple[list[Instance], list[Instance]]:
    models = {}
    for name, (family, _) in MODELS.items():
        models[name], _ = EvalModel.objects.get_or_create(
            name=name, defaults={"family": family,
                                 "is_reference": family == EvalModel.HUMAN_FAMILY})
    return _single(rnd, models), _conversations(rnd, models)


# ------------------------------------------------------------------ the simulated crowd


def quality_of(response: Response) -> int:
    """The demo's own grade of an answer (2 complete, 1 thin, 0 wrong); references are 2."""
    if response.model.is_reference:
        return 2
    quality = response.instance.extra["demo"]["quality"][response.model.name]
    if isinstance(quality, dict):  # a conversation: per condition, per turn
        return quality[response.condition][response.turn - 1]
    return quality


def _prefer(q_a: float, q_b: float, reliability: float, rnd: random.Random) -> str:
    """A or B: the better side with probability ``reliability``; equal answers a coin flip."""
    if q_a == q_b:
        return rnd.choice("AB")
    better = "A" if q_a > q_b else "B"
    return better if rnd.random() < reliability else "AB"[better == "A"]


def _pairwise_answer(task, reliability, rnd) -> dict:
    comparison = Comparison.objects.select_related(
        "response_a__model", "response_b__model", "response_a__instance",
        "response_b__instance").get(uuid=task.payload["comparison"])
    return {"choice": _prefer(quality_of(comparison.response_a),
                              quality_of(comparison.response_b), reliability, rnd)}


def _multiturn_answer(task, reliability, rnd) -> dict:
    comparison = Comparison.objects.select_related(
        "response_a__model", "response_b__model").get(uuid=task.payload["comparison"])
    sides = {}
    for side, anchor in (("A", comparison.response_a), ("B", comparison.response_b)):
        turns = Response.objects.select_related("model", "instance").filter(
            instance_id=anchor.instance_id, model_id=anchor.model_id,
            condition=anchor.condition).order_by("turn")
        sides[side] = [quality_of(r) for r in turns]
    answer = {f"turn{t}": _prefer(a, b, reliability, rnd)
              for t, (a, b) in enumerate(zip(sides["A"], sides["B"], strict=True), start=1)}
    answer["overall"] = _prefer(sum(sides["A"]), sum(sides["B"]), reliability, rnd)
    return answer


def _rubric_answer(task, reliability, rnd) -> dict:
    response = Response.objects.select_related("model", "instance").get(
        uuid=task.payload["response"])
    score = RUBRIC_SCORE[quality_of(response)]
    if rnd.random() > reliability:
        score = min(5, max(1, score + rnd.choice((-1, 1))))
    specific = reliability >= SPECIFIC_FEEDBACK and not response.model.is_reference
    return {"score": str(score), "feedback": response.instance.extra["demo"]["notes"][
        response.model.name] if specific else VAGUE_FEEDBACK}


def _feedback_answer(task, reliability, rnd) -> dict:
    found = {str(j.uuid): j.feedback for j in Judgment.objects.filter(
        uuid__in=[task.payload["judgment_a"], task.payload["judgment_b"]])}
    vague = [found[task.payload[k]] == VAGUE_FEEDBACK for k in ("judgment_a", "judgment_b")]
    return {"choice": _prefer(not vague[0], not vague[1], reliability, rnd)}


ANSWER = {"pairwise_ab": _pairwise_answer, "multiturn_ab": _multiturn_answer,
          "rubric_score": _rubric_answer, "feedback_ab": _feedback_answer}


def _simulate(batch: Batch, rnd: random.Random, share: float, clock) -> tuple[int, object]:
    """The crowd works side by side (one task each, in a random order per round) through
    claim and submit, until each worker has done ``share`` of the batch's tasks or nothing is
    left for them."""
    answer = ANSWER[batch.hit_type]
    done = 0
    budget = int(batch.tasks.count() * share)
    crowd = [(worker_for_external(provider, external_id), reliability)
             for provider, external_id, reliability in CROWD]
    for _ in range(budget):
        for worker, reliability in rnd.sample(crowd, len(crowd)):
            assignment = task_claim_next(batch=batch, worker=worker, now=clock)
            if assignment is None:
                continue
            clock += timedelta(seconds=rnd.uniform(8, 60))
            assignment_submit(assignment=assignment,
                              data=answer(assignment.task, reliability, rnd), now=clock)
            done += 1
    return done, clock


# ------------------------------------------------------------------ batches


def _activate(batch: Batch) -> Batch:
    return batch_set_status(batch, Batch.Status.ACTIVE)


def _rating_batches(single, conversations, rnd: random.Random, seed: int) -> list[Batch]:
    """Forced choice (with gold) and multi-turn batches from sampled stored comparisons."""
    compared = comparisons_sample(mode="uniform", tuples=48, seed=seed, instances=Instance
                                  .objects.filter(pk__in=[i.pk for i in single]))
    conversational = comparisons_sample(mode="uniform", tuples=12, seed=seed + 1,
                                        instances=Instance.objects.filter(
                                            pk__in=[i.pk for i in conversations]))
    gold = []
    for instance in rnd.sample(single, len(single)):
        quality = instance.extra["demo"]["quality"]
        wrong = sorted(name for name, q in quality.items() if q == 0)
        if wrong and len(gold) < 6:
            responses = {r.model.name: r for r in instance.responses.select_related("model")}
            gold.append(gold_comparison_create(better=responses[REFERENCE_NAME],
                                               worse=responses[wrong[0]],
                                               seed=seed + len(gold)))
    pairwise = comparison_batch_create(
        comparisons=compared, title="Demo: which response is better?", gold=gold,
        gold_rate=0.08, seed=seed, judgments_per_comparison=5, reward=Decimal("0.08"),
        description="Compare two answers about an image and pick the better one.",
        instructions="Read the instruction and look at the image(s). Then choose the response "
                     "that better follows the instruction: true to the image, complete, "
                     "specific. There are no ties — pick the better one even if both are weak.",
        min_seconds=3)
    multiturn = comparison_batch_create(
        comparisons=conversational, title="Demo: which assistant handled the conversation "
        "better?", seed=seed, judgments_per_comparison=3, reward=Decimal("0.20"),
        description="Three questions about one image, two assistants: pick the better answer "
                    "to each question and overall.", min_seconds=5)
    return [_activate(pairwise), _activate(multiturn)]


def _rubric_batch(single, rnd: random.Random) -> Batch:
    """A rubric batch over two models' answers per instance, with honest gold: an answer the
    demo wrote wrong must score 1–2, a complete one 4–5."""
    rows, gold = [], []
    for instance in single:
        responses = list(instance.responses.select_related("model").filter(
            model__is_reference=False).order_by("model__name"))
        picked = rnd.sample(responses, 2)
        rows += [{"response": str(r.uuid)} for r in picked]
        quality = instance.extra["demo"]["quality"]
        spare = [r for r in responses if r not in picked and quality[r.model.name] != 1]
        if spare and len(gold) < 4:
            score = RUBRIC_SCORE[quality[spare[0].model.name]]
            gold.append({"response": str(spare[0].uuid),
                         "_gold_answer": {"score": score, "tolerance": 1}})
    for row in gold:
        rows.insert(rnd.randint(0, len(rows)), row)
    return _activate(batch_create_from_rows(
        hit_type="rubric_score", title="Demo: score answers with a rubric", rows=rows,
        assignments_per_task=3, reward=Decimal("0.12"), min_seconds=5,
        description="Score one answer from 1 to 5 with the rubric and say why.",
        instructions="Look at the image(s) and the instruction, read the rubric, then give the "
                     "score whose description fits the answer best and explain it in a "
                     "sentence or two: what is right, what is missing or wrong."))


def _feedback_batch(rubric: Batch, rnd: random.Random) -> Batch | None:
    """Pairs of feedback written on the same answer in the rubric batch — one specific, one
    vague — on random sides."""
    by_response: dict[int, dict[bool, Judgment]] = {}
    for judgment in Judgment.objects.filter(assignment__batch=rubric,
                                            kind=Judgment.Kind.SCORE).order_by("pk"):
        by_response.setdefault(judgment.response_id, {})[
            judgment.feedback == VAGUE_FEEDBACK] = judgment
    rows = []
    for pair in by_response.values():
        if len(pair) == 2 and len(rows) < 12:
            a, b = pair[False], pair[True]
            if rnd.random() < 0.5:
                a, b = b, a
            rows.append({"judgment_a": str(a.uuid), "judgment_b": str(b.uuid)})
    if not rows:
        return None
    return _activate(batch_create_from_rows(
        hit_type="feedback_ab", title="Demo: which feedback is better?", rows=rows,
        assignments_per_task=3, reward=Decimal("0.06"), min_seconds=3,
        description="Two raters explained a score; pick the more useful explanation.",
        instructions="Read the answer, then the two explanations of its score. Pick the one "
                     "that says more precisely what is right or wrong about the answer."))


def _own_work(batch: Batch, worker, rnd: random.Random, n: int, clock) -> int:
    """A few honest submissions by a demo login, so 'My work' is not empty."""
    done = 0
    for _ in range(n):
        assignment = task_claim_next(batch=batch, worker=worker, now=clock)
        if assignment is None:
            break
        clock += timedelta(seconds=rnd.uniform(15, 40))
        assignment_submit(assignment=assignment,
                          data=ANSWER[batch.hit_type](assignment.task, 0.95, rnd), now=clock)
        done += 1
    return done


@transaction.atomic
def load_demo(seed: int = 7) -> dict:
    """Create the demo study (idempotent: does nothing when it already exists)."""
    users = _users()
    if Instance.objects.filter(source=SOURCE).exists():
        return {"users": list(users), "created": False, "leaderboard": _human_leaderboard()}
    rnd = random.Random(seed)
    single, conversations = _content(rnd)
    pairwise, multiturn = _rating_batches(single, conversations, rnd, seed)
    rubric = _rubric_batch(single, rnd)
    clock = timezone.now() - timedelta(hours=6)  # simulated time: workers read for 8-60 s
    submitted = 0
    # shares leave work in every batch for the demo annotators (anna, ben)
    for batch, share in ((pairwise, 0.7), (multiturn, 0.3), (rubric, 0.35)):
        done, clock = _simulate(batch, rnd, share, clock)
        submitted += done
    feedback = _feedback_batch(rubric, rnd)
    if feedback is not None:
        done, clock = _simulate(feedback, rnd, 0.3, clock)
        submitted += done
    worker_for_user(users["ben"])  # ben starts with nothing done: only available work
    submitted += _own_work(pairwise, worker_for_user(users["anna"]), rnd, 3, clock)
    batches = [b for b in (pairwise, multiturn, rubric, feedback) if b is not None]
    return {"users": list(users), "created": True,
            "comparisons": Comparison.objects.filter(instance__source__in=[
                SOURCE, CONVERSATION_SOURCE]).exclude(sampling="gold").count(),
            "submitted": submitted, "batches": [str(b.uuid) for b in batches],
            "leaderboard": _human_leaderboard()}


def _human_leaderboard() -> list[dict]:
    """The human leaderboard (page: /eval/leaderboard/) from the crowd's recorded judgments."""
    return leaderboard_build(Judgment.HUMAN, "all", bootstrap_rounds=200).rows
