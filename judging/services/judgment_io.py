"""Import and export of judgments (human or automatic), one judgment per row.

Generic format (CSV or JSONL), exactly these columns, extra columns ignored:
``item_id, instruction, image_urls`` (JSON list) ``, model_a, response_a, model_b, response_b,
annotator, source`` (``human`` or a judge name) ``, choice`` (A / B / tie) ``, score``
(rubric / graded rows, which leave model_b, response_b and choice empty) ``, turn`` (empty,
1–3 or ``overall``) ``, timestamp`` (ISO 8601, optional; file order otherwise).

VisIT-Bench human-preference CSV: ``image_url, instruction, A, B, A_model, B_model,
model_selection.A, model_selection.B``; a row whose selections are counts (e.g. 3 and 2) stands
for that many votes. Export writes one row per vote (1/0), so import → export round-trips.

Import checks every row first and writes all or nothing; rows naming an unknown instance or
model are reported (and skipped only with ``skip_unmatched``; ``create_missing`` creates them).
"""
import csv
import io
import json
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.models import Worker
from annotation.services.batches import RowError, rows_from_upload

from ..models import Comparison, EvalModel, Judgment, Response
from .errors import ImportRejected, ImportReport
from .matching import InstanceIndex

COLUMNS = ["item_id", "instruction", "image_urls", "model_a", "response_a", "model_b",
           "response_b", "annotator", "source", "choice", "score", "turn", "timestamp"]
VISIT_COLUMNS = ["image_url", "instruction", "A", "B", "A_model", "B_model",
                 "model_selection.A", "model_selection.B"]
TURNS = {"", "1", "2", "3", "overall"}


# --------------------------------------------------------------------------- parsing rows


def _text(row, key) -> str:
    value = row.get(key)
    return "" if value is None else str(value).strip()


def _urls(raw, number) -> list[str]:
    if isinstance(raw, list):
        return [str(u) for u in raw]
    raw = (raw or "").strip()
    if not raw:
        return []
    if not raw.startswith("["):
        return [raw]
    try:
        urls = json.loads(raw)
    except json.JSONDecodeError:
        raise ImportRejected(f"Row {number}: image_urls is not a JSON list") from None
    if not isinstance(urls, list):
        raise ImportRejected(f"Row {number}: image_urls is not a JSON list")
    return [str(u) for u in urls]


def _clean(row: dict, number: int) -> dict:
    """A generic row checked and normalised; raises ImportRejected naming the row."""
    out = {k: _text(row, k) for k in COLUMNS if k != "image_urls"}
    out["image_urls"] = _urls(row.get("image_urls"), number)
    out["source"] = out["source"] or "human"
    out["turn"] = out["turn"].lower()
    if out["turn"] not in TURNS:
        raise ImportRejected(f"Row {number}: turn must be empty, 1–3 or 'overall'")
    if not out["model_a"]:
        raise ImportRejected(f"Row {number}: model_a is required")
    if not out["annotator"]:
        raise ImportRejected(f"Row {number}: annotator is required")
    if out["score"]:
        try:
            out["score"] = float(out["score"])
        except ValueError:
            raise ImportRejected(f"Row {number}: score is not a number") from None
        if out["model_b"] or out["choice"]:
            raise ImportRejected(f"Row {number}: a scored row leaves model_b and choice empty")
    else:
        out["score"] = None
        if out["choice"].lower() == "tie":
            out["choice"] = "tie"
        if out["choice"] not in ("A", "B", "tie"):
            raise ImportRejected(f"Row {number}: choice must be A, B or tie (or give a score)")
        if not out["model_b"]:
            raise ImportRejected(f"Row {number}: model_b is required for a choice")
        if out["model_a"] == out["model_b"]:
            raise ImportRejected(f"Row {number}: model_a and model_b are the same")
    if out["timestamp"]:
        stamp = parse_datetime(out["timestamp"])
        if stamp is None:
            raise ImportRejected(f"Row {number}: timestamp is not ISO 8601")
        out["timestamp"] = stamp if timezone.is_aware(stamp) else timezone.make_aware(stamp)
    else:
        out["timestamp"] = None
    return out


def _selection(value, number, column) -> float:
    raw = str(value if value is not None else "").strip().lower()
    if raw in ("true", "yes"):
        return 1.0
    if raw in ("false", "no", ""):
        return 0.0
    try:
        return float(raw)
    except ValueError:
        raise ImportRejected(f"Row {number}: {column} must be a count or true/false") from None


def visit_rows_to_generic(rows: list[dict]) -> list[tuple[int, dict]]:
    """Human-preference rows → (row number, generic row) per vote."""
    out = []
    for number, row in enumerate(rows, start=1):
        missing = [c for c in VISIT_COLUMNS if c not in row]
        if missing:
            raise ImportRejected(f"Row {number}: missing column(s) {missing}")
        votes_a = _selection(row["model_selection.A"], number, "model_selection.A")
        votes_b = _selection(row["model_selection.B"], number, "model_selection.B")
        if votes_a != int(votes_a) or votes_b != int(votes_b) or votes_a + votes_b == 0:
            raise ImportRejected(f"Row {number}: model_selection.A/B must be whole vote counts, "
                                 "at least one vote")
        base = {"instruction": row["instruction"], "image_urls": _urls(row["image_url"], number),
                "model_a": row["A_model"], "response_a": row["A"], "model_b": row["B_model"],
                "response_b": row["B"], "annotator": _text(row, "annotator") or "visitbench-crowd",
                "source": "human"}
        out += [(number, {**base, "choice": "A"})] * int(votes_a)
        out += [(number, {**base, "choice": "B"})] * int(votes_b)
    return out


def parse_judgment_file(name: str, data: bytes, fmt: str = "auto") -> list[tuple[int, dict]]:
    """(row number, raw generic row) pairs from a generic or human-preference file."""
    try:
        rows = rows_from_upload(name, data)
    except RowError as exc:
        raise ImportRejected("; ".join(exc.messages)) from exc
    if not rows:
        raise ImportRejected(f"{name}: no rows")
    if fmt == "auto":
        fmt = "visitbench" if "model_selection.A" in rows[0] else "generic"
    if fmt == "visitbench":
        return visit_rows_to_generic(rows)
    return list(enumerate(rows, start=1))


# --------------------------------------------------------------------------- import


class _Resolver:
    """Looks rows up against the database once, creating what is missing when allowed."""

    def __init__(self, create_missing: bool):
        self.create = create_missing
        self.index = InstanceIndex()
        self.models = {m.name: m for m in EvalModel.objects.all()}
        self.items: dict[str, object] = {}
        self.workers = {str(w): w for w in Worker.objects.all()}

    def instance(self, row):
        key = row["item_id"] or json.dumps([row["instruction"], row["image_urls"]])
        if key in self.items:
            return self.items[key], ""
        found, why = self.index.find(item_id=row["item_id"], instruction=row["instruction"],
                                     image_urls=row["image_urls"])
        if found is None and self.create and row["instruction"]:
            found = self.index.create(item_id=row["item_id"], instruction=row["instruction"],
                                      image_urls=row["image_urls"],
                                      conversation=row["turn"] not in ("",))
        if found is not None:
            self.items[key] = found
        return found, why

    def model(self, name):
        if name not in self.models and self.create:
            self.models[name] = EvalModel.objects.create(name=name[:100])
        return self.models.get(name)

    def response(self, instance, model, turn: int, text: str, number: int):
        found = Response.objects.filter(instance=instance, model=model, turn=turn,
                                        condition=Response.Condition.GENERATED).first()
        if found is not None:
            if text and found.text.strip() != text.strip():
                raise ImportRejected(f"Row {number}: the response of {model.name!r} differs "
                                     "from the one stored for this item")
            return found
        if self.create and text:
            return Response.objects.create(instance=instance, model=model, turn=turn, text=text)
        return None


def _comparison(instance, ra, rb) -> tuple[Comparison, bool]:
    """The stored comparison of this pair (flipped=True when stored the other way round)."""
    same = Comparison.objects.filter(instance=instance, response_a=ra, response_b=rb).first()
    if same is not None:
        return same, False
    other = Comparison.objects.filter(instance=instance, response_a=rb, response_b=ra).first()
    if other is not None:
        return other, True
    return Comparison.objects.create(instance=instance, response_a=ra, response_b=rb,
                                     sampling="import"), False


_FLIP = {"A": "B", "B": "A", "tie": "tie"}


@transaction.atomic
def judgments_import(name: str, data: bytes, *, fmt: str = "auto", create_missing: bool = False,
                     skip_unmatched: bool = False, now: datetime | None = None) -> ImportReport:
    """Store every row of a judgments file as a Judgment, all or nothing."""
    raw = parse_judgment_file(name, data, fmt)
    rows = [(number, _clean(row, number)) for number, row in raw]
    report = ImportReport(rows=len(rows))
    resolver = _Resolver(create_missing)
    base = now or timezone.now()
    judgments = []
    for order, (number, row) in enumerate(rows):
        instance, why = resolver.instance(row)
        if instance is None:
            report.unmatched.append(f"row {number}: {why}")
            continue
        names = [row["model_a"]] + ([row["model_b"]] if row["score"] is None else [])
        models = [resolver.model(n) for n in names]
        if None in models:
            unknown = [n for n, m in zip(names, models, strict=True) if m is None]
            report.unmatched.append(f"row {number}: unknown model(s) {unknown}")
            continue
        turn = int(row["turn"]) if row["turn"].isdigit() else (1 if row["turn"] else 0)
        texts = [row["response_a"], row["response_b"]]
        if row["turn"] == "overall":
            texts = ["", ""]  # an overall verdict is about the whole conversation
        responses = [resolver.response(instance, m, turn, t, number)
                     for m, t in zip(models, texts, strict=False)]
        if None in responses:
            report.unmatched.append(f"row {number}: no stored response of "
                                    f"{[n for n, r in zip(names, responses, strict=False) if r is None]}")
            continue
        worker = resolver.workers.get(row["annotator"]) if row["source"] == "human" else None
        common = {"source": row["source"][:100], "annotator": row["annotator"][:200],
                  "worker": worker, "turn": row["turn"],
                  "created_at": row["timestamp"] or base + timedelta(microseconds=order),
                  "meta": {"import": name[-200:], "row": number}}
        if row["score"] is not None:
            judgments.append(Judgment(kind=Judgment.Kind.SCORE, response=responses[0],
                                      score=row["score"], **common))
        else:
            comparison, flipped = _comparison(instance, *responses)
            choice = _FLIP[row["choice"]] if flipped else row["choice"]
            if flipped:  # the judge saw the pair the other way round: keep that for export
                common["meta"]["shown_flipped"] = True
            judgments.append(Judgment(comparison=comparison, choice=choice, **common))
    if report.unmatched and not skip_unmatched:
        raise ImportRejected(f"{len(report.unmatched)} of {len(rows)} rows could not be matched; "
                             "nothing imported:\n  " + "\n  ".join(report.unmatched[:50]), report)
    Judgment.objects.bulk_create(judgments)
    report.created = len(judgments)
    return report


# --------------------------------------------------------------------------- export


def _image_urls(instance) -> list[str]:
    return [ii.image.source_url or ii.image.display_url
            for ii in instance.instance_images.all()]


def export_rows(*, source: str | None = None) -> list[dict]:
    """Generic rows (pairwise and scored judgments) in timestamp order."""
    qs = (Judgment.objects.exclude(kind=Judgment.Kind.FEEDBACK)
          .select_related("comparison__instance", "comparison__response_a__model",
                          "comparison__response_b__model", "response__instance",
                          "response__model")
          .prefetch_related("comparison__instance__instance_images__image",
                            "response__instance__instance_images__image")
          .order_by("created_at", "pk"))
    if source:
        qs = qs.filter(source=source)
    texts = {}
    rows = []
    for j in qs:
        if j.comparison_id:
            c = j.comparison
            instance, ma, mb = c.instance, c.response_a.model, c.response_b.model
            ra, rb = c.response_a.text, c.response_b.text
            if j.turn in ("2", "3"):
                key = (instance.pk, int(j.turn))
                if key not in texts:
                    texts[key] = dict(Response.objects.filter(
                        instance=instance, turn=int(j.turn)).values_list("model_id", "text"))
                ra, rb = texts[key].get(ma.pk, ""), texts[key].get(mb.pk, "")
            elif j.turn == "overall":
                ra = rb = ""
            choice = j.choice
            if j.meta.get("shown_flipped"):
                ma, mb, ra, rb, choice = mb, ma, rb, ra, _FLIP[choice]
            pair = {"model_a": ma.name, "response_a": ra, "model_b": mb.name, "response_b": rb,
                    "choice": choice, "score": ""}
        else:
            instance = j.response.instance
            pair = {"model_a": j.response.model.name, "response_a": j.response.text,
                    "model_b": "", "response_b": "", "choice": "",
                    "score": "" if j.score is None else f"{j.score:g}"}
        rows.append({"item_id": instance.external_id or str(instance.uuid),
                     "instruction": instance.instruction,
                     "image_urls": json.dumps(_image_urls(instance)), **pair,
                     "annotator": j.annotator, "source": j.source, "turn": j.turn,
                     "timestamp": j.created_at.isoformat()})
    return rows


def judgments_export(fmt: str = "csv", *, source: str | None = None) -> str:
    """The judgments as text: ``csv`` / ``jsonl`` (generic) or ``visitbench`` (human pairs)."""
    if fmt == "visitbench":
        return _write_csv(VISIT_COLUMNS, _visit_rows(source or "human"))
    rows = export_rows(source=source)
    if fmt == "jsonl":
        return "".join(json.dumps({**r, "image_urls": json.loads(r["image_urls"])},
                                  ensure_ascii=False) + "\n" for r in rows)
    if fmt == "csv":
        return _write_csv(COLUMNS, rows)
    raise ValueError(f"unknown format {fmt!r}; use csv, jsonl or visitbench")


def _visit_rows(source: str) -> list[dict]:
    out = []
    for r in export_rows(source=source):
        if r["turn"] or r["choice"] not in ("A", "B"):
            continue  # the human-preference file holds single-turn forced choices only
        urls = json.loads(r["image_urls"])
        out.append({"image_url": urls[0] if len(urls) == 1 else json.dumps(urls),
                    "instruction": r["instruction"], "A": r["response_a"], "B": r["response_b"],
                    "A_model": r["model_a"], "B_model": r["model_b"],
                    "model_selection.A": int(r["choice"] == "A"),
                    "model_selection.B": int(r["choice"] == "B")})
    return out


def _write_csv(columns, rows) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()
