"""Import of judgment files (``.formats``), all or nothing, idempotent.

Identity of an item (see ``judging.services.matching``): a row with ``item_id`` names the item
by id within its dataset — every id its own instance, even when instruction text repeats across
ids, so one model may have different responses in different items; created instances keep the
id as ``external_id`` with the dataset as ``source`` (``import`` when none is named). A row
without ``item_id`` is matched by instruction + image URLs. Identity of a response: (item,
model, turn); a second, different text for it is refused. An empty response cell stands for
the stored response; when none is stored, ``create_missing`` stores it empty (the model said
nothing: public pairwise sets hold such rows, judged like any other). Identity of a vote: its
``import_key`` (below). VisIT-Bench's reference, named ``human_verified_reference`` in its
files, is the reference model.

Import checks every row first (the importers' one set of field checks,
``annotation.core.row_checks``) and writes all or nothing; a row the database still refuses is
refused by its number; rows naming an unknown instance or
model are reported (and skipped only with ``skip_unmatched``; ``create_missing`` creates them).

Import is idempotent. Each imported judgment carries ``meta["import_key"]``: the SHA-256 of the
canonical JSON of its identity — source, annotator, the matched instance's uuid (so an item named
by ``item_id`` or by instruction + images is the same item), kind, the models in the row's order,
turn, choice, score, the feedbacks of a feedback row, the timestamp as given (normalised; empty
when the file has none) — plus its **occurrence**: the how-manyth identical row it is within the
file (0, 1, …). Identical rows in one file are distinct votes (a human-preference row with
``model_selection.A = 3`` is three votes) and are all kept; importing the file again finds every
key already stored and skips the row (``judgments_record``: one query per 5,000 rows, inside the
import's transaction; on PostgreSQL an advisory lock runs imports one at a time, so two
concurrent imports of one file cannot both see it as new). The file's name takes no part.
Judgments collected through the engine or by automatic judge runs carry no key and are never
matched or touched. Re-importing an *export* into the same database is not recognised (the
export fills ``timestamp`` and names items by id).
"""
import hashlib
import json
from collections import Counter
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from annotation.core.db_text import storage_problem
from annotation.core.row_checks import database_refusal
from annotation.models import Worker
from studies.models import study_pk

from ...models import Comparison, EvalModel, Judgment, Response
from ..errors import ImportRejected, ImportReport
from ..matching import InstanceIndex, Unknown, same_instruction
from ..responses import REFERENCE_ALIASES, reference_model_for_import
from .formats import FLIP, answers, clean_row, parse_judgment_file
from .record import import_lock, judgments_record


class _Resolver:
    """Looks rows up against the database once, creating what is missing when allowed."""

    def __init__(self, create_missing: bool, dataset: str | None, study=None):
        self.create = create_missing
        self.dataset = dataset
        self.study_id = study_pk(study)
        self.index = InstanceIndex(self.study_id)
        self.models = {m.name: m for m in EvalModel.objects.in_study(self.study_id)}
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
            found = reference_model_for_import(name, create=self.create, study=self.study_id)
            if found is not None:
                self.models[name] = found
        if name not in self.models and self.create and name not in REFERENCE_ALIASES:
            self.models[name] = EvalModel.objects.create(name=name[:100], study_id=self.study_id)
        return self.models.get(name)

    def response(self, instance, model, turn: int, text: str | None, number: int):
        """The stored response in this slot, checked against ``text`` when one is given; else,
        when allowed, a new one: an empty text is an empty answer (the model said nothing),
        ``None`` (an overall row without the turn's answer) creates nothing."""
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
        if self.create and text is not None:
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
        texts = answers(text, number, f"response_{side}") or [None]
        found = [self.response(instance, model, t, a, number)
                 for t, a in enumerate(texts, start=1)]
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


@transaction.atomic
def judgments_import(name: str, data: bytes, *, fmt: str = "auto", create_missing: bool = False,
                     skip_unmatched: bool = False, now: datetime | None = None,
                     dataset: str | None = None, study=None) -> ImportReport:
    """Store every new row of a judgments file as a Judgment, all or nothing; rows already
    imported (same ``import_key``) are counted in ``report.unchanged`` and skipped.

    ``dataset`` scopes the file's item ids (rows may name their own in a ``dataset`` column);
    every judgment records the file's name and the import time in ``meta``. Rows match
    ``study``'s items and models (None: the default study); what they create belongs to it."""
    raw = parse_judgment_file(name, data, fmt)
    rows = [(number, clean_row(row, number)) for number, row in raw]
    import_lock()  # two imports of one file must not both see it (or its items) as new
    report = ImportReport(rows=len(rows))
    if dataset is not None and (not dataset.strip() or len(dataset) > 32
                                or storage_problem(dataset) is not None):
        raise ImportRejected("dataset must be a name of 1 to 32 characters")
    resolver = _Resolver(create_missing, dataset, study)
    base = now or timezone.now()
    imported_at = timezone.now()
    seen: Counter[str] = Counter()
    judgments: list[dict] = []
    for order, (number, row) in enumerate(rows):
        with database_refusal(f"Row {number}", ImportRejected):
            judgment = _resolve(resolver, report, row, number)
        if judgment is None:
            continue
        identity = _identity(row, judgment.pop("instance"), judgment.pop("names"))
        key = import_key(identity, seen[identity])
        seen[identity] += 1
        judgment |= {"created_at": row["timestamp"] or base + timedelta(microseconds=order),
                     "import_file": name[-200:], "imported_at": imported_at,
                     "meta": {"import": name[-200:], "row": number, "import_key": key,
                              **judgment.get("meta", {})}}
        judgments.append(judgment)
    if report.unmatched and not skip_unmatched:
        raise ImportRejected(f"{len(report.unmatched)} of {len(rows)} rows could not be matched; "
                             "nothing imported:\n  " + "\n  ".join(report.unmatched[:50]), report)
    with database_refusal(f"{name}: rows 1–{rows[-1][0]}", ImportRejected):
        report.created = len(judgments_record(judgments))  # rows imported before are skipped
    report.unchanged = len(judgments) - report.created
    return report


def _resolve(resolver: _Resolver, report: ImportReport, row: dict, number: int) -> dict | None:
    """One row's judgment fields, its instance and model names (its instance, models and
    responses found or, when allowed, created); None when unmatched (noted in ``report``)."""
    instance, why = resolver.instance(row)
    if instance is None:
        report.unmatched.append(f"row {number}: {why}")
        return None
    names = [row["model_a"]] + ([row["model_b"]] if row["model_b"] else [])
    models = [resolver.model(n) for n in names]
    if None in models:
        unknown = [n for n, m in zip(names, models, strict=True) if m is None]
        report.unmatched.append(f"row {number}: unknown model(s) {unknown}")
        return None
    responses = [resolver.anchor(instance, m, row, side, number)
                 for m, side in zip(models, "ab", strict=False)]
    if None in responses:
        missing = [n for n, r in zip(names, responses, strict=False) if r is None]
        report.unmatched.append(f"row {number}: no stored response of {missing}")
        return None
    human = row["source"] == Judgment.HUMAN
    common = {"instance": instance, "names": names, "source": row["source"],
              "annotator": row["annotator"], "turn": row["turn"], "kind": row["kind"],
              "worker": resolver.workers.get(row["annotator"]) if human else None}
    if row["kind"] == Judgment.Kind.SCORE:
        return {"response": responses[0], "score": row["score"], **common}
    if row["kind"] == Judgment.Kind.FEEDBACK:
        return {"response": responses[0], "choice": row["choice"],
                "meta": _feedback_meta(row["feedbacks"]), **common}
    comparison, flipped = resolver.comparison(instance, *responses)
    choice = FLIP[row["choice"]] if flipped else row["choice"]
    # flipped: the judge saw the pair the other way round: keep that for export
    return {"comparison": comparison, "choice": choice,
            "meta": {"shown_flipped": True} if flipped else {}, **common}
