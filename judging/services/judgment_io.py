"""Import and export of judgments (human or automatic), one judgment per row.

Generic format (CSV or JSONL), exactly these columns, extra columns ignored:
``item_id, dataset, instruction, image_urls`` (JSON list) ``, model_a, response_a, model_b,
response_b, annotator, source`` (``human`` or a judge name) ``, choice`` (A / B / tie) ``, score``
(rubric / graded rows, which leave model_b, response_b and choice empty) ``, turn`` (empty,
1–3 or ``overall``) ``, timestamp`` (ISO 8601, optional; file order otherwise). ``dataset`` is
optional (the importer's ``dataset`` argument, else any).

Identity of an item (see ``matching``): a row with ``item_id`` names the item by id within its
dataset — every id its own instance, even when instruction text repeats across ids, so one model
may have different responses in different items; created instances keep the id as
``external_id`` with the dataset as ``source`` (``import`` when none is named). A row without
``item_id`` is matched by instruction + image URLs. Identity of a response: (item, model, turn);
a second, different text for it is refused. Identity of a vote: its ``import_key`` (below).
VisIT-Bench's reference, named ``human_verified_reference`` in its files, is the reference model.

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

Import checks every row first and writes all or nothing; rows naming an unknown instance or
model are reported (and skipped only with ``skip_unmatched``; ``create_missing`` creates them).

Import is idempotent. Each imported judgment carries ``meta["import_key"]``: the SHA-256 of the
canonical JSON of its identity — source, annotator, the matched instance's uuid (so an item named
by ``item_id`` or by instruction + images is the same item), kind, the models in the row's order,
turn, choice, score, the feedbacks of a feedback row, the timestamp as given (normalised; empty
when the file has none) — plus its **occurrence**: the how-manyth identical row it is within the
file (0, 1, …). Identical rows in one file are distinct votes (a human-preference row with
``model_selection.A = 3`` is three votes) and are all kept; importing the file again finds every
key already stored and skips the row (one query per 5,000 rows, inside the import's transaction;
on PostgreSQL an advisory lock runs imports one at a time, so two concurrent imports of one file
cannot both see it as new). The file's name takes no part. Judgments collected through the engine or by automatic judge runs carry no
key and are never matched or touched. Re-importing an *export* into the same database is not
recognised (the export fills ``timestamp`` and names items by id).
"""
import hashlib
import io
import json
import math
from collections import Counter
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.core import csv_safety
from annotation.dataset_formats.common import image_url_problem
from annotation.db_text import storage_problem
from annotation.models import Image, Instance, Worker
from annotation.services.batches import RowError, rows_from_upload

from ..models import Comparison, EvalModel, Judgment, Response
from .errors import ImportRejected, ImportReport
from .matching import InstanceIndex, Unknown, same_instruction
from .responses import REFERENCE_ALIASES, reference_model_for_import

COLUMNS = ["item_id", "dataset", "instruction", "image_urls", "model_a", "response_a", "model_b",
           "response_b", "annotator", "source", "choice", "score", "turn", "timestamp"]
VISIT_COLUMNS = ["image_url", "instruction", "A", "B", "A_model", "B_model",
                 "model_selection.A", "model_selection.B"]
TURNS = {"", "1", "2", "3", "overall"}
MAX_VOTES = 1000  # per human-preference row: a larger count is a corrupt cell, not votes
_IMPORT_LOCK = 0x4A554447  # PostgreSQL advisory lock: judgment imports run one at a time


# --------------------------------------------------------------------------- parsing rows


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


def _answers(raw: str, number: int, column: str) -> list[str]:
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


def _clean(row: dict, number: int) -> dict:
    """A generic row checked and normalised; raises ImportRejected naming the row."""
    out = {k: _text(row, k) for k in COLUMNS if k != "image_urls"}
    out["image_urls"] = _urls(row.get("image_urls"), number)
    out["source"] = out["source"] or "human"
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


_LIMITS = (("item_id", Instance, "external_id"), ("dataset", Instance, "source"),
           ("model_a", EvalModel, "name"), ("model_b", EvalModel, "name"))


def _check_storable(row: dict, number: int) -> None:
    """Values the database cannot hold (NUL, lone surrogates, longer than the column)."""
    if (problem := storage_problem(row)) is not None:
        raise ImportRejected(f"Row {number}: {problem}")
    for column, model, field in _LIMITS:
        limit = model._meta.get_field(field).max_length
        if len(row[column]) > limit:
            raise ImportRejected(f"Row {number}: {column} is longer than {limit} characters")
    limit = Image._meta.get_field("source_url").max_length
    if any(len(url) > limit for url in row["image_urls"]):
        raise ImportRejected(f"Row {number}: an image URL is longer than {limit} characters")
    for url in row["image_urls"]:
        if (problem := image_url_problem(url)) is not None:
            raise ImportRejected(f"Row {number}: {problem}")


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

    def __init__(self, create_missing: bool, dataset: str | None):
        self.create = create_missing
        self.dataset = dataset
        self.index = InstanceIndex()
        self.models = {m.name: m for m in EvalModel.objects.all()}
        self.items: dict[str, object] = {}
        self.workers = {str(w): w for w in Worker.objects.all()}
        self.responses: dict[tuple, Response | None] = {}
        self.comparisons: dict[tuple, tuple[Comparison, bool]] = {}
        self.aliases_resolved: set[str] = set()

    def instance(self, row):
        """By ``item_id`` within the row's dataset when the row has one, else by content."""
        dataset = row["dataset"] or self.dataset
        if row["item_id"]:
            key = json.dumps(["id", dataset, row["item_id"]])
        else:
            key = json.dumps([row["instruction"], row["image_urls"]])
        if key in self.items:
            found = self.items[key]
            if row["instruction"] and not same_instruction(row["instruction"], found):
                return None, (f"id {row['item_id']!r} has another instruction earlier in "
                              "this file")
            return found, ""
        if row["item_id"]:
            found, why = self.index.find_item(item_id=row["item_id"], dataset=dataset,
                                              instruction=row["instruction"])
        else:
            found, why = self.index.find(instruction=row["instruction"],
                                         image_urls=row["image_urls"])
        if isinstance(why, Unknown) and self.create and row["instruction"]:
            found = self.index.create(item_id=row["item_id"], instruction=row["instruction"],
                                      image_urls=row["image_urls"], dataset=dataset,
                                      conversation=row["turn"] not in ("",))
        if found is not None:
            self.items[key] = found
        return found, why

    def model(self, name):
        if name in REFERENCE_ALIASES and name not in self.aliases_resolved:
            self.aliases_resolved.add(name)  # once per file, not once per row
            found = reference_model_for_import(name, create=self.create)
            if found is not None:
                self.models[name] = found
        if name not in self.models and self.create and name not in REFERENCE_ALIASES:
            self.models[name] = EvalModel.objects.create(name=name[:100])
        return self.models.get(name)

    def response(self, instance, model, turn: int, text: str, number: int):
        slot = (instance.pk, model.pk, turn)
        if slot not in self.responses:
            self.responses[slot] = Response.objects.filter(
                instance=instance, model=model, turn=turn,
                condition=Response.Condition.GENERATED).first()
        found = self.responses[slot]
        if found is not None:
            if text and found.text.strip() != text.strip():
                raise ImportRejected(f"Row {number}: the response of {model.name!r} differs "
                                     "from the one stored for this item")
            return found
        if self.create and text:
            self.responses[slot] = Response.objects.create(instance=instance, model=model,
                                                           turn=turn, text=text)
        return self.responses[slot]

    def comparison(self, instance, ra, rb) -> tuple[Comparison, bool]:
        if (ra.pk, rb.pk) not in self.comparisons:
            self.comparisons[(ra.pk, rb.pk)] = _comparison(instance, ra, rb)
        return self.comparisons[(ra.pk, rb.pk)]

    def anchor(self, instance, model, row: dict, side: str, number: int):
        """The response a judgment hangs on: the turn's, or turn 1 of a whole conversation
        (whose other answers, when given, are checked or stored too)."""
        text = row[f"response_{side}"]
        if row["turn"] != "overall":
            turn = int(row["turn"]) if row["turn"] else 0
            return self.response(instance, model, turn, text, number)
        answers = _answers(text, number, f"response_{side}") or [""]
        found = [self.response(instance, model, t, a, number)
                 for t, a in enumerate(answers, start=1)]
        return None if None in found else found[0]


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


def _identity(row: dict, instance, names: list[str]) -> str:
    """Canonical JSON of what makes an imported judgment itself (see the module docstring)."""
    return json.dumps({
        "source": row["source"][:100], "annotator": row["annotator"][:200],
        "item": str(instance.uuid), "kind": str(row["kind"]), "models": names,
        "turn": row["turn"], "choice": row["choice"], "score": row["score"],
        "feedbacks": row["feedbacks"],
        "timestamp": row["timestamp"].isoformat() if row["timestamp"] else "",
    }, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def import_key(identity: str, occurrence: int) -> str:
    """SHA-256 of a row's canonical identity and its occurrence among identical rows."""
    return hashlib.sha256(f"{identity}\n{occurrence}".encode()).hexdigest()


def _feedback_meta(feedbacks: list[dict]) -> dict:
    meta = {}
    for side, item in zip("ab", feedbacks, strict=True):
        meta |= {f"source_{side}": item["source"], f"score_{side}": item["score"],
                 f"feedback_{side}": item["feedback"]}
    return meta


def _present_keys(judgments: list[Judgment]) -> set[str]:
    """The import keys already stored: one query (per 5,000 keys, the parameter limit)."""
    keys, present = [j.meta["import_key"] for j in judgments], set()
    sources = {j.source for j in judgments}
    by_source = {"source__in": sources} if len(sources) <= 100 else {}  # uses the index
    size = min(5000, (connection.features.max_query_params or 5000) - 110)
    for start in range(0, len(keys), size):
        present |= set(Judgment.objects.filter(
            meta__import_key__in=keys[start:start + size], **by_source,
        ).values_list("meta__import_key", flat=True))
    return present


@transaction.atomic
def judgments_import(name: str, data: bytes, *, fmt: str = "auto", create_missing: bool = False,
                     skip_unmatched: bool = False, now: datetime | None = None,
                     dataset: str | None = None) -> ImportReport:
    """Store every new row of a judgments file as a Judgment, all or nothing; rows already
    imported (same ``import_key``) are counted in ``report.unchanged`` and skipped.

    ``dataset`` scopes the file's item ids (rows may name their own in a ``dataset`` column);
    every judgment records the file's name and the import time in ``meta``."""
    raw = parse_judgment_file(name, data, fmt)
    rows = [(number, _clean(row, number)) for number, row in raw]
    if connection.vendor == "postgresql":  # two imports of one file must not both see it new
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_IMPORT_LOCK])
    report = ImportReport(rows=len(rows))
    if dataset is not None and (not dataset.strip() or len(dataset) > 32
                                or storage_problem(dataset) is not None):
        raise ImportRejected("dataset must be a name of 1 to 32 characters")
    resolver = _Resolver(create_missing, dataset)
    base = now or timezone.now()
    imported_at = timezone.now()
    seen: Counter[str] = Counter()
    judgments = []
    for order, (number, row) in enumerate(rows):
        instance, why = resolver.instance(row)
        if instance is None:
            report.unmatched.append(f"row {number}: {why}")
            continue
        names = [row["model_a"]] + ([row["model_b"]] if row["model_b"] else [])
        models = [resolver.model(n) for n in names]
        if None in models:
            unknown = [n for n, m in zip(names, models, strict=True) if m is None]
            report.unmatched.append(f"row {number}: unknown model(s) {unknown}")
            continue
        responses = [resolver.anchor(instance, m, row, side, number)
                     for m, side in zip(models, "ab", strict=False)]
        if None in responses:
            report.unmatched.append(f"row {number}: no stored response of "
                                    f"{[n for n, r in zip(names, responses, strict=False) if r is None]}")
            continue
        identity = _identity(row, instance, names)
        key = import_key(identity, seen[identity])
        seen[identity] += 1
        worker = resolver.workers.get(row["annotator"]) if row["source"] == "human" else None
        common = {"source": row["source"][:100], "annotator": row["annotator"][:200],
                  "worker": worker, "turn": row["turn"], "kind": row["kind"],
                  "created_at": row["timestamp"] or base + timedelta(microseconds=order),
                  "import_file": name[-200:], "imported_at": imported_at,
                  "meta": {"import": name[-200:], "row": number, "import_key": key}}
        if row["kind"] == Judgment.Kind.SCORE:
            judgments.append(Judgment(response=responses[0], score=row["score"], **common))
        elif row["kind"] == Judgment.Kind.FEEDBACK:
            common["meta"] |= _feedback_meta(row["feedbacks"])
            judgments.append(Judgment(response=responses[0], choice=row["choice"], **common))
        else:
            comparison, flipped = resolver.comparison(instance, *responses)
            choice = _FLIP[row["choice"]] if flipped else row["choice"]
            if flipped:  # the judge saw the pair the other way round: keep that for export
                common["meta"]["shown_flipped"] = True
            judgments.append(Judgment(comparison=comparison, choice=choice, **common))
    if report.unmatched and not skip_unmatched:
        raise ImportRejected(f"{len(report.unmatched)} of {len(rows)} rows could not be matched; "
                             "nothing imported:\n  " + "\n  ".join(report.unmatched[:50]), report)
    present = _present_keys(judgments)
    new = [j for j in judgments if j.meta["import_key"] not in present]
    Judgment.objects.bulk_create(new)
    report.created = len(new)
    report.unchanged = len(judgments) - len(new)
    return report


# --------------------------------------------------------------------------- export


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


def export_rows(*, source: str | None = None) -> list[dict]:
    """Generic rows (pairwise, scored and feedback judgments) in timestamp order."""
    qs = (Judgment.objects
          .select_related("comparison__instance", "comparison__response_a__model",
                          "comparison__response_b__model", "response__instance",
                          "response__model")
          .prefetch_related("comparison__instance__instance_images__image",
                            "response__instance__instance_images__image")
          .order_by("created_at", "pk"))
    if source:
        qs = qs.filter(source=source)
    judgments = list(qs)
    wanted = {str(j.meta.get(f"judgment_{s}")) for j in judgments if j.kind == Judgment.Kind.FEEDBACK
              for s in "ab" if j.meta.get(f"judgment_{s}")}
    linked = {str(j.uuid): j for j in Judgment.objects.filter(uuid__in=wanted)} if wanted else {}
    texts = _Texts()
    rows = []
    for j in judgments:
        if j.comparison_id:
            c = j.comparison
            instance, ma, mb = c.instance, c.response_a.model, c.response_b.model
            ra, rb = texts.for_turn(c.response_a, j.turn), texts.for_turn(c.response_b, j.turn)
            choice = j.choice
            if j.meta.get("shown_flipped"):
                ma, mb, ra, rb, choice = mb, ma, rb, ra, _FLIP[choice]
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
