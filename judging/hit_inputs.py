"""What a rating task showed its worker, for the results export's ``input.*`` columns.

Each reader takes a chunk of tasks of one HIT type and returns ``{task.pk: {column: value}}``:
an inline payload is read as it is, a stored one (a comparison, a response, two judgments) is
fetched for the whole chunk at once, with the models' names that the page hides (which model
was shown as A, which as B). Texts are the ones the page showed.
"""
from __future__ import annotations

from typing import Any

from django.db.models import Prefetch

from annotation.models import InstanceImage, ScoreRubric

from .models import Comparison, Judgment, Response

IMAGES = "instance__instance_images"


def _images_prefetch(path: str = IMAGES) -> Prefetch:
    return Prefetch(path, InstanceImage.objects.select_related("image"))


def _urls(instance) -> list[str]:
    return [ii.image.display_url for ii in instance.instance_images.all()]


def _stored(tasks, key: str) -> set[str]:
    return {t.payload[key] for t in tasks if t.payload.get(key)}


def _inline(task, *names: str) -> dict[str, Any]:
    payload = task.payload
    return {"image_urls": payload.get("image_urls") or [],
            **{name: payload.get(name) for name in names}}


def pairwise_inputs(tasks) -> dict[int, dict[str, Any]]:
    found = {str(c.uuid): c for c in Comparison.objects.filter(
        uuid__in=_stored(tasks, "comparison")).select_related(
        "instance", "response_a__model", "response_b__model").prefetch_related(_images_prefetch())}
    out = {}
    for task in tasks:
        comparison = found.get(task.payload.get("comparison") or "")
        if comparison is None:
            out[task.pk] = _inline(task, "instruction", "model_a", "model_b", "response_a",
                                   "response_b")
            continue
        out[task.pk] = {
            "instruction": comparison.instance.instruction,
            "image_urls": _urls(comparison.instance),
            "model_a": comparison.response_a.model.name, "model_b": comparison.response_b.model.name,
            "response_a": comparison.response_a.text, "response_b": comparison.response_b.text}
    return out


def _turn_cells(turns: list[dict]) -> dict[str, Any]:
    cells = {}
    for number, turn in enumerate(turns, start=1):
        for key in ("instruction", "response_a", "response_b"):
            cells[f"turn{number}.{key}"] = turn.get(key)
    return cells


def multiturn_inputs(tasks) -> dict[int, dict[str, Any]]:
    comparisons = list(Comparison.objects.filter(uuid__in=_stored(tasks, "comparison"))
                       .select_related("instance", "response_a__model", "response_b__model")
                       .prefetch_related(_images_prefetch(), "instance__turns"))
    answers = {(r.instance_id, r.condition, r.model_id, r.turn): r.text
               for r in Response.objects.filter(
                   instance__in={c.instance_id for c in comparisons},
                   model__in={m for c in comparisons
                              for m in (c.response_a.model_id, c.response_b.model_id)})
               .exclude(turn=0).only("instance_id", "condition", "model_id", "turn", "text")}
    found = {str(c.uuid): c for c in comparisons}
    out = {}
    for task in tasks:
        comparison = found.get(task.payload.get("comparison") or "")
        if comparison is None:
            out[task.pk] = {**_inline(task, "model_a", "model_b"),
                            **_turn_cells(task.payload.get("turns") or [])}
            continue
        a, b = comparison.response_a, comparison.response_b
        key = (comparison.instance_id, a.condition)
        turns = [{"instruction": t.instruction,
                  "response_a": answers.get((*key, a.model_id, t.turn), ""),
                  "response_b": answers.get((*key, b.model_id, t.turn), "")}
                 for t in comparison.instance.turns.all()]
        out[task.pk] = {"image_urls": _urls(comparison.instance), "model_a": a.model.name,
                        "model_b": b.model.name, **_turn_cells(turns)}
    return out


def rubric_inputs(tasks) -> dict[int, dict[str, Any]]:
    responses = {str(r.uuid): r for r in Response.objects.filter(
        uuid__in=_stored(tasks, "response")).select_related("instance", "model")
        .prefetch_related(_images_prefetch())}
    named = {str(r.uuid): r for r in ScoreRubric.objects.filter(uuid__in=_stored(tasks, "rubric"))}
    first: dict[int, ScoreRubric] = {}
    for rubric in ScoreRubric.objects.filter(
            instance__in={r.instance_id for r in responses.values()}).order_by("-pk"):
        first[rubric.instance_id] = rubric  # the lowest pk wins: the page's first rubric
    out = {}
    for task in tasks:
        payload = task.payload
        response = responses.get(payload.get("response") or "")
        if response is None:
            out[task.pk] = {**_inline(task, "instruction", "model", "criteria", "score1",
                                      "score2", "score3", "score4", "score5",
                                      "reference_answer"),
                            "response": payload.get("response_text")}
            continue
        rubric = named.get(payload.get("rubric") or "") or first.get(response.instance_id)
        out[task.pk] = {
            "instruction": response.instance.instruction, "image_urls": _urls(response.instance),
            "model": response.model.name, "response": response.text,
            **({"criteria": rubric.criteria, "reference_answer": rubric.reference_answer,
                **{f"score{i}": text for i, text in rubric.levels()}} if rubric else {})}
    return out


def feedback_inputs(tasks) -> dict[int, dict[str, Any]]:
    uuids = _stored(tasks, "judgment_a") | _stored(tasks, "judgment_b")
    # The feedbacks are the task's content, shown even when a vote among them was rejected.
    found = {str(j.uuid): j for j in Judgment.with_rejected.filter(uuid__in=uuids)
             .select_related("response__instance", "response__model")
             .prefetch_related(_images_prefetch(f"response__{IMAGES}"))}
    out = {}
    for task in tasks:
        payload = task.payload
        a, b = found.get(payload.get("judgment_a") or ""), found.get(payload.get("judgment_b") or "")
        if a is None or b is None:
            out[task.pk] = {**_inline(task, "instruction", "model", "source_a", "score_a",
                                      "feedback_a", "source_b", "score_b", "feedback_b"),
                            "response": payload.get("response_text")}
            continue
        instance = a.response.instance
        out[task.pk] = {
            "instruction": instance.instruction, "image_urls": _urls(instance),
            "model": a.response.model.name, "response": a.response.text,
            "source_a": a.source, "score_a": a.score, "feedback_a": a.feedback,
            "source_b": b.source, "score_b": b.score, "feedback_b": b.feedback}
    return out
