"""What a judge asks, per kind: prompt building and the sequence of calls for one unit.

``run_unit`` is the single code path for a unit (an item in one ordering). It talks to a
*caller* (see ``calls.py``): the live caller makes idempotent paid calls, the estimating caller
only counts tokens. So the cost estimate walks exactly the prompts the run will send.

Orderings: 'AB' shows the comparison's ``response_a`` as Response A; 'BA' swaps them. Verdicts
returned here are in the *shown* order; ``services`` maps them back with ``combine_orderings``.
"""
from __future__ import annotations

import base64
import mimetypes
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from statistics import fmean

from django.db.models import Prefetch

from annotation.models import ConversationTurn, Instance, InstanceImage, ScoreRubric

from ..models import Comparison, EvalModel, Response
from .models import Judge
from .templates import load_template

ORDINALS = {1: "first", 2: "second", 3: "third"}
CAPABILITY = {1: "perception", 2: "reasoning", 3: "creation"}
# Turns replaced by the human reference under each condition (ConvBench §4 ii/iii).
SUBSTITUTED = {
    Response.Condition.GENERATED: frozenset(),
    Response.Condition.PERFECT_PERCEPTION: frozenset({1}),
    Response.Condition.PERFECT_PERCEPTION_REASONING: frozenset({1, 2}),
}
PAIRWISE_TEMPLATES = {
    Judge.Kind.PAIRWISE: "pairwise_reference_free",
    Judge.Kind.PAIRWISE_REFERENCE: "pairwise_reference_backed",
    Judge.Kind.PAIRWISE_VLM: "pairwise_vlm",
}


class PlanError(ValueError):
    """The item cannot be judged by this judge (wrong kind of instance, missing rubric…)."""


@dataclass(frozen=True)
class Outcome:
    """What a caller returns for one call: the parsed verdict or score and the raw text."""

    verdict: str = ""  # 'A', 'B' or 'unknown' (pairwise, in the shown order)
    score: float | None = None
    raw: str = ""
    feedback: str = ""


# ---------------------------------------------------------------- context helpers


PROMPT_IMAGES = "prompt_images"  # where ``load_items`` puts an instance's images (a list)


def _instance_images(instance: Instance) -> list:
    """The instance's images in order: the plain list ``load_items`` prefetched (a related
    manager's prefetch builds a queryset per instance: a third of a 1,400-unit run's
    loading), else read now."""
    images = getattr(instance, PROMPT_IMAGES, None)
    return images if images is not None else list(instance.instance_images.all())


def image_context(instance: Instance) -> str:
    """Instruction-conditioned captions, the text stand-in for the image(s)."""
    captions = [ii.caption.strip() for ii in _instance_images(instance)]
    captions = [c for c in captions if c]
    if not captions:
        return "(no image description available)"
    if len(captions) == 1:
        return captions[0]
    return "\n".join(f"Image {i}: {c}" for i, c in enumerate(captions, 1))


@lru_cache(maxsize=128)
def _data_url(name: str, fmt: str) -> str:
    from django.core.files.storage import default_storage

    with default_storage.open(name, "rb") as fh:
        data = fh.read()
    mime = mimetypes.types_map.get(f".{fmt.lower()}") or mimetypes.guess_type(name)[0]
    return f"data:{mime or 'image/png'};base64,{base64.b64encode(data).decode('ascii')}"


def image_urls(instance: Instance) -> list[str]:
    """Images as URLs for image parts: stored files inline (data URLs), else the source URL."""
    urls = []
    for ii in _instance_images(instance):
        image = ii.image
        if image.file:
            urls.append(_data_url(image.file.name, image.format or "png"))
        elif image.source_url:
            urls.append(image.source_url)
    return urls


def _sends_images(judge: Judge) -> bool:
    return judge.kind == Judge.Kind.PAIRWISE_VLM or judge.send_images


# ---------------------------------------------------------------- conversations


@dataclass(frozen=True)
class Conversation:
    """One side of a multi-turn comparison: a model's three turns under one condition."""

    instance: Instance
    model: EvalModel
    condition: str
    turns: dict[int, str]  # turn -> response text

    @property
    def substituted(self) -> frozenset[int]:
        if self.model.is_reference:
            return frozenset({1, 2, 3})
        return SUBSTITUTED.get(self.condition, frozenset())


def conversation_for(response: Response) -> Conversation:
    rows = Response.objects.filter(instance_id=response.instance_id, model_id=response.model_id,
                                   condition=response.condition, turn__gte=1)
    turns = {r.turn: r.text for r in rows}
    return Conversation(response.instance, response.model, response.condition, turns)


def conversation_turns(instance: Instance) -> list[ConversationTurn]:
    turns = list(instance.turns.all())
    if [t.turn for t in turns] != [1, 2, 3]:
        raise PlanError(f"instance {instance.uuid} is not a three-turn conversation")
    return turns


def render_conversation(turns: list[ConversationTurn], texts: dict[int, str], who: str) -> str:
    blocks = []
    for t in turns:
        blocks.append(f"### The {ORDINALS[t.turn]} turn question from user:\n\n{t.instruction}")
        answer = texts.get(t.turn, "(no response)")
        blocks.append(f"### The {ORDINALS[t.turn]} turn response from {who}:\n\n{answer}")
    return "\n\n".join(blocks)


def _focus(turn: ConversationTurn) -> tuple[str, str]:
    points = [str(p).strip() for p in (turn.focus_points or []) if str(p).strip()]
    if not points:
        return "", ""
    item = ("\n4. Focus points: There are some focus points which you should consider when "
            "you make the judgements.")
    listing = "\n".join(f"{i}. {p}" for i, p in enumerate(points, 1))
    block = ("\nThere are some concerns which you should focus on when you make your "
             f"judgements for the response:\n\n{listing}\n")
    return item, block


def judged_turns(*sides: Conversation) -> list[int]:
    """Turns worth judging: skip a turn both sides took verbatim from the reference."""
    both = frozenset({1, 2, 3})
    for side in sides:
        both &= side.substituted
    return [t for t in (1, 2, 3) if t not in both]


def _turn_judgments(outputs: dict[int, str]) -> str:
    return "\n\n".join(f"The {ORDINALS[t]} turn evaluation: {text.strip()}"
                       for t, text in sorted(outputs.items()))


# ---------------------------------------------------------------- aggregation


def majority(verdicts: list[str]) -> str:
    """Self-consistency vote over k samples: more A than B -> A, more B -> B, else tie."""
    counts = Counter(v for v in verdicts if v in ("A", "B"))
    if counts["A"] > counts["B"]:
        return "A"
    if counts["B"] > counts["A"]:
        return "B"
    return "tie"


def mean_score(outcomes: list[Outcome]) -> float | None:
    scores = [o.score for o in outcomes if o.score is not None]
    return round(fmean(scores), 4) if scores else None


# ---------------------------------------------------------------- units


def load_items(judge: Judge, item_uuids) -> dict[str, Comparison | Response]:
    """Items by uuid (str) with what their prompts need, in as few joins as the kind allows:
    one query per table for a whole batch of units (hot path); missing ones are left out."""
    images = Prefetch("instance__instance_images", to_attr=PROMPT_IMAGES, queryset=(
        InstanceImage.objects.select_related("image") if _sends_images(judge)
        else InstanceImage.objects.all()))
    extra = []
    if judge.kind in (Judge.Kind.MULTI_TURN, Judge.Kind.DIRECT):
        extra.append("instance__turns")
    if judge.kind == Judge.Kind.RUBRIC:
        extra.append("instance__rubrics")
    if judge.kind == Judge.Kind.MULTI_TURN:
        rows = (Comparison.objects.select_related("instance", "response_a__model",
                                                  "response_b__model")
                .prefetch_related(images, *extra))
    elif judge.is_pairwise:
        rows = (Comparison.objects.select_related("instance", "response_a", "response_b")
                .prefetch_related(images))
    else:
        rows = (Response.objects.select_related("instance", "model")
                .prefetch_related(images, *extra))
    return {str(o.uuid): o for o in rows.filter(uuid__in=[str(u) for u in item_uuids])}


def run_unit(judge: Judge, item, ordering: str, caller) -> dict:
    """Judge one unit; returns ``{turn: verdict}`` (pairwise) or ``{turn: score, ...}``."""
    if judge.kind in PAIRWISE_TEMPLATES:
        return _pairwise(judge, item, ordering, caller)
    if judge.kind == Judge.Kind.MULTI_TURN:
        return _multi_turn(judge, item, ordering, caller)
    if judge.kind == Judge.Kind.RUBRIC:
        return _rubric(judge, item, caller)
    if item.instance.kind == Instance.Kind.CONVERSATION:
        return _direct_conversation(judge, item, caller)
    return _direct_single(judge, item, caller)


def _shown(comparison: Comparison, ordering: str) -> tuple[Response, Response]:
    a, b = comparison.response_a, comparison.response_b
    return (a, b) if ordering == "AB" else (b, a)


def _pairwise(judge, comparison, ordering, caller) -> dict:
    instance = comparison.instance
    first, second = _shown(comparison, ordering)
    template = load_template(PAIRWISE_TEMPLATES[judge.kind], judge.template_overrides)
    images = image_urls(instance) if _sends_images(judge) else []
    values = {"instruction": instance.instruction, "response_a": first.text,
              "response_b": second.text, "image_context": image_context(instance),
              "reference": instance.reference_output or "(no reference)",
              "image_count": len(images)}
    if judge.kind == Judge.Kind.PAIRWISE_REFERENCE and not instance.reference_output:
        raise PlanError(f"instance {instance.uuid} has no reference output")
    messages = template.render(**values)
    outcomes = [caller.call(template, messages, parse="pairwise", turn="", sample=s,
                            images=images) for s in range(judge.k)]
    return {"": majority([o.verdict for o in outcomes])}


def _multi_turn(judge, comparison, ordering, caller) -> dict:
    instance = comparison.instance
    first, second = _shown(comparison, ordering)
    side_a, side_b = conversation_for(first), conversation_for(second)
    turns = conversation_turns(instance)
    conv_a = render_conversation(turns, side_a.turns, "Assistant A")
    conv_b = render_conversation(turns, side_b.turns, "Assistant B")
    context = image_context(instance)
    turn_tpl = load_template("multiturn_turn", judge.template_overrides)
    overall_tpl = load_template("multiturn_overall", judge.template_overrides)
    wanted = judged_turns(side_a, side_b)
    votes: dict[str, list[str]] = {str(t): [] for t in wanted} | {"overall": []}
    for s in range(judge.k):
        outputs = {}
        for t in wanted:
            focus_item, focus_block = _focus(turns[t - 1])
            messages = turn_tpl.render(
                image_context=context, conversation_a=conv_a, conversation_b=conv_b,
                ordinal=ORDINALS[t], focus_item=focus_item, focus_block=focus_block)
            outcome = caller.call(turn_tpl, messages, parse="pairwise", turn=str(t), sample=s)
            votes[str(t)].append(outcome.verdict)
            outputs[t] = outcome.raw or f"(no judgment; verdict {outcome.verdict})"
        messages = overall_tpl.render(image_context=context, conversation_a=conv_a,
                                      conversation_b=conv_b,
                                      turn_judgments=_turn_judgments(outputs))
        outcome = caller.call(overall_tpl, messages, parse="pairwise", turn="overall", sample=s)
        votes["overall"].append(outcome.verdict)
    return {turn: majority(v) for turn, v in votes.items()}


def _rubric(judge, response, caller) -> dict:
    instance = response.instance
    rubric: ScoreRubric | None = next(iter(instance.rubrics.all()), None)
    if rubric is None:
        raise PlanError(f"instance {instance.uuid} has no score rubric")
    template = load_template("rubric_absolute", judge.template_overrides)
    images = image_urls(instance) if _sends_images(judge) else []
    messages = template.render(
        image_context=image_context(instance), instruction=instance.instruction,
        response=response.text,
        reference=rubric.reference_answer or instance.reference_output or "(none)",
        criteria=rubric.criteria, **{f"score{i}": text for i, text in rubric.levels()})
    outcomes = [caller.call(template, messages, parse="rubric", turn="", sample=s, images=images)
                for s in range(judge.k)]
    feedback = next((o.feedback for o in outcomes if o.score is not None), "")
    return {"": mean_score(outcomes), "feedback": feedback}


def _direct_single(judge, response, caller) -> dict:
    instance = response.instance
    if not instance.reference_output:
        raise PlanError(f"instance {instance.uuid} has no reference output")
    template = load_template("direct_grade", judge.template_overrides)
    images = image_urls(instance) if _sends_images(judge) else []
    messages = template.render(image_context=image_context(instance),
                               instruction=instance.instruction,
                               reference=instance.reference_output, response=response.text)
    outcomes = [caller.call(template, messages, parse="direct", turn="", sample=s, images=images)
                for s in range(judge.k)]
    return {"": mean_score(outcomes)}


def _direct_conversation(judge, response, caller) -> dict:
    instance = response.instance
    side = conversation_for(response)
    turns = conversation_turns(instance)
    conversation = render_conversation(turns, side.turns, "Assistant A")
    reference = render_conversation(turns, {t.turn: t.reference_answer for t in turns},
                                    "the reference").replace(" response from the reference",
                                                             " high quality reference")
    context = image_context(instance)
    turn_tpl = load_template("direct_turn", judge.template_overrides)
    overall_tpl = load_template("direct_overall", judge.template_overrides)
    wanted = judged_turns(side)
    scores: dict[str, list[Outcome]] = {str(t): [] for t in wanted} | {"overall": []}
    for s in range(judge.k):
        outputs = {}
        for t in wanted:
            focus_item, focus_block = _focus(turns[t - 1])
            messages = turn_tpl.render(
                image_context=context, reference_conversation=reference,
                conversation=conversation, ordinal=ORDINALS[t], capability=CAPABILITY[t],
                focus_item=focus_item, focus_block=focus_block)
            outcome = caller.call(turn_tpl, messages, parse="direct", turn=str(t), sample=s)
            scores[str(t)].append(outcome)
            outputs[t] = outcome.raw or "(no evaluation)"
        messages = overall_tpl.render(image_context=context, reference_conversation=reference,
                                      conversation=conversation,
                                      turn_judgments=_turn_judgments(outputs))
        scores["overall"].append(caller.call(overall_tpl, messages, parse="direct",
                                             turn="overall", sample=s))
    return {turn: mean_score(outs) for turn, outs in scores.items()}
