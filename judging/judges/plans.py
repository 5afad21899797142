"""What a judge asks: the prompt helpers the kinds share, and the entry point for one unit.

Each kind's own prompts and sequence of calls live in its module under ``kinds/``.
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

from annotation.models import ConversationTurn, Instance, InstanceImage

from ..models import Comparison, EvalModel, Response
from .models import Judge

ORDINALS = {1: "first", 2: "second", 3: "third"}
CAPABILITY = {1: "perception", 2: "reasoning", 3: "creation"}
# Turns replaced by the human reference under each condition (ConvBench §4 ii/iii).
SUBSTITUTED = {
    Response.Condition.GENERATED: frozenset(),
    Response.Condition.PERFECT_PERCEPTION: frozenset({1}),
    Response.Condition.PERFECT_PERCEPTION_REASONING: frozenset({1, 2}),
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


def sends_images(judge: Judge) -> bool:
    return judge.spec.always_sends_images or judge.send_images


def shown(comparison: Comparison, ordering: str) -> tuple[Response, Response]:
    """The comparison's responses in the order the prompt shows them ('AB' or 'BA')."""
    a, b = comparison.response_a, comparison.response_b
    return (a, b) if ordering == "AB" else (b, a)


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


def focus(turn: ConversationTurn) -> tuple[str, str]:
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


def turn_judgments(outputs: dict[int, str]) -> str:
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
    """Items by uuid (str) with what their prompts need, in as few joins as the kind allows
    (``JudgeKind.load_query``): one query per table for a whole batch of units (hot path);
    missing ones are left out."""
    images = Prefetch("instance__instance_images", to_attr=PROMPT_IMAGES, queryset=(
        InstanceImage.objects.select_related("image") if sends_images(judge)
        else InstanceImage.objects.all()))
    rows = judge.spec.load_query(images)
    return {str(o.uuid): o for o in rows.filter(uuid__in=[str(u) for u in item_uuids])}


def run_unit(judge: Judge, item, ordering: str, caller) -> dict:
    """Judge one unit; returns ``{turn: verdict}`` (pairwise) or ``{turn: score, ...}``."""
    return judge.spec.run_unit(judge, item, ordering, caller)
