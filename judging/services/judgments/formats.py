"""The judgment file formats: their columns, and rows read, checked and normalised.

Generic format (CSV or JSONL), exactly these columns, extra columns ignored:
``item_id, dataset, instruction, image_urls`` (JSON list) ``, model_a, response_a, model_b,
response_b, annotator, source`` (``human`` or a judge name; a variant such as ``Human`` is
refused) ``, choice`` (A / B / tie) ``, score`` (rubric / graded rows, which leave model_b,
response_b and choice empty) ``, turn`` (empty, 1–3 or ``overall``) ``, timestamp`` (ISO 8601,
optional; file order otherwise). ``dataset`` is optional (the importer's ``dataset`` argument,
else any).

What a row is follows from which columns it fills:

- **pairwise** (``model_b`` and ``choice``): which of the two responses is better.
- **score** (``score``; ``model_b``, ``response_b``, ``choice`` empty): a graded response.
- **feedback** (``choice`` but no ``model_b``): which of two feedbacks on the response of
  ``model_a`` is better (the "which feedback is better" HIT). ``response_b`` holds the two
  feedbacks as a JSON list ``[{"source": …, "score": …, "feedback": …}, {…}]`` (A first;
  ``source`` and ``score`` may be null).
- ``turn = overall`` (a verdict on a whole conversation): ``response_a`` / ``response_b`` hold
  the model's answers to every turn as a JSON list, turn 1 first (empty when already stored).

VisIT-Bench human-preference CSV: ``image_url, instruction, A, B, A_model, B_model,
model_selection.A, model_selection.B``; a row whose selections are counts (e.g. 3 and 2) stands
for that many votes. Export writes one row per vote (1/0), so import → export round-trips.
"""
import json
import math

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.core.db_text import storage_problem
from annotation.core.row_checks import field_problem, url_problem
from annotation.engine.services.batches import RowError, rows_from_upload
from annotation.models import Image, Instance

from ...models import EvalModel, Judgment, Response
from ..errors import ImportRejected

COLUMNS = ["item_id", "dataset", "instruction", "image_urls", "model_a", "response_a", "model_b",
           "response_b", "annotator", "source", "choice", "score", "turn", "timestamp"]
VISIT_COLUMNS = ["image_url", "instruction", "A", "B", "A_model", "B_model",
                 "model_selection.A", "model_selection.B"]
TURNS = {"", "1", "2", "3", "overall"}
MAX_VOTES = 1000  # per human-preference row: a larger count is a corrupt cell, not votes
FLIP = {"A": "B", "B": "A", "tie": "tie"}  # a choice seen with the two sides swapped


def _text(row, key) -> str:
    value = row.get(key)
    return "" if value is None else str(value).strip()


def _urls(raw, number) -> list[str]:
    if isinstance(raw, list):
        return [str(u) for u in raw]
    if raw is not None and not isinstance(raw, str):
        raise ImportRejected(f"Row {number}: image_urls is not a JSON list")
    raw = (raw or "").strip()
    if not raw:
        return []
    if not raw.startswith("["):
        return [raw]
    try:
        urls = json.loads(raw)
    except (json.JSONDecodeError, RecursionError):
        raise ImportRejected(f"Row {number}: image_urls is not a JSON list") from None
    if not isinstance(urls, list):
        raise ImportRejected(f"Row {number}: image_urls is not a JSON list")
    return [str(u) for u in urls]


def answers(raw: str, number: int, column: str) -> list[str]:
    """An overall row's answers per turn: a JSON list of strings (a plain text is turn 1)."""
    if not raw:
        return []
    if not raw.startswith("["):
        return [raw]
    try:
        texts = json.loads(raw)
    except (json.JSONDecodeError, RecursionError):
        raise ImportRejected(f"Row {number}: {column} of an overall row is not a JSON "
                             "list of answers") from None
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts) \
            or len(texts) > 3:
        raise ImportRejected(f"Row {number}: {column} of an overall row must be a JSON list "
                             "of up to 3 answers")
    return texts


def _feedbacks(raw: str, number: int) -> list[dict]:
    """A feedback row's two feedbacks (``response_b``), normalised to source/score/feedback."""
    try:
        items = json.loads(raw) if raw else None
    except (json.JSONDecodeError, RecursionError):
        items = None
    if not isinstance(items, list) or len(items) != 2 or not all(
            isinstance(i, dict) and isinstance(i.get("feedback"), str) and i["feedback"].strip()
            for i in items):
        raise ImportRejected(f"Row {number}: a choice needs model_b (pairwise) or, for a "
                             "feedback row, response_b as a JSON list of two "
                             '{"source", "score", "feedback"} objects')
    out = []
    for item in items:
        score = item.get("score")
        if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
            raise ImportRejected(f"Row {number}: a feedback's score is not a number")
        if score is not None and not _finite(score):
            raise ImportRejected(f"Row {number}: a feedback's score is not a finite number")
        out.append({"source": str(item.get("source") or ""),
                    "score": None if score is None else float(score),
                    "feedback": item["feedback"]})
    return out


def clean_row(row: dict, number: int) -> dict:
    """A generic row checked and normalised; raises ImportRejected naming the row."""
    out = {k: _text(row, k) for k in COLUMNS if k != "image_urls"}
    out["image_urls"] = _urls(row.get("image_urls"), number)
    out["source"] = out["source"] or Judgment.HUMAN
    if out["source"] != Judgment.HUMAN and Judgment.is_reserved_name(out["source"]):
        raise ImportRejected(f"Row {number}: source {out['source']!r} is reserved: write "
                             f"{Judgment.HUMAN!r} for a human vote, another name for a judge")
    out["turn"] = out["turn"].lower()
    out["kind"] = Judgment.Kind.PAIRWISE
    out["feedbacks"] = None
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
        if not math.isfinite(out["score"]):
            raise ImportRejected(f"Row {number}: score is not a finite number")
        if out["model_b"] or out["choice"]:
            raise ImportRejected(f"Row {number}: a scored row leaves model_b and choice empty")
        out["kind"] = Judgment.Kind.SCORE
    else:
        out["score"] = None
        if out["choice"].lower() == "tie":
            out["choice"] = "tie"
        if out["choice"] not in ("A", "B", "tie"):
            raise ImportRejected(f"Row {number}: choice must be A, B or tie (or give a score)")
        if not out["model_b"]:
            out["kind"] = Judgment.Kind.FEEDBACK
            out["feedbacks"] = _feedbacks(out["response_b"], number)
        elif out["model_a"] == out["model_b"]:
            raise ImportRejected(f"Row {number}: model_a and model_b are the same")
    if out["timestamp"]:
        try:
            stamp = parse_datetime(out["timestamp"])
        except ValueError:  # well formed but impossible, e.g. 30 February
            stamp = None
        if stamp is None:
            raise ImportRejected(f"Row {number}: timestamp is not ISO 8601")
        out["timestamp"] = stamp if timezone.is_aware(stamp) else timezone.make_aware(stamp)
    else:
        out["timestamp"] = None
    _check_storable(out, number)
    return out


def _finite(number) -> bool:
    try:
        return math.isfinite(number)
    except OverflowError:  # an int too large for a float
        return False


_COLUMNS = {"item_id": (Instance, "external_id"), "dataset": (Instance, "source"),
            "instruction": (Instance, "instruction"), "model_a": (EvalModel, "name"),
            "model_b": (EvalModel, "name"), "response_a": (Response, "text"),
            "response_b": (Response, "text"), "annotator": (Judgment, "annotator"),
            "source": (Judgment, "source")}


def _check_storable(row: dict, number: int) -> None:
    """The importers' one set of field checks (``annotation.core.row_checks``), per column."""
    for column, (model, name) in _COLUMNS.items():
        if (problem := field_problem(model, name, row[column])) is not None:
            raise ImportRejected(f"Row {number}: {column}: {problem}")
    if (problem := storage_problem(row)) is not None:  # the feedbacks of a feedback row
        raise ImportRejected(f"Row {number}: {problem}")
    for url in row["image_urls"]:
        if (problem := url_problem(url) or field_problem(Image, "source_url", url)) is not None:
            raise ImportRejected(f"Row {number}: image_urls: {problem}")


def _selection(value, number, column) -> float:
    raw = str(value if value is not None else "").strip().lower()
    if raw in ("true", "yes"):
        return 1.0
    if raw in ("false", "no", ""):
        return 0.0
    try:
        count = float(raw)
    except ValueError:
        raise ImportRejected(f"Row {number}: {column} must be a count or true/false") from None
    if not 0 <= count <= MAX_VOTES:  # also refuses NaN
        raise ImportRejected(f"Row {number}: {column} must be a count from 0 to {MAX_VOTES}")
    return count


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
                "source": Judgment.HUMAN}
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

