"""The one writer of ``Judgment`` rows: crowd votes (``judging.hits``), automatic judges'
verdicts (``judging.judges.services``) and imported files (``.imports``) all store theirs here.

What holds for every row written:

- **Source.** ``Judgment.HUMAN`` names human votes; anything else is an automatic judge (or an
  imported source). A variant of "human" ("Human", " HUMAN ") is refused: it would read as a
  judge here and as human there. A vote through an assignment is human and names its worker.
- **What is judged.** A pairwise verdict hangs on a comparison; a grade (score) or a choice
  between two feedbacks hangs on one response.
- **Provenance.** ``template_version`` and ``prompt_hash`` (what produced a verdict),
  ``import_file`` and ``imported_at`` (where an imported row came from) are stored as given,
  cut to their columns (an import file's name keeps its end); ``created_at`` defaults to now.
- **An automatic judge never double-counts** (``judgments_record(judge=…, supersedes=…)``): its
  new verdicts replace its verdicts of the same generation (judge version and template
  version) and turn among ``supersedes`` (the item's judgments); other generations stay, and
  the selectors count only the latest (``judging.selectors.current_verdicts``).
- **An import is idempotent**: a row whose ``meta["import_key"]`` is stored already is skipped
  (checked under the import lock, so two concurrent imports of one file store it once).
"""
from collections.abc import Iterable
from datetime import datetime
from uuid import UUID

from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from ...judges.models import Judge, validate_judge_name
from ...models import Judgment

_IMPORT_LOCK = 0x4A554447  # PostgreSQL advisory lock: judgment imports run one at a time
_ON_RESPONSE = (Judgment.Kind.SCORE, Judgment.Kind.FEEDBACK)


def _limit(field: str) -> int:
    return Judgment._meta.get_field(field).max_length


def _judgment(*, source: str, annotator: str, kind: str = Judgment.Kind.PAIRWISE,
              comparison=None, response=None, response_id: int | None = None,
              choice: str = "", score: float | None = None, feedback: str = "", turn: str = "",
              meta: dict | None = None, worker=None, assignment=None,
              template_version: str = "", prompt_hash: str = "", import_file: str = "",
              imported_at: datetime | None = None, rejected: bool = False,
              created_at: datetime | None = None, uuid: UUID | None = None) -> Judgment:
    """One row, checked (ValidationError) and cut to its columns; not saved."""
    if not source or not annotator:
        raise ValidationError("a judgment names its source and annotator")
    if kind == Judgment.Kind.ADJUDICATION or source == Judgment.ADJUDICATION:
        if (kind, source) != (Judgment.Kind.ADJUDICATION, Judgment.ADJUDICATION):
            raise ValidationError(f"source {Judgment.ADJUDICATION!r} is reserved for analysts' "
                                  "rulings (judging.services.adjudication), of their own kind")
    elif source != Judgment.HUMAN and Judgment.is_reserved_name(source):
        raise ValidationError(f"source {source!r} is reserved: human votes are "
                              f"{Judgment.HUMAN!r}, analysts' rulings "
                              f"{Judgment.ADJUDICATION!r}; an automatic judge takes another name")
    if assignment is not None and (source != Judgment.HUMAN or worker is None):
        raise ValidationError("a vote through an assignment is human and names its worker")
    on_response = response is not None or response_id is not None
    if (comparison is not None) == on_response or on_response != (kind in _ON_RESPONSE):
        raise ValidationError(f"a {kind} judgment hangs on "
                              + ("a response" if kind in _ON_RESPONSE else "a comparison"))
    on = {"response": response} if response is not None else {"response_id": response_id}
    return Judgment(
        source=source[:_limit("source")], annotator=annotator[:_limit("annotator")],
        kind=kind, comparison=comparison, **on,
        choice=choice, score=score, feedback=feedback, turn=turn, meta=meta or {},
        worker=worker, assignment=assignment,
        template_version=template_version[:_limit("template_version")],
        prompt_hash=prompt_hash, import_file=import_file[-_limit("import_file"):],
        imported_at=imported_at, created_at=created_at or timezone.now(), rejected=rejected,
        **({"uuid": uuid} if uuid is not None else {}))  # a dataset import keeps its ids


def judgment_record(**fields) -> Judgment:
    """Store one verdict (a crowd vote: ``source=Judgment.HUMAN`` with its ``assignment`` and
    ``worker``). Takes the ``Judgment`` fields; raises ValidationError on a broken rule above."""
    judgment = _judgment(**fields)
    judgment.save(force_insert=True)
    return judgment


def judgments_record(rows: Iterable[dict], *, judge: Judge | None = None,
                     supersedes: QuerySet | None = None) -> list[Judgment]:
    """Store many verdicts at once (one INSERT per batch); returns those stored.

    ``judge``: the rows are that automatic judge's verdicts (its name is the source, its
    ``ident`` the annotator); with ``supersedes`` (the judgments on the judged item), its
    earlier rows of the same generation and turn among them are deleted first. Rows carrying
    ``meta["import_key"]`` already stored are skipped. Atomic (inside the caller's transaction
    when there is one)."""
    if judge is not None:
        validate_judge_name(judge.name)
        rows = [{**row, "source": judge.name, "annotator": judge.ident} for row in rows]
    elif supersedes is not None:
        raise ValueError("supersedes replaces one automatic judge's verdicts: give the judge")
    judgments = [_judgment(**row) for row in rows]
    if not judgments:
        return []
    with transaction.atomic(savepoint=False):
        if supersedes is not None:
            generation = Q()
            for j in judgments:
                generation |= Q(turn=j.turn, template_version=j.template_version)
            supersedes.filter(generation, source=judgments[0].source,
                              annotator=judgments[0].annotator).delete()
        if any("import_key" in j.meta for j in judgments):
            import_lock()
            present = _present_keys([j for j in judgments if "import_key" in j.meta])
            judgments = [j for j in judgments if j.meta.get("import_key") not in present]
        return Judgment.objects.bulk_create(judgments)


def import_lock() -> None:
    """Run judgment imports one at a time (PostgreSQL; SQLite writers are serialized anyway),
    until the transaction ends. Raw SQL: the ORM has no advisory locks; the key is a parameter.
    Taking it again in the same transaction is free."""
    if connection.vendor == "postgresql" and connection.in_atomic_block:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_IMPORT_LOCK])


def _present_keys(judgments: list[Judgment]) -> set[str]:
    """The import keys already stored: one query (per 5,000 keys, the parameter limit)."""
    keys, present = [j.meta["import_key"] for j in judgments], set()
    sources = {j.source for j in judgments}
    by_source = {"source__in": sources} if len(sources) <= 100 else {}  # uses the index
    size = min(5000, (connection.features.max_query_params or 5000) - 110)
    for start in range(0, len(keys), size):
        present |= set(Judgment.with_rejected.filter(  # a rejected vote is stored too
            meta__import_key__in=keys[start:start + size], **by_source,
        ).values_list("meta__import_key", flat=True))
    return present
