"""The demo tells the truth: blind texts, answers that match the pictures they are about,
randomised sides, every HIT type, honest gold, a score leaderboard, and a second load that
changes nothing.

Facts are re-derived here, independently of the demo's writers: each picture is redrawn from
its stored kind and seed (same bytes as the stored image), and what a text claims (colour words,
numbers) is compared with what was drawn.
"""
import hashlib
import random
import re

import pytest
from django.apps import apps

from annotation.engine.hit_types import all_hit_types
from annotation.models import Batch, ConversationTurn, Instance, InstructionFamily, Task
from annotation.pipeline import demo as pipeline_demo_module
from annotation.pipeline import demo_images
from annotation.pipeline.demo import extend_demo as pipeline_demo
from judging.demo import CONVERSATION_SOURCE, MODELS, SOURCE, load_demo
from judging.judges.demo import extend_demo as judges_demo
from judging.leaderboards import leaderboard_build, score_leaderboard_build
from judging.models import Comparison, EvalModel, Judgment, Response

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

SELF_PRAISE = ("detailed", "accurate", "careful", "excellent", "high-quality", "correct answer",
               "reference", "human", "assistant", "as an ai", "language model", "gpt", "llava",
               "demo", "turn 1", "(a)", "(b)")
COLOUR_WORDS = set(demo_images.COLOURS) | {"brown", "orange", "pink", "black", "white", "grey"}
NUMBER_WORDS = {w: n for n, w in enumerate(demo_images.WORDS) if w not in ("zero", "one")}
# "one" is left out: "the one blue one" uses it as a pronoun as often as a count


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def _numbers(text: str) -> set[int]:
    found = {int(d) for d in re.findall(r"\b\d+\b", text)}
    return found | {NUMBER_WORDS[w] for w in _words(text) if w in NUMBER_WORDS}


def _true_numbers(kind: str, facts: dict) -> set[int]:
    """Every number a true statement about the picture may contain."""
    if kind == "bars":
        values = facts["values"]
        return {*values, len(values), *(abs(a - b) for a in values for b in values)}
    if kind == "scene":
        return {facts["trees"], 5 - facts["trees"], 5, 2}  # "five trees", "two sentences"
    counts = [*demo_images.colour_counts(facts).values(),
              *demo_images.shape_counts(facts).values()]
    total = len(facts["shapes"])
    per_pair: dict[tuple, int] = {}
    for item in facts["shapes"]:
        per_pair[(item["shape"], item["colour"])] = per_pair.get(
            (item["shape"], item["colour"]), 0) + 1
    return {*counts, *per_pair.values(), total, *(total - c for c in counts), 4}  # 4 lines


def _true_colours(kind: str, facts: dict) -> set[str]:
    if kind == "bars":
        return {facts["colour"]}
    if kind == "scene":
        return {facts["wall"], facts["door"], facts["roof"], "yellow", "green"}
    return set(demo_images.colour_counts(facts)) | {"white"}  # the off-white background


def _pictures(instance: Instance) -> list[demo_images.Picture]:
    """Redraw the instance's pictures and check they are the stored images, in order."""
    spec = instance.extra["demo"]["pictures"]
    pictures = [demo_images.picture(p["kind"], p["seed"]) for p in spec]
    stored = [ii.image.sha256 for ii in instance.instance_images.select_related("image")
              .order_by("position")]
    assert stored == [hashlib.sha256(p.png).hexdigest() for p in pictures], instance.instruction
    return pictures


def _assert_colours(text: str, pictures: list[demo_images.Picture], what: str) -> None:
    colours = set().union(*(_true_colours(p.kind, p.facts) for p in pictures))
    assert _words(text) & COLOUR_WORDS <= colours, (what, text, colours)


def _assert_true(text: str, pictures: list[demo_images.Picture], what: str) -> None:
    _assert_colours(text, pictures, what)
    numbers = set().union(*(_true_numbers(p.kind, p.facts) for p in pictures))
    assert _numbers(text) <= numbers, (what, text, numbers)


def test_demo_texts_are_blind_and_true_to_their_pictures(settings):
    settings.LLM_BASE_URL = ""
    load_demo(seed=7)
    pipeline_demo(random.Random(7))

    # blind: no answer names a model or grades itself
    names = [n.lower() for n in EvalModel.objects.values_list("name", flat=True)]
    families = [f.lower() for f in EvalModel.objects.values_list("family", flat=True) if f]
    texts = list(Response.objects.values_list("text", flat=True)) + list(
        ConversationTurn.objects.values_list("reference_answer", flat=True))
    assert len(texts) > 150
    for text in texts:
        lowered = text.lower()
        for banned in (*SELF_PRAISE, *names, *families):
            assert banned not in lowered, (banned, text)

    # true: the reference and every answer the demo counts as right match the drawn facts
    rated = Instance.objects.filter(source__in=[SOURCE, CONVERSATION_SOURCE])
    assert rated.count() >= 20
    for instance in rated.prefetch_related("turns"):
        pictures = _pictures(instance)
        for ii, picture in zip(instance.instance_images.order_by("position"), pictures,
                               strict=True):
            assert ii.caption == demo_images.caption(picture.kind, picture.facts)
            _assert_colours(ii.caption, [picture], "caption")
        quality = instance.extra["demo"]["quality"]
        responses = instance.responses.select_related("model")
        if instance.kind == Instance.Kind.CONVERSATION:
            for turn in instance.turns.all():
                _assert_true(turn.reference_answer, pictures, "conversation reference")
            for r in responses.exclude(model__is_reference=True):
                if quality[r.model.name][r.condition][r.turn - 1] > 0:
                    _assert_true(r.text, pictures, f"{r.model.name} turn {r.turn}")
        else:
            _assert_true(instance.reference_output, pictures, "reference")
            right = [r for r in responses if not r.model.is_reference
                     and quality[r.model.name] > 0]
            wrong = [r for r in responses if not r.model.is_reference
                     and quality[r.model.name] == 0]
            for r in right:
                _assert_true(r.text, pictures, r.model.name)
            assert all(r.text != instance.reference_output for r in wrong)
        words = _words(instance.instruction + " ".join(t.instruction
                                                       for t in instance.turns.all()))
        kinds = {p.kind for p in pictures}
        if kinds == {"bars"}:
            assert words & {"bar", "bars", "chart"}, instance.instruction
        elif kinds == {"scene"}:
            assert words & {"house", "trees", "tree", "sun"}, instance.instruction
        else:
            assert not words & {"bar", "bars", "chart", "house"}, instance.instruction
    # the weaker the model, the more of its answers the demo wrote wrong
    wrong_share = {}
    for name in MODELS:
        single = [i.extra["demo"]["quality"].get(name) for i in rated.exclude(
            kind=Instance.Kind.CONVERSATION)]
        if None not in single:
            wrong_share[name] = sum(q == 0 for q in single) / len(single)
    ranked = sorted(wrong_share, key=lambda n: MODELS[n][1], reverse=True)
    assert wrong_share[ranked[0]] < wrong_share[ranked[-1]]

    # the pipeline's seed example and candidates describe their own pictures
    family = InstructionFamily.objects.get(name=pipeline_demo_module.FAMILY)
    example = demo_images.squares(pipeline_demo_module.SEED_PICTURE)
    assert [i.sha256 for i in family.seed_images.all()] == [
        hashlib.sha256(example.png).hexdigest()]
    counts = demo_images.colour_counts(example.facts)
    assert _words(family.seed_output) & COLOUR_WORDS == set(counts)
    for colour, n in counts.items():
        assert f"{demo_images.WORDS[n]} {colour} square" in family.seed_output
    for instance in Instance.objects.filter(source="demo"):
        pictures = _pictures(instance)
        for ii, picture in zip(instance.instance_images.order_by("position"), pictures,
                               strict=True):
            _assert_colours(ii.caption, [picture], "pipeline caption")
    candidates = Instance.objects.filter(source="demo").exclude(candidate_reference="")
    assert {i.extra["demo"]["candidate_true"] for i in candidates} == {True, False}
    for instance in candidates:
        pictures = _pictures(instance)
        text = instance.candidate_reference.lower()
        if len(pictures) == 1:
            counts = demo_images.colour_counts(pictures[0].facts)
            claimed = text.split()[0]
            holds = claimed == max(counts, key=counts.get)
        else:
            totals = [len(p.facts["shapes"]) for p in pictures]
            claimed = pipeline_demo_module.ORDINALS.index(text.split()[1])
            holds = claimed == totals.index(max(totals))
        assert holds == instance.extra["demo"]["candidate_true"], text
        if instance.reference_status == Instance.ReferenceStatus.VERIFIED:
            assert holds and instance.reference_output == instance.candidate_reference
        if instance.reference_status == Instance.ReferenceStatus.REJECTED:
            assert not holds


def _counts() -> dict[str, int]:
    return {m._meta.label: m.objects.count() for m in apps.get_models()
            if m._meta.app_label in ("annotation", "judging", "auth")}


def test_demo_sides_gold_hit_types_score_board_and_a_second_load(settings, monkeypatch):
    settings.LLM_BASE_URL = ""
    monkeypatch.setenv("DEMO_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")  # judges: runs skipped
    load_demo(seed=7)
    pipeline_demo(random.Random(7))
    summary = judges_demo(random.Random(7))
    assert summary["runs"] == 0 and summary["ablation_comparisons"] > 0

    # sides: the reference and the models appear on both sides, ablation included
    reference_on = {"A": 0, "B": 0}
    for c in Comparison.objects.select_related("response_a__model", "response_b__model"):
        if c.response_a.model.is_reference:
            reference_on["A"] += 1
        if c.response_b.model.is_reference:
            reference_on["B"] += 1
    assert reference_on["A"] > 0 and reference_on["B"] > 0, reference_on
    ablation = Comparison.objects.filter(sampling="ablation").select_related(
        "response_a__model")
    assert ablation.count() >= 6
    model_on_a = [not c.response_a.model.is_reference for c in ablation]
    assert any(model_on_a) and not all(model_on_a)

    # every registered HIT type has a batch with tasks
    for hit in all_hit_types():
        assert Task.objects.filter(batch__hit_type=hit.slug).exists(), hit.slug

    # honest gold: the known better side is the reference's true answer, the other a wrong one
    gold = Task.objects.filter(is_gold=True, batch__hit_type="pairwise_ab")
    assert gold.exists()
    for task in gold:
        c = Comparison.objects.select_related("response_a__model", "response_b__model",
                                              "instance").get(uuid=task.payload["comparison"])
        better, worse = (c.response_a, c.response_b) if task.gold_answer["choice"] == "A" \
            else (c.response_b, c.response_a)
        assert better.model.is_reference
        assert c.instance.extra["demo"]["quality"][worse.model.name] == 0
    rubric_gold = Task.objects.filter(is_gold=True, batch__hit_type="rubric_score")
    assert rubric_gold.exists()
    for task in rubric_gold:
        r = Response.objects.select_related("model", "instance").get(uuid=task.payload["response"])
        quality = r.instance.extra["demo"]["quality"][r.model.name]
        assert task.gold_answer["score"] == {0: 1, 2: 5}[quality]
    assert not Judgment.objects.filter(assignment__task__is_gold=True).exists()

    # boards: pairwise (Elo/BT) and scores from the crowd's recorded judgments
    board = leaderboard_build(Judgment.HUMAN, "all", bootstrap_rounds=20)
    assert {r["model"] for r in board.rows} == set(MODELS)
    scores = score_leaderboard_build(Judgment.HUMAN, "all", bootstrap_rounds=20)
    assert len(scores.rows) == len(MODELS) - 1 and all(r["n"] > 0 for r in scores.rows)
    assert scores.rows[0]["mean"] > scores.rows[-1]["mean"]
    assert Judgment.objects.filter(kind=Judgment.Kind.FEEDBACK).exists()
    assert Judgment.objects.filter(turn="overall").exists()
    assert Batch.objects.filter(hit_type="feedback_ab").exists()

    # a second load adds nothing
    before = _counts()
    load_demo(seed=7)
    pipeline_demo(random.Random(7))
    judges_demo(random.Random(7))
    assert _counts() == before
