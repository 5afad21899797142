"""Export of judgments (human or automatic) in the formats of ``.formats``: generic CSV /
JSONL, one row per judgment, or the VisIT-Bench human-preference CSV of human pairs."""
import io
import json

from annotation.core import csv_safety
from studies.models import study_pk

from ...models import Judgment, Response
from .formats import COLUMNS, FLIP, VISIT_COLUMNS


def _image_urls(instance) -> list[str]:
    return [ii.image.source_url or ii.image.display_url
            for ii in instance.instance_images.all()]


class _Texts:
    """Response texts per (instance, condition, turn), one query per conversation turn."""

    def __init__(self):
        self.cache: dict[tuple, dict[int, str]] = {}

    def turn(self, instance, condition: str, turn: int) -> dict[int, str]:
        key = (instance.pk, condition, turn)
        if key not in self.cache:
            self.cache[key] = dict(Response.objects.filter(
                instance=instance, condition=condition, turn=turn).values_list("model_id", "text"))
        return self.cache[key]

    def conversation(self, response) -> str:
        """A model's answers to every turn as the JSON list an overall row carries."""
        answers = []
        for turn in (1, 2, 3):
            text = self.turn(response.instance, response.condition, turn).get(response.model_id)
            if text is None:
                break
            answers.append(text)
        return json.dumps(answers or [response.text], ensure_ascii=False)

    def for_turn(self, response, turn: str) -> str:
        if turn == "overall":
            return self.conversation(response)
        if turn in ("2", "3"):
            return self.turn(response.instance, response.condition, int(turn)).get(
                response.model_id, "")
        return response.text


def _feedback_pair(j: Judgment, linked: dict[str, Judgment]) -> str:
    """The two feedbacks a feedback judgment compared, from its meta (imported) or from the
    scored judgments it names (collected through the engine)."""
    items = []
    for side in "ab":
        if f"feedback_{side}" in j.meta:
            items.append({"source": j.meta.get(f"source_{side}", ""),
                          "score": j.meta.get(f"score_{side}"),
                          "feedback": j.meta[f"feedback_{side}"]})
            continue
        scored = linked.get(str(j.meta.get(f"judgment_{side}", "")))
        items.append({"source": scored.source if scored else j.meta.get(f"source_{side}", ""),
                      "score": scored.score if scored else None,
                      "feedback": scored.feedback if scored else ""})
    return json.dumps(items, ensure_ascii=False)


def export_rows(*, source: str | None = None, study=None) -> list[dict]:
    """Generic rows (pairwise, scored and feedback judgments) of ``study``'s items (None: the
    default study) in timestamp order."""
    sid = study_pk(study)
    qs = (Judgment.objects
          .filter(study_id=sid)
          .select_related("comparison__instance", "comparison__response_a__model",
                          "comparison__response_b__model", "response__instance",
                          "response__model")
          .prefetch_related("comparison__instance__instance_images__image",
                            "response__instance__instance_images__image")
          .order_by("created_at", "pk"))
    if source:
        qs = qs.filter(source=source)
    if study is not None:
        qs = qs.filter(study=study)
    judgments = list(qs)
    wanted = {str(j.meta.get(f"judgment_{s}")) for j in judgments if j.kind == Judgment.Kind.FEEDBACK
              for s in "ab" if j.meta.get(f"judgment_{s}")}
    linked = ({str(j.uuid): j for j in Judgment.with_rejected.filter(uuid__in=wanted)}  # texts
              if wanted else {})
    texts = _Texts()
    rows = []
    for j in judgments:
        if j.comparison_id:
            c = j.comparison
            instance, ma, mb = c.instance, c.response_a.model, c.response_b.model
            ra, rb = texts.for_turn(c.response_a, j.turn), texts.for_turn(c.response_b, j.turn)
            choice = j.choice
            if j.meta.get("shown_flipped"):
                ma, mb, ra, rb, choice = mb, ma, rb, ra, FLIP[choice]
            pair = {"model_a": ma.name, "response_a": ra, "model_b": mb.name, "response_b": rb,
                    "choice": choice, "score": ""}
        elif j.kind == Judgment.Kind.FEEDBACK:
            instance = j.response.instance
            pair = {"model_a": j.response.model.name, "response_a": texts.for_turn(j.response,
                                                                                   j.turn),
                    "model_b": "", "response_b": _feedback_pair(j, linked),
                    "choice": j.choice, "score": ""}
        else:
            instance = j.response.instance
            pair = {"model_a": j.response.model.name,
                    "response_a": texts.for_turn(j.response, j.turn) if j.turn == "overall"
                    else j.response.text,
                    "model_b": "", "response_b": "", "choice": "",
                    "score": "" if j.score is None else f"{j.score:g}"}
        rows.append({"item_id": instance.external_id or str(instance.uuid),
                     "dataset": instance.source if instance.external_id else "",
                     "instruction": instance.instruction,
                     "image_urls": json.dumps(_image_urls(instance)), **pair,
                     "annotator": j.annotator, "source": j.source, "turn": j.turn,
                     "timestamp": j.created_at.isoformat()})
    return rows


def judgments_export(fmt: str = "csv", *, source: str | None = None, study=None) -> str:
    """``study``'s judgments as text (None: the default study's): ``csv`` / ``jsonl``
    (generic) or ``visitbench`` (human pairs)."""
    if fmt == "visitbench":
        return _write_csv(VISIT_COLUMNS, _visit_rows(source or Judgment.HUMAN, study))
    rows = export_rows(source=source, study=study)
    if fmt == "jsonl":
        return "".join(json.dumps({**r, "image_urls": json.loads(r["image_urls"])},
                                  ensure_ascii=False) + "\n" for r in rows)
    if fmt == "csv":
        return _write_csv(COLUMNS, rows)
    raise ValueError(f"unknown format {fmt!r}; use csv, jsonl or visitbench")


def _visit_rows(source: str, study=None) -> list[dict]:
    out = []
    for r in export_rows(source=source, study=study):
        if r["turn"] or not r["model_b"] or r["choice"] not in ("A", "B"):
            continue  # the human-preference file holds single-turn forced choices only
        urls = json.loads(r["image_urls"])
        out.append({"image_url": urls[0] if len(urls) == 1 else json.dumps(urls),
                    "instruction": r["instruction"], "A": r["response_a"], "B": r["response_b"],
                    "A_model": r["model_a"], "B_model": r["model_b"],
                    "model_selection.A": int(r["choice"] == "A"),
                    "model_selection.B": int(r["choice"] == "B")})
    return out


def _write_csv(columns, rows) -> str:
    """Text cells are neutralised (``csv_safety``); ``judgments_import`` undoes it, so an
    export still re-imports to the same judgments and the same bytes."""
    out = io.StringIO()
    writer = csv_safety.SafeDictWriter(out, fieldnames=columns, extrasaction="ignore",
                                       lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()
