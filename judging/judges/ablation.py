"""ConvBench hierarchical ablation: conditioned conversations out, model responses in, Table 1.

Conditions (ConvBench §4): ``generated`` (the model answers all three turns), ``perfect_perception``
(turn 1 is the human reference, M̂1 = R1) and ``perfect_perception_reasoning`` (turns 1 and 2 are
references). Responses are stored for all three turns under each condition — substituted turns
hold the reference text — so a judge always sees the full conversation {M_i} it grades.

Export format (JSONL, one conversation × condition per line)::

    {"instance": "<uuid>", "external_id": "...", "condition": "perfect_perception",
     "images": ["https://..."], "image_captions": ["..."],
     "turns": [{"turn": 1, "capability": "perception", "instruction": "...",
                "response": "<reference>", "substituted": true},
               {"turn": 2, ..., "response": null, "substituted": false}, ...],
     "messages": [{"role": "user", "content": I1}, {"role": "assistant", "content": R1},
                  {"role": "user", "content": I2}]}

Fill every ``null`` response in turn order (turn 3 must see your own turn-2 answer) and import
the same lines back (``"turns"`` as exported, or ``"responses": {"2": "...", "3": "..."}``).
"""
from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.core.row_checks import database_refusal, row_problem
from annotation.models import Instance

from ..models import Comparison, EvalModel, Judgment, Response
from ..selectors import current_verdicts
from ..services.comparisons import comparison_new
from ..services.responses import reference_model
from .models import Judge
from .plans import SUBSTITUTED
from .table import mean_or_none, table1_row, win_rate_percent

CONDITIONS = [c.value for c in Response.Condition]


def _conversations(instances=None):
    qs = Instance.objects.filter(kind=Instance.Kind.CONVERSATION)
    if instances is not None:
        qs = qs.filter(pk__in=[i.pk for i in instances])
    return qs.prefetch_related("turns", "instance_images__image").order_by("pk")


# ---------------------------------------------------------------- export


def export_conditions(conditions: Iterable[str] = CONDITIONS, instances=None,
                      skipped: Counter | None = None) -> Iterator[dict]:
    """Records to write as JSONL, one per conversation and condition.

    A condition that substitutes a turn the conversation has no reference answer for is left
    out (counted in ``skipped``): the released ConvBench workbook holds instructions only, so
    without references only the ``generated`` condition can be asked of a model."""
    conditions = list(conditions)
    for bad in set(conditions) - set(CONDITIONS):
        raise ValidationError(f"unknown condition {bad!r}; expected one of {CONDITIONS}")
    for instance in _conversations(instances):
        turns = list(instance.turns.all())
        if [t.turn for t in turns] != [1, 2, 3]:
            continue
        images = list(instance.instance_images.all())
        for condition in conditions:
            substituted = SUBSTITUTED[condition]
            if any(not t.reference_answer.strip() for t in turns if t.turn in substituted):
                if skipped is not None:
                    skipped[condition] += 1
                continue
            rows = [{"turn": t.turn, "capability": t.capability, "instruction": t.instruction,
                     "response": t.reference_answer if t.turn in substituted else None,
                     "substituted": t.turn in substituted} for t in turns]
            messages = []  # chat history up to the first turn the model must answer
            for t in turns:
                messages.append({"role": "user", "content": t.instruction})
                if t.turn not in substituted:
                    break
                messages.append({"role": "assistant", "content": t.reference_answer})
            yield {"instance": str(instance.uuid), "external_id": instance.external_id,
                   "condition": condition,
                   "images": [ii.image.source_url or ii.image.display_url for ii in images],
                   "image_captions": [ii.caption for ii in images],
                   "turns": rows, "messages": messages}


def export_jsonl(fh, **kw) -> int:
    n = 0
    for record in export_conditions(**kw):
        fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        n += 1
    return n


# ---------------------------------------------------------------- import


def _responses_of(record: dict) -> dict[int, str]:
    if isinstance(record.get("responses"), dict):
        return {int(k): v for k, v in record["responses"].items()}
    turns = record.get("turns")
    if isinstance(turns, list):
        return {int(t["turn"]): t.get("response") for t in turns if isinstance(t, dict)}
    raise ValueError('needs "turns" (as exported) or "responses"')


@transaction.atomic
def import_responses(*, model_name: str, lines: Iterable[str]) -> int:
    """Store a model's responses under their conditions; all or nothing.

    Raises ``ValidationError`` naming the line for a bad record; nothing is written then.
    Returns the number of conversations stored (re-importing replaces earlier texts).
    """
    if (problem := row_problem(EvalModel, {"name": model_name})) is not None:
        raise ValidationError(f"model {problem}")
    model, _ = EvalModel.objects.in_study().get_or_create(name=model_name)
    if model.is_reference:
        raise ValidationError("responses cannot be imported for the reference model")
    stored = 0
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            condition = record["condition"]
            if condition not in CONDITIONS:
                raise ValueError(f"unknown condition {condition!r}")
            instance = Instance.objects.prefetch_related("turns").get(
                uuid=record["instance"], kind=Instance.Kind.CONVERSATION)
            refs = {t.turn: t.reference_answer for t in instance.turns.all()}
            if sorted(refs) != [1, 2, 3]:
                raise ValueError("the instance is not a three-turn conversation")
            given = _responses_of(record)
            texts = {}
            for turn in (1, 2, 3):
                if turn in SUBSTITUTED[condition]:
                    if not refs[turn].strip():
                        raise ValueError(f"{condition} substitutes turn {turn}, which has no "
                                         "reference answer")
                    texts[turn] = refs[turn]
                    continue
                text = given.get(turn)
                if not isinstance(text, str):  # "" is an answer: the model said nothing
                    raise ValueError(f"turn {turn} response is missing")
                if (problem := row_problem(Response, {"text": text})) is not None:
                    raise ValueError(f"turn {turn} response {problem}")
                texts[turn] = text
        except RecursionError:
            raise ValidationError(f"line {number}: JSON nested too deeply") from None
        except (ValueError, KeyError, TypeError, OverflowError, ValidationError,
                Instance.DoesNotExist) as exc:
            raise ValidationError(f"line {number}: {exc}") from exc
        with database_refusal(f"line {number}", ValidationError):
            for turn, text in texts.items():
                Response.objects.update_or_create(instance=instance, model=model, turn=turn,
                                                  condition=condition, defaults={"text": text})
        stored += 1
    return stored


# ---------------------------------------------------------------- comparisons vs the reference


@transaction.atomic
def ablation_comparisons(*, model: EvalModel, conditions: Iterable[str] = CONDITIONS,
                         instances=None, seed: int = 0) -> list[Comparison]:
    """Comparisons of ``model``'s conversations (turn-1 response per condition) against the
    human reference conversation, created once (in either order); reference turns come from
    the annotations. Sides are drawn at random (seeded), like every sampled comparison."""
    ref = reference_model()
    rnd = random.Random(seed)
    out = []
    for instance in _conversations(instances):
        turns = {t.turn: t for t in instance.turns.all()}
        if sorted(turns) != [1, 2, 3]:
            continue
        ref_first = None
        for turn, t in turns.items():
            r, _ = Response.objects.get_or_create(
                instance=instance, model=ref, turn=turn, condition=Response.Condition.GENERATED,
                defaults={"text": t.reference_answer})
            ref_first = r if turn == 1 else ref_first
        for condition in conditions:
            mine = Response.objects.filter(instance=instance, model=model, turn=1,
                                           condition=condition).first()
            if mine is None:
                continue
            comparison = Comparison.objects.filter(
                Q(response_a=mine, response_b=ref_first) | Q(response_a=ref_first,
                                                              response_b=mine),
                instance=instance).first()
            if comparison is None:
                comparison = comparison_new(instance.pk, mine, ref_first, rnd, "ablation")
                comparison.save()
            out.append(comparison)
    return out


# ---------------------------------------------------------------- Table 1


def ablation_cells(judge: Judge) -> dict[str, dict[tuple[str, str], float | None]]:
    """``{model: {(condition, turn): value}}`` from this judge version's stored verdicts."""
    turns = ["1", "2", "3", "overall"]
    base = Judgment.objects.filter(source=judge.name, annotator=judge.ident, turn__in=turns)
    collected: dict[str, dict[tuple[str, str], list[float]]] = defaultdict(lambda: defaultdict(list))
    if judge.is_pairwise:
        rows = current_verdicts(base.filter(comparison__isnull=False), "comparison",
                                per_annotator=True).filter(
            Q(comparison__response_a__model__is_reference=True)
            | Q(comparison__response_b__model__is_reference=True)).values_list(
            "choice", "turn", "comparison__response_a__model__name",
            "comparison__response_a__model__is_reference", "comparison__response_a__condition",
            "comparison__response_b__model__name", "comparison__response_b__condition")
        for choice, turn, name_a, a_is_ref, cond_a, name_b, cond_b in rows:
            model, condition, side = (name_b, cond_b, "B") if a_is_ref else (name_a, cond_a, "A")
            outcome = 0.5 if choice == "tie" else float(choice == side)
            collected[model][(condition, turn)].append(outcome)
        return {m: {k: win_rate_percent(v) for k, v in cells.items()}
                for m, cells in collected.items()}
    rows = current_verdicts(base.filter(response__isnull=False, score__isnull=False,
                                        response__model__is_reference=False), "response",
                            per_annotator=True).values_list(
        "score", "turn", "response__model__name", "response__condition")
    for score, turn, model, condition in rows:
        collected[model][(condition, turn)].append(score)
    return {m: {k: mean_or_none(v) for k, v in cells.items()} for m, cells in collected.items()}


def ablation_table(judge: Judge) -> list[tuple[str, dict]]:
    """Table 1 (pairwise judge: win rates vs the reference, %) or Table 8 (direct: 0–10)."""
    rows = [(model, table1_row(cells)) for model, cells in ablation_cells(judge).items()]
    return sorted(rows, key=lambda r: -(r[1]["R1"] if r[1]["R1"] is not None else -1e9))


def ablation_summary(judge: Judge) -> dict:
    return {"judge": judge.ident, "generated_at": timezone.now().isoformat(),
            "kind": "win rate vs reference (%)" if judge.is_pairwise else "mean grade (0-10)",
            "rows": [{"model": m, **row} for m, row in ablation_table(judge)]}
