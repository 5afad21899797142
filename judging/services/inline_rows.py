"""Inline rating rows (the texts in an upload) stored as the objects stored payloads name, so a
vote on them is recorded by the same path as a vote on a sampled comparison.

Called by the rating HIT types' ``prepare_rows`` inside the batch's transaction, on rows that
already passed their payload form. A row that names its models (``model_a``/``model_b``, or
``model`` for one response) becomes:

- forced choice: an instance, the two responses and a ``Comparison``;
- multi-turn: a conversation instance with its turns, both models' answer per turn and a
  ``Comparison`` of their turn-1 answers (what the multi-turn page reads from);
- rubric score: an instance, its ``ScoreRubric`` and the model's response;
- feedback: an instance, the model's response and two score judgments holding the two
  feedbacks (their authors are the row's ``source_a``/``source_b``), through the one judgment
  writer.

**Sides are randomised** per row, seeded per batch: ``Comparison.swapped`` records a swap of a
comparison; for feedback the two judgments trade places (the vote's ``meta`` names which was A).
A gold answer given for the file's order is flipped with its row, and a gold comparison keeps
its known answer in ``gold_choice``.

**Items.** Every row is its own instance — released files repeat instructions across distinct
items — unless it names ``item_id``: rows (and uploads) naming one id share the instance
``(source="upload", external_id=item_id)``, which must keep one instruction, and a model has
one response per item and turn (a second, different text is refused).

Rows naming no model stay inline: the page shows them and the answer is kept on the assignment
(and in the batch's results export), but without models there is nothing to attribute a
judgment to. Gold rows never become judgments either way.
"""
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError

from annotation.content.formats.common import image_url_problem
from annotation.core.row_checks import database_refusal, row_problem
from annotation.models import ConversationTurn, Image, Instance, InstanceImage, ScoreRubric
from studies.models import study_pk

from ..models import Comparison, EvalModel, Judgment, Response
from .comparisons import comparison_new
from .judgments.record import judgments_record
from .responses import REFERENCE_ALIASES, reference_model_for_import

SOURCE = "upload"  # ``Instance.source`` of the items an upload creates
SAMPLING = "upload"  # ``Comparison.sampling`` of the comparisons an upload creates
FLIP = {"A": "B", "B": "A"}
# ConvBench's three levels, in turn order: what a turn tests when the row does not say.
CAPABILITY_BY_TURN = {1: "perception", 2: "reasoning", 3: "creation"}

Row = tuple[dict[str, Any], Any]
_STORED_KEYS = {"comparison", "response", "judgment_a"}  # a payload naming stored objects


@dataclass(frozen=True)
class _Later:
    """A feedback judgment's uuid, known once the store is flushed: its index in
    ``_Store.scores``."""

    index: int


class _Store:
    """What one upload creates: planned row by row (objects built, nothing saved, with the
    seeded coin and the models and items already seen), then written in one bulk insert per
    table (``flush``), so a large file costs a few dozen queries, not a few per row."""

    def __init__(self, seed: int | str, study=None):
        self.rnd = random.Random(seed)
        self.study_id = study_pk(study)  # what the rows create belongs to the batch's study
        self.models: dict[str, EvalModel] = {}
        self.items: dict[str, Instance] = {}
        self.new: dict[str, list] = {name: [] for name in (
            "instances", "images", "turns", "responses", "rubrics", "comparisons")}
        self.urls: set[str] = set()
        self.planned: dict[tuple[int, int, int], Response] = {}  # (id(instance), model, turn)
        self.turn_counts: dict[int, int] = {}  # id(instance) → turns planned
        self.rubrics: dict[tuple, ScoreRubric] = {}  # (id(instance), *texts) → rubric
        self.scores: list[dict] = []  # score judgments holding uploaded feedbacks

    def swap(self) -> bool:
        return self.rnd.random() < 0.5

    def model(self, name: str) -> EvalModel:
        if name not in self.models:
            if name in REFERENCE_ALIASES:
                self.models[name] = reference_model_for_import(name, create=True,
                                                               study=self.study_id)
            else:
                self.models[name], _ = EvalModel.objects.get_or_create(
                    name=name, study_id=self.study_id)
        return self.models[name]

    def instance(self, number: int, payload: dict, *, kind: str, instruction: str) -> Instance:
        item_id = payload.get("item_id", "")
        if item_id and item_id not in self.items:
            found = Instance.objects.filter(source=SOURCE, external_id=item_id,
                                            study_id=self.study_id).first()
            if found is not None:
                self.items[item_id] = found
        if item_id in self.items:
            found = self.items[item_id]
            if found.instruction.strip() != instruction.strip():
                raise ValidationError(f"Row {number}: item_id {item_id!r} names an item with "
                                      "another instruction")
            if found.kind != kind:
                raise ValidationError(f"Row {number}: item_id {item_id!r} names a {found.kind} "
                                      f"item, this row is {kind}")
            return found
        urls = payload.get("image_urls", [])
        for url in urls:
            if (problem := image_url_problem(url)) is not None:
                raise ValidationError(f"Row {number}: image_urls: {problem}")
        instance = Instance(kind=kind, instruction=instruction, source=SOURCE,
                            external_id=item_id, stage=Instance.Stage.DONE,
                            study_id=self.study_id)
        self.new["instances"].append(instance)
        self.new["images"] += [(instance, url, position) for position, url in enumerate(urls)]
        self.urls.update(urls)
        if item_id:
            self.items[item_id] = instance
        return instance

    def turns(self, instance: Instance) -> int:
        """How many turns the conversation has (planned here, or stored)."""
        if id(instance) not in self.turn_counts:
            self.turn_counts[id(instance)] = instance.turns.count() if instance.pk else 0
        return self.turn_counts[id(instance)]

    def add_turns(self, instance: Instance, turns: list[dict]) -> None:
        self.turn_counts[id(instance)] = len(turns)
        self.new["turns"] += [
            ConversationTurn(
                instance=instance, turn=n, instruction=t["instruction"],
                capability=t.get("capability") if t.get("capability") in
                ConversationTurn.Capability.values else CAPABILITY_BY_TURN[n],
                focus_points=t.get("focus_points") or [])
            for n, t in enumerate(turns, start=1)]

    def response(self, number: int, instance: Instance, model_name: str, text: str,
                 turn: int = 0) -> Response:
        """The model's response to the item (one per item and turn; a second, different text
        is refused)."""
        problem = (row_problem(EvalModel, {"name": model_name})
                   or row_problem(Response, {"text": text}))
        if problem is not None:  # the importers' one set of field checks
            raise ValidationError(f"Row {number}: {problem}")
        model = self.model(model_name)
        key = (id(instance), model.pk, turn)
        existing = self.planned.get(key)
        if existing is None and instance.pk is not None:
            existing = Response.objects.filter(
                instance=instance, model=model, turn=turn,
                condition=Response.Condition.GENERATED).first()
        if existing is not None:
            if existing.text != text:
                raise ValidationError(f"Row {number}: {model_name!r} already has another "
                                      f"response for item {instance.external_id!r}")
            return existing
        self.planned[key] = Response(instance=instance, model=model, turn=turn, text=text)
        self.new["responses"].append(self.planned[key])
        return self.planned[key]

    def flush(self) -> list[Judgment]:
        """Write everything planned, parents first; returns the feedback score judgments."""
        images = {i.source_url: i for i in Image.objects.filter(source_url__in=self.urls)
                  .order_by("-pk")}
        images |= {i.source_url: i for i in Image.objects.bulk_create(
            Image(source_url=url) for url in sorted(self.urls - images.keys()))}
        Instance.objects.bulk_create(self.new["instances"])
        InstanceImage.objects.bulk_create(
            InstanceImage(instance=instance, image=images[url], position=position)
            for instance, url, position in self.new["images"])
        ConversationTurn.objects.bulk_create(self.new["turns"])
        Response.objects.bulk_create(self.new["responses"])
        ScoreRubric.objects.bulk_create(self.new["rubrics"])
        Comparison.objects.bulk_create(self.new["comparisons"])
        return judgments_record(self.scores)


def _kind(payload: dict) -> str:
    return Instance.Kind.MULTI if len(payload.get("image_urls", [])) > 1 else Instance.Kind.SINGLE


def _flipped(gold: Any) -> Any:
    """A gold answer as seen with the sides swapped (A ↔ B in every field)."""
    if isinstance(gold, dict):
        return {k: FLIP.get(v, v) if isinstance(v, str) else v for k, v in gold.items()}
    return gold


def _comparison(store: _Store, instance: Instance, first: Response, second: Response,
                gold: Any) -> tuple[Comparison, Any]:
    """The comparison with its sides drawn; the gold answer follows the sides."""
    comparison = comparison_new(None, first, second, store.rnd, SAMPLING)
    comparison.instance = instance
    if comparison.swapped:
        gold = _flipped(gold)
    if isinstance(gold, dict) and gold.get("choice", gold.get("overall")) in FLIP:
        comparison.gold_choice = gold.get("choice", gold.get("overall"))
    store.new["comparisons"].append(comparison)
    return comparison, gold


def _named_pair(number: int, payload: dict) -> tuple[str, str] | None:
    a, b = payload.get("model_a", ""), payload.get("model_b", "")
    if not a and not b:
        return None
    if not a or not b:
        raise ValidationError(f"Row {number}: name both models (model_a and model_b) or neither")
    if a == b:
        raise ValidationError(f"Row {number}: model_a and model_b are both {a!r}; a comparison "
                              "is between two models")
    return a, b


def _pairwise(store: _Store, number: int, payload: dict, gold: Any) -> Row:
    names = _named_pair(number, payload)
    if names is None:
        return payload, gold
    instance = store.instance(number, payload, kind=_kind(payload),
                              instruction=payload["instruction"])
    first = store.response(number, instance, names[0], payload["response_a"])
    second = store.response(number, instance, names[1], payload["response_b"])
    comparison, gold = _comparison(store, instance, first, second, gold)
    return {"comparison": str(comparison.uuid)}, gold


def _multiturn(store: _Store, number: int, payload: dict, gold: Any) -> Row:
    names = _named_pair(number, payload)
    if names is None:
        return payload, gold
    turns = payload["turns"]
    instance = store.instance(number, payload, kind=Instance.Kind.CONVERSATION,
                              instruction=turns[0]["instruction"])
    if store.turns(instance) == 0:
        store.add_turns(instance, turns)
    elif store.turns(instance) != len(turns):
        raise ValidationError(f"Row {number}: item_id {payload['item_id']!r} names a "
                              f"conversation of {store.turns(instance)} turns")
    firsts = [store.response(number, instance, names[0], t["response_a"], n)
              for n, t in enumerate(turns, start=1)]
    seconds = [store.response(number, instance, names[1], t["response_b"], n)
               for n, t in enumerate(turns, start=1)]
    comparison, gold = _comparison(store, instance, firsts[0], seconds[0], gold)
    return {"comparison": str(comparison.uuid)}, gold


_RUBRIC_FIELDS = ("criteria", "score1", "score2", "score3", "score4", "score5")


def _rubric(store: _Store, number: int, payload: dict, gold: Any) -> Row:
    if not payload.get("model"):
        return payload, gold
    instance = store.instance(number, payload, kind=_kind(payload),
                              instruction=payload["instruction"])
    fields = {f: payload[f] for f in _RUBRIC_FIELDS}
    fields["reference_answer"] = payload.get("reference_answer", "")
    key = (id(instance), *fields.values())
    rubric = store.rubrics.get(key)
    if rubric is None and instance.pk is not None:
        rubric = ScoreRubric.objects.filter(instance=instance, **fields).first()
    if rubric is None:
        rubric = ScoreRubric(instance=instance, **fields)
        store.new["rubrics"].append(rubric)
    store.rubrics[key] = rubric
    response = store.response(number, instance, payload["model"], payload["response_text"])
    return {"response": str(response.uuid), "rubric": str(rubric.uuid)}, gold


def _feedback(store: _Store, number: int, payload: dict, gold: Any) -> Row:
    if not payload.get("model"):
        return payload, gold
    for side in ("source_a", "source_b"):
        if not payload.get(side):
            raise ValidationError(f"Row {number}: {side} is required with model (who wrote "
                                  "each feedback)")
    instance = store.instance(number, payload, kind=_kind(payload),
                              instruction=payload["instruction"])
    response = store.response(number, instance, payload["model"], payload["response_text"])
    a, b = ({"source": payload[f"source_{s}"], "annotator": payload[f"source_{s}"],
             "kind": Judgment.Kind.SCORE, "response": response,
             "score": payload.get(f"score_{s}"), "feedback": payload[f"feedback_{s}"],
             "meta": {"uploaded_feedback": s.upper()}}
            for s in ("a", "b"))
    for side in (a, b):
        if side["source"] != Judgment.HUMAN and Judgment.is_human_name(side["source"]):
            raise ValidationError(f"Row {number}: source {side['source']!r} is reserved: "
                                  f"human feedback is {Judgment.HUMAN!r}")
    a_later, b_later = _Later(len(store.scores)), _Later(len(store.scores) + 1)
    store.scores += [a, b]
    if store.swap():
        a_later, b_later, gold = b_later, a_later, _flipped(gold)
    return {"judgment_a": a_later, "judgment_b": b_later}, gold


_BY_HIT_TYPE: dict[str, Callable[[_Store, int, dict, Any], Row]] = {
    "pairwise_ab": _pairwise, "multiturn_ab": _multiturn, "rubric_score": _rubric,
    "feedback_ab": _feedback,
}


def inline_rows_store(hit_type: str, rows: list[Row], *, seed: int | str,
                      study=None) -> list[Row]:
    """The upload's ``(payload, gold)`` rows with every row that names its models stored and
    replaced by a payload naming the stored objects (module docstring); ValidationError
    naming the row otherwise. What they create belongs to ``study`` (None: the default).
    Runs inside the caller's transaction."""
    store, store_row = _Store(seed, study), _BY_HIT_TYPE[hit_type]
    prepared = [(payload, gold) if _STORED_KEYS & payload.keys()
                else store_row(store, number, payload, gold)
                for number, (payload, gold) in enumerate(rows, start=1)]
    with database_refusal(f"Rows 1–{len(rows)}", ValidationError):
        scores = store.flush()

    def written(value):
        return str(scores[value.index].uuid) if isinstance(value, _Later) else value

    return [({k: written(v) for k, v in payload.items()}, gold) for payload, gold in prepared]
