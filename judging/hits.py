"""Rating HIT types: forced-choice A/B (VisIT-Bench fig. 15), multi-turn A/B (ConvBench fig. 7),
rubric score 1–5 with feedback (Prometheus-Vision) and which-feedback-is-better.

Each type takes either a stored object (a Comparison, a Response, two score Judgments: what the
sampling services create) or the texts inline (generic CSV batches). An inline row that names
its models (``model_a``/``model_b``, VisIT-Bench's ``A_model``/``B_model``; ``model`` for one
response) is stored at upload with its sides randomised (``services.inline_rows``), so it
becomes a stored payload. Stored payloads record their vote as Judgment rows inside the submit
transaction, each tied to its assignment (one per assignment and turn), so a vote is counted
once. Rows naming no model stay inline: their answers live on the assignments (and the batch's
results export) only. Gold tasks are attention checks: they grade the worker and never become
judgments.
"""
from typing import Any, ClassVar
from urllib.parse import urljoin

from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.translation import gettext_noop  # titles, keys: translated on the page

from annotation.content.shown import instance_images
from annotation.engine.hit_types import HitType, register

from . import hit_inputs
from .hit_choices import (
    ChoiceOptionsForm,
    check_choice,
    check_strength,
    clean_choice_gold,
    offered,
    options_offering,
    page_options,
)
from .models import Comparison, Judgment, Response
from .services.inline_rows import inline_rows_store
from .services.judgments.record import judgment_record
from .services.judgments.rejection import judgments_mark_rejected

TURN_FIELDS = ("turn1", "turn2", "turn3")


def _sample_image(name: str) -> str:
    """A sample row's picture: one of the demo's drawn pictures shipped as a static file
    (``annotation.pipeline.demo_images``: shapes seed 4, bars seed 2, scene seed 3) at this
    server's public address, so a sample batch shows its images with no internet access. An
    absolute URL: an upload takes only http(s) URLs."""
    return urljoin(settings.PUBLIC_BASE_URL.rstrip("/") + "/",
                   f"{settings.STATIC_URL}judging/samples/{name}")


SHAPES, BARS, SCENE = (_sample_image(n) for n in ("shapes-4.png", "bars-2.png", "scene-3.png"))


def _check_urls(urls) -> list[str]:
    urls = urls or []
    if not isinstance(urls, list) or not all(isinstance(u, str) for u in urls):
        raise ValidationError("image_urls must be a JSON list of URLs")
    if len(urls) > 10:
        raise ValidationError("image_urls: at most 10 images")
    bad = [u for u in urls if not u.startswith(("https://", "http://", "/media/"))]
    if bad:
        raise ValidationError(f"image_urls: not an http(s) URL: {bad[0]!r}")
    return urls


class StoredOrInlinePayloadForm(forms.Form):
    """The shape the four rating types' rows share: a row names stored objects (by id) or
    carries its texts inline. A stored row is checked by ``clean_stored`` (which writes the ids
    back as strings); an inline row must have ``inline_required`` (``clean_inline`` for more)
    and its ``image_urls`` are checked."""

    #: Any of these given: the row is stored.
    stored_fields: ClassVar[tuple[str, ...]]
    #: What an inline row could give instead, for its error message ("a comparison id").
    stored_alternative: ClassVar[str]
    inline_required: ClassVar[tuple[str, ...]] = ()

    def clean(self):
        data = super().clean()
        if any(data.get(field) for field in self.stored_fields):
            self.clean_stored(data)
            return data
        self.clean_inline(data)
        data["image_urls"] = _check_urls(data.get("image_urls"))
        return data

    def clean_stored(self, data: dict) -> None:
        raise NotImplementedError

    def clean_inline(self, data: dict) -> None:
        for field in self.inline_required:
            if not data.get(field):
                raise ValidationError(f"{field} is required (or give {self.stored_alternative})")


def _whole(value) -> int | None:
    """A whole number given as an int or as digits ("4"), else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdecimal():
        return int(value)
    return None


def _inline_images(payload) -> list[dict]:
    """A row's own image URLs in the shape ``instance_images`` gives a stored instance's."""
    return [{"n": n, "url": u, "caption": "", "label": ""}
            for n, u in enumerate(payload.get("image_urls", []), start=1)]


def _aliased(payload: dict, aliases: dict[str, str]) -> dict:
    """The row with released files' column names read as ours (ours win when both are given);
    a single ``image_url`` becomes the list ``image_urls``."""
    out = dict(payload)
    for theirs, ours in aliases.items():
        if out.get(ours) in (None, "") and out.get(theirs) not in (None, ""):
            value = out[theirs]
            if ours == "image_urls" and isinstance(value, str) and not value.lstrip().startswith("["):
                value = [value.strip()]
            out[ours] = value
    return out


class RatingHit(HitType):
    """What the four rating types share: released column spellings read as ours, and inline
    rows that name their models stored (sides randomised) before the tasks are created."""

    #: A released file's column → our payload key.
    aliases: ClassVar[dict[str, str]] = {}

    def clean_payload(self, payload: dict[str, Any]) -> dict[str, Any]:
        return super().clean_payload(_aliased(payload, self.aliases))

    def prepare_rows(self, rows, *, seed, study=None):
        return inline_rows_store(self.slug, rows, seed=seed, study=study)

    def on_review_changed(self, assignment, *, rejected: bool) -> None:
        judgments_mark_rejected(assignment, rejected=rejected)


class ChoiceHit(RatingHit):
    """A rating type whose answer is a choice between two things shown side by side: each batch
    says which answers it offers (``hit_choices``: A / B by default, or with tie / both bad,
    optionally how much better), and an answer is checked against that."""

    options_form = ChoiceOptionsForm
    choice_fields: ClassVar[tuple[str, ...]] = ("choice",)

    def clean_answer(self, data, *, task):
        options = self.options_of(task.batch)
        answer = {field: check_choice(data.get(field), options, field)
                  for field in self.choice_fields}
        strength = check_strength(data.get("strength"), answer[self.choice_fields[-1]], options)
        if strength:
            answer["strength"] = strength
        return answer

    def clean_gold(self, gold):
        return clean_choice_gold(gold)

    def options_for_answers(self, answers):
        return options_offering(answers)

    def check_gold_offered(self, gold, options):
        """Each choice the gold names must be one this batch offers (``hit_choices``)."""
        for field in dict.fromkeys(("choice", *self.choice_fields)):
            if field in gold and gold[field] not in offered(options):
                raise ValidationError(f"_gold_answer: {field} {gold[field]!r} is not offered in "
                                      f"this batch (it offers {', '.join(offered(options))})")

    def choice_page(self, task, context: dict) -> dict:
        return {**context, **page_options(self.options_of(task.batch))}


def _strength(answer: dict) -> dict:
    """The judgment's ``meta`` for an answer that said how much better."""
    return {"strength": answer["strength"]} if answer.get("strength") else {}


def _record(hit: HitType, assignment, **fields) -> Judgment:
    """A crowd vote, stamped with the HIT type and the version the worker saw (the assignment
    records it at claim time), so votes from different versions of a form stay apart."""
    return judgment_record(
        source=Judgment.HUMAN, annotator=str(assignment.worker), worker=assignment.worker,
        assignment=assignment, created_at=assignment.submitted_at or timezone.now(),
        template_version=f"{hit.slug}@{assignment.hit_type_version}", **fields,
    )


# --------------------------------------------------------------------------- forced choice A/B


class PairwisePayloadForm(StoredOrInlinePayloadForm):
    """Either a stored comparison, or the texts inline (generic CSV batches), optionally with
    the two models' names (then stored at upload) and an ``item_id`` shared by rows of one
    item."""

    comparison = forms.UUIDField(required=False)
    instruction = forms.CharField(required=False, max_length=5000)
    image_urls = forms.JSONField(required=False)
    response_a = forms.CharField(required=False, max_length=20000)
    response_b = forms.CharField(required=False, max_length=20000)
    model_a = forms.CharField(required=False, max_length=100)
    model_b = forms.CharField(required=False, max_length=100)
    item_id = forms.CharField(required=False, max_length=200)

    stored_fields, stored_alternative = ("comparison",), "a comparison id"
    inline_required = ("instruction", "response_a", "response_b")

    def clean_stored(self, data):
        if not Comparison.objects.filter(uuid=data["comparison"]).exists():
            raise ValidationError("comparison: no such comparison")
        data["comparison"] = str(data["comparison"])


@register
class PairwiseHit(ChoiceHit):
    slug = "pairwise_ab"
    version = "1"
    expected_seconds = 40
    desktop_only = True  # the images and two responses side by side
    title = gettext_noop("Which response is better?")
    template = "judging/hits/pairwise_ab.html"
    payload_form = PairwisePayloadForm
    export_columns = {name: "text" for name in (
        "instruction", "image_urls", "model_a", "model_b", "response_a", "response_b")}
    shortcuts = [
        ("1 / A", gettext_noop("choose Response A")),
        ("2 / B", gettext_noop("choose Response B")),
        ("3 / T", gettext_noop("tie (where offered)")),
        ("4", gettext_noop("both bad (where offered)")),
        ("Enter", gettext_noop("submit")),
    ]
    aliases = {"A": "response_a", "B": "response_b", "A_model": "model_a",
               "B_model": "model_b", "image_url": "image_urls"}
    example_rows = [
        {"instruction": "How many purple shapes are there?", "image_urls": [SHAPES],
         "model_a": "llava-1.5-13b", "response_a": "There are four purple shapes.",
         "model_b": "instructblip-vicuna-7b", "response_b": "There are three purple shapes."},
        {"instruction": "Which fruit has the tallest bar?", "image_urls": [BARS],
         "model_a": "llava-1.5-13b", "response_a": "Plums, with 9.",
         "model_b": "instructblip-vicuna-7b", "response_b": "Apples, with 6."},
    ]

    def export_inputs(self, tasks):
        return hit_inputs.pairwise_inputs(tasks)

    def page_context(self, task):
        payload = task.payload
        if payload.get("comparison"):
            comparison = (
                Comparison.objects.select_related("instance", "response_a", "response_b")
                .get(uuid=payload["comparison"])
            )
            return self.choice_page(task, {
                "instruction": comparison.instance.instruction,
                "images": instance_images(comparison.instance),
                "response_a": comparison.response_a.text,
                "response_b": comparison.response_b.text,
            })
        return self.choice_page(task, {
            "instruction": payload["instruction"],
            "images": _inline_images(payload),
            "response_a": payload["response_a"],
            "response_b": payload["response_b"],
        })

    def on_submitted(self, assignment) -> None:
        """Record the vote as a judgment of its comparison — once, tied to the assignment.

        ``choice`` is the on-screen side; the comparison's ``response_a`` is what was shown as A,
        so the winning model is recovered whatever the randomizer did.
        """
        uuid = assignment.task.payload.get("comparison")
        if not uuid or assignment.task.is_gold:
            return
        _record(self, assignment, comparison=Comparison.objects.get(uuid=uuid),
                choice=assignment.answer["choice"], meta=_strength(assignment.answer))


# --------------------------------------------------------------------------- multi-turn A/B


class MultiTurnPayloadForm(StoredOrInlinePayloadForm):
    """A stored comparison of two models on a conversation, or the turns inline:
    ``turns`` = [{"instruction", "response_a", "response_b", "focus_points"?,
    "capability"?}, …] (1–3), optionally with the two models' names and an ``item_id``."""

    comparison = forms.UUIDField(required=False)
    image_urls = forms.JSONField(required=False)
    turns = forms.JSONField(required=False)
    model_a = forms.CharField(required=False, max_length=100)
    model_b = forms.CharField(required=False, max_length=100)
    item_id = forms.CharField(required=False, max_length=200)

    stored_fields, stored_alternative = ("comparison",), "a comparison"

    def clean_stored(self, data):
        comparison = Comparison.objects.filter(uuid=data["comparison"]).first()
        if comparison is None:
            raise ValidationError("comparison: no such comparison")
        if not comparison.instance.turns.exists():
            raise ValidationError("comparison: its instance is not a conversation")
        data["comparison"] = str(data["comparison"])

    def clean_inline(self, data):
        turns = data.get("turns")
        if not isinstance(turns, list) or not 1 <= len(turns) <= 3:
            raise ValidationError("turns must be a JSON list of 1–3 turns (or give a comparison)")
        for number, turn in enumerate(turns, start=1):
            if not isinstance(turn, dict):
                raise ValidationError(f"turn {number}: expected an object")
            for key in ("instruction", "response_a", "response_b"):
                if not isinstance(turn.get(key), str) or not turn[key].strip():
                    raise ValidationError(f"turn {number}: {key} is required")


def conversation_turns(comparison: Comparison) -> list[dict]:
    """Each turn's question, focus points and both models' answers, in on-screen order."""
    model_a, model_b = comparison.response_a.model_id, comparison.response_b.model_id
    condition = comparison.response_a.condition
    answers = {
        (r.model_id, r.turn): r.text
        for r in Response.objects.filter(instance=comparison.instance, condition=condition,
                                         model_id__in=[model_a, model_b])
    }
    return [
        {"number": t.turn, "instruction": t.instruction, "focus_points": t.focus_points or [],
         "response_a": answers.get((model_a, t.turn), ""),
         "response_b": answers.get((model_b, t.turn), "")}
        for t in comparison.instance.turns.all()
    ]


@register
class MultiTurnHit(ChoiceHit):
    slug = "multiturn_ab"
    version = "1"
    expected_seconds = 150
    desktop_only = True  # two whole conversations side by side
    title = gettext_noop("Which assistant handled the conversation better?")
    template = "judging/hits/multiturn_ab.html"
    payload_form = MultiTurnPayloadForm
    export_columns = {name: "text" for name in ("image_urls", "model_a", "model_b", *(
        f"{turn}.{key}" for turn in TURN_FIELDS
        for key in ("instruction", "response_a", "response_b")))}
    shortcuts = [
        ("1 / A", gettext_noop("Assistant A for the highlighted question")),
        ("2 / B", gettext_noop("Assistant B for the highlighted question")),
        ("3 / T", gettext_noop("tie (where offered)")),
        ("4", gettext_noop("both bad (where offered)")),
        ("Enter", gettext_noop("submit")),
    ]
    choice_fields = (*TURN_FIELDS, "overall")  # strength, where asked, is the overall's
    aliases = {"A_model": "model_a", "B_model": "model_b", "image_url": "image_urls"}
    example_rows = [
        {"image_urls": [SCENE],
         "model_a": "llava-1.5-13b", "model_b": "qwen-vl-chat",
         "turns": [
             {"instruction": "What colour is the door of the house?",
              "response_a": "The door is yellow.", "response_b": "The door is blue."},
             {"instruction": "How many trees stand next to it?",
              "response_a": "Three trees, on the left of the picture.",
              "response_b": "Two trees."}]},
        {"image_urls": [BARS],
         "model_a": "qwen-vl-chat", "model_b": "llava-1.5-13b",
         "turns": [
             {"instruction": "Which bar is the tallest?",
              "response_a": "The bar for plums, at 9.", "response_b": "The bar for apples."},
             {"instruction": "By how much does it exceed the shortest?",
              "response_a": "By 6: plums 9, limes 3.", "response_b": "By about 5."},
             {"instruction": "Write a one-line caption for the chart.",
              "response_a": "Plums lead at 9; limes trail at 3.",
              "response_b": "Four kinds of fruit."}]},
    ]

    def export_inputs(self, tasks):
        return hit_inputs.multiturn_inputs(tasks)

    def _turns(self, task) -> tuple[list[dict], list[dict]]:
        payload = task.payload
        if payload.get("comparison"):
            comparison = Comparison.objects.select_related(
                "instance", "response_a", "response_b").get(uuid=payload["comparison"])
            return conversation_turns(comparison), instance_images(comparison.instance)
        turns = [{"number": i, "focus_points": t.get("focus_points") or [], **t}
                 for i, t in enumerate(payload["turns"], start=1)]
        return turns, _inline_images(payload)

    def page_context(self, task):
        turns, images = self._turns(task)
        return self.choice_page(task, {"turns": turns, "images": images})

    def clean_answer(self, data, *, task):
        turns, _ = self._turns(task)
        shown = {f"turn{t['number']}" for t in turns}
        missing = [f"turn {t['number']}" for t in turns if not data.get(f"turn{t['number']}")]
        if missing:
            raise ValidationError(f"Choose an assistant for {', '.join(missing)}.")
        options = self.options_of(task.batch)
        answer = {}
        for field in self.choice_fields:
            value = check_choice(data.get(field), options, field, required=field == "overall")
            if value and (field == "overall" or field in shown):
                answer[field] = value
        strength = check_strength(data.get("strength"), answer["overall"], options)
        if strength:
            answer["strength"] = strength
        return answer

    def on_submitted(self, assignment) -> None:
        """One judgment per turn plus one for the whole conversation ('overall')."""
        uuid = assignment.task.payload.get("comparison")
        if not uuid or assignment.task.is_gold:
            return
        comparison = Comparison.objects.get(uuid=uuid)
        answer = assignment.answer
        for field in (*TURN_FIELDS, "overall"):
            if answer.get(field):
                _record(self, assignment, comparison=comparison, choice=answer[field],
                        turn=field.removeprefix("turn"),
                        meta=_strength(answer) if field == "overall" else {})


# --------------------------------------------------------------------------- rubric score


class RubricPayloadForm(StoredOrInlinePayloadForm):
    """A stored response (+ optional rubric id; else the instance's first rubric), or inline
    (with the ``model`` that wrote the response, stored at upload, and an optional
    ``item_id``)."""

    response = forms.UUIDField(required=False)
    rubric = forms.UUIDField(required=False)
    instruction = forms.CharField(required=False, max_length=5000)
    image_urls = forms.JSONField(required=False)
    response_text = forms.CharField(required=False, max_length=20000)
    criteria = forms.CharField(required=False, max_length=5000)
    score1 = forms.CharField(required=False, max_length=2000)
    score2 = forms.CharField(required=False, max_length=2000)
    score3 = forms.CharField(required=False, max_length=2000)
    score4 = forms.CharField(required=False, max_length=2000)
    score5 = forms.CharField(required=False, max_length=2000)
    reference_answer = forms.CharField(required=False, max_length=20000)
    model = forms.CharField(required=False, max_length=100)
    item_id = forms.CharField(required=False, max_length=200)

    stored_fields, stored_alternative = ("response",), "a response id"
    inline_required = ("instruction", "response_text", "criteria", "score1", "score2", "score3",
                       "score4", "score5")

    def clean_stored(self, data):
        from annotation.models import ScoreRubric

        response = Response.objects.filter(uuid=data["response"]).first()
        if response is None:
            raise ValidationError("response: no such response")
        rubrics = ScoreRubric.objects.filter(instance=response.instance)
        if data.get("rubric"):
            if not ScoreRubric.objects.filter(uuid=data["rubric"]).exists():
                raise ValidationError("rubric: no such rubric")
            data["rubric"] = str(data["rubric"])
        elif not rubrics.exists():
            raise ValidationError("response: its instance has no rubric (give a rubric id)")
        data["response"] = str(data["response"])


class RubricAnswerForm(forms.Form):
    score = forms.TypedChoiceField(choices=[(i, str(i)) for i in range(1, 6)], coerce=int,
                                   label="Score")
    feedback = forms.CharField(min_length=20, max_length=2000, strip=True, label="Your feedback")


SIMILAR_RESPONSES = 20  # other models' responses a rubric feedback is compared with

_LEVELS = {"score1": "Does not address the question.", "score2": "Mostly wrong.",
           "score3": "Partly right, with a clear error.", "score4": "Right, with a small slip.",
           "score5": "Fully right and grounded in the image."}


@register
class RubricHit(RatingHit):
    slug = "rubric_score"
    version = "1"
    expected_seconds = 120
    title = gettext_noop("Score the response with the rubric")
    template = "judging/hits/rubric_score.html"
    payload_form = RubricPayloadForm
    export_columns = {name: "text" for name in (
        "instruction", "image_urls", "model", "response", "criteria",
        *(f"score{i}" for i in range(1, 6)), "reference_answer")}
    answer_form = RubricAnswerForm
    shortcuts = [
        ("1–5", gettext_noop("choose the score")),
        ("Enter", gettext_noop("submit (outside the feedback box)")),
    ]
    free_text_fields = ("feedback",)
    example_rows = [
        {"instruction": "How many circles are there?", "image_urls": [SHAPES],
         "model": "llava-1.5-13b", "response_text": "There are four circles.",
         "criteria": "Does the answer count the circles correctly from the image?", **_LEVELS,
         "reference_answer": "Four: one blue and three purple."},
        {"instruction": "Describe the house.", "image_urls": [SCENE],
         "model": "instructblip-vicuna-7b",
         "response_text": "A blue house with a yellow door and a red roof.",
         "criteria": "Does the answer describe the house and nothing that is not there?",
         **_LEVELS},
    ]

    def export_inputs(self, tasks):
        return hit_inputs.rubric_inputs(tasks)

    def page_context(self, task):
        from annotation.models import ScoreRubric

        payload = task.payload
        if payload.get("response"):
            response = Response.objects.select_related("instance").get(uuid=payload["response"])
            rubrics = ScoreRubric.objects.filter(instance=response.instance)
            rubric = (ScoreRubric.objects.get(uuid=payload["rubric"]) if payload.get("rubric")
                      else rubrics.order_by("pk").first())
            return {"instruction": response.instance.instruction,
                    "images": instance_images(response.instance), "response_text": response.text,
                    "criteria": rubric.criteria, "levels": rubric.levels(),
                    "reference_answer": rubric.reference_answer}
        return {"instruction": payload["instruction"], "images": _inline_images(payload),
                "response_text": payload["response_text"], "criteria": payload["criteria"],
                "levels": [(i, payload[f"score{i}"]) for i in range(1, 6)],
                "reference_answer": payload.get("reference_answer", "")}

    def similar_texts(self, task):
        """Feedback must not restate the page: the response scored, the reference answer, and
        (for a stored response) the instance's LLM candidate reference and the other models'
        responses to it (at most ``SIMILAR_RESPONSES``)."""
        payload = task.payload
        if not payload.get("response"):
            return [t for t in (payload.get("response_text"), payload.get("reference_answer"))
                    if t]
        response = Response.objects.select_related("instance").filter(
            uuid=payload["response"]).first()
        if response is None:
            return []
        instance = response.instance
        others = (Response.objects.filter(instance=instance).exclude(pk=response.pk)
                  .order_by("pk").values_list("text", flat=True)[:SIMILAR_RESPONSES])
        from annotation.models import ScoreRubric

        references = ScoreRubric.objects.filter(instance=instance).values_list(
            "reference_answer", flat=True)
        return [t for t in (response.text, instance.candidate_reference, *references, *others)
                if t]

    def clean_gold(self, gold):
        """``{"score": 1–5, "tolerance": 0–4}`` (tolerance optional; whole numbers)."""
        score = _whole(gold.get("score")) if isinstance(gold, dict) else None
        tolerance = _whole(gold.get("tolerance", 0)) if isinstance(gold, dict) else None
        if score not in range(1, 6) or tolerance not in range(0, 5):
            raise ValidationError('_gold_answer must be {"score": 1–5, "tolerance": 0–4} '
                                  "(tolerance optional)")
        return gold

    def is_correct(self, answer, gold) -> bool:
        """Gold ``{"score": s, "tolerance": t}``: right when within t points (default 0)."""
        return abs(int(answer["score"]) - int(gold["score"])) <= int(gold.get("tolerance", 0))

    def on_submitted(self, assignment) -> None:
        uuid = assignment.task.payload.get("response")
        if not uuid or assignment.task.is_gold:
            return
        _record(self, assignment, kind=Judgment.Kind.SCORE,
                response=Response.objects.get(uuid=uuid), score=float(assignment.answer["score"]),
                feedback=assignment.answer["feedback"],
                meta={"rubric": assignment.task.payload.get("rubric", "")})


# --------------------------------------------------------------------------- feedback A/B


class FeedbackPayloadForm(StoredOrInlinePayloadForm):
    """Two stored score judgments of the same response, or the texts inline — with the
    ``model`` that wrote the response and the authors of the feedbacks (``source_a``,
    ``source_b``: a judge's name or ``human``; optional ``score_a``, ``score_b``) they are
    stored at upload."""

    judgment_a = forms.UUIDField(required=False)
    judgment_b = forms.UUIDField(required=False)
    instruction = forms.CharField(required=False, max_length=5000)
    image_urls = forms.JSONField(required=False)
    response_text = forms.CharField(required=False, max_length=20000)
    feedback_a = forms.CharField(required=False, max_length=5000)
    feedback_b = forms.CharField(required=False, max_length=5000)
    model = forms.CharField(required=False, max_length=100)
    source_a = forms.CharField(required=False, max_length=100)
    source_b = forms.CharField(required=False, max_length=100)
    score_a = forms.FloatField(required=False, min_value=1, max_value=5)
    score_b = forms.FloatField(required=False, min_value=1, max_value=5)
    item_id = forms.CharField(required=False, max_length=200)

    stored_fields, stored_alternative = ("judgment_a", "judgment_b"), "two judgment ids"
    inline_required = ("instruction", "response_text", "feedback_a", "feedback_b")

    def clean_stored(self, data):
        found = {j.uuid: j for j in Judgment.objects.filter(
            uuid__in=[data.get("judgment_a"), data.get("judgment_b")], response__isnull=False)}
        a, b = found.get(data.get("judgment_a")), found.get(data.get("judgment_b"))
        if a is None or b is None or a == b:
            raise ValidationError("judgment_a / judgment_b: two distinct scored judgments")
        if a.response_id != b.response_id:
            raise ValidationError("judgment_a / judgment_b: must judge the same response")
        data["judgment_a"], data["judgment_b"] = str(a.uuid), str(b.uuid)


@register
class FeedbackHit(ChoiceHit):
    slug = "feedback_ab"
    version = "1"
    expected_seconds = 60
    title = gettext_noop("Which feedback is better?")
    template = "judging/hits/feedback_ab.html"
    payload_form = FeedbackPayloadForm
    export_columns = {
        **{name: "text" for name in ("instruction", "image_urls", "model", "response")},
        "source_a": "text", "score_a": "float", "feedback_a": "text",
        "source_b": "text", "score_b": "float", "feedback_b": "text"}
    shortcuts = [
        ("1 / A", gettext_noop("choose Feedback A")),
        ("2 / B", gettext_noop("choose Feedback B")),
        ("3 / T", gettext_noop("tie (where offered)")),
        ("4", gettext_noop("both bad (where offered)")),
        ("Enter", gettext_noop("submit")),
    ]
    example_rows = [
        {"instruction": "How many circles are there?", "image_urls": [SHAPES],
         "model": "llava-1.5-13b", "response_text": "There are four circles.",
         "source_a": "prometheus-vision-13b", "score_a": 5,
         "feedback_a": "Counts the one blue and three purple circles correctly: four.",
         "source_b": "gpt-4v", "score_b": 3,
         "feedback_b": "Gives a number but does not say which colours the circles are."},
        {"instruction": "Describe the house.", "image_urls": [SCENE],
         "model": "instructblip-vicuna-7b",
         "response_text": "A blue house with a yellow door and a red roof.",
         "source_a": "gpt-4v", "score_a": 3,
         "feedback_a": "Wall and door are right; the roof is brown, not red.",
         "source_b": "prometheus-vision-13b", "score_b": 5,
         "feedback_b": "Every part of the house is described."},
    ]

    def export_inputs(self, tasks):
        return hit_inputs.feedback_inputs(tasks)

    def page_context(self, task):
        payload = task.payload
        if payload.get("judgment_a"):
            # The feedbacks are the task's content: shown even if a vote among them was
            # rejected after the batch was made (its own counts leave it out, not its text).
            a = Judgment.with_rejected.select_related("response__instance").get(
                uuid=payload["judgment_a"])
            b = Judgment.with_rejected.get(uuid=payload["judgment_b"])
            instance = a.response.instance
            return self.choice_page(task, {
                "instruction": instance.instruction, "images": instance_images(instance),
                "response_text": a.response.text,
                "feedback_a": a.feedback, "score_a": a.score,
                "feedback_b": b.feedback, "score_b": b.score})
        return self.choice_page(task, {
            "instruction": payload["instruction"], "images": _inline_images(payload),
            "response_text": payload["response_text"],
            "feedback_a": payload["feedback_a"], "feedback_b": payload["feedback_b"]})

    def on_submitted(self, assignment) -> None:
        payload = assignment.task.payload
        if not payload.get("judgment_a") or assignment.task.is_gold:
            return
        found = {str(j.uuid): j for j in Judgment.with_rejected.filter(  # content, as above
            uuid__in=[payload["judgment_a"], payload["judgment_b"]])}
        a, b = found[payload["judgment_a"]], found[payload["judgment_b"]]
        _record(self, assignment, kind=Judgment.Kind.FEEDBACK, response_id=a.response_id,
                choice=assignment.answer["choice"],
                meta={"judgment_a": str(a.uuid), "source_a": a.source,
                      "judgment_b": str(b.uuid), "source_b": b.source,
                      **_strength(assignment.answer)})
