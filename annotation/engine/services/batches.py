"""Creating batches from uploaded rows and moving them through their statuses."""
import csv
import io
import json
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.core import csv_safety
from annotation.core.db_text import storage_problem
from annotation.core.money import MoneyField
from annotation.engine.hit_types import get_hit_type
from annotation.engine.services.completion import batch_announce_finished
from annotation.engine.study_budget import batch_study_cost, study_budget_guard
from annotation.models import Batch, Task


class RowError(ValidationError):
    """A bad input row; the message names it and nothing was written."""


_RESERVED = {"_gold", "_gold_answer"}
REWARD = MoneyField.of_column(Batch, "reward", "reward", limit_setting="MAX_REWARD_USD")
BATCH_BUDGET = MoneyField.of_column(Batch, "budget", "batch budget",
                                    limit_setting="MAX_BATCH_BUDGET_USD")


def rows_from_upload(name: str, data: bytes) -> list[dict[str, Any]]:
    """Parse CSV or JSONL bytes into row dicts (the format is chosen by the file name).

    CSV cells lose the apostrophe our CSV exports put before formula-like text
    (``core.csv_safety``), so an exported file re-imports to what was exported."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise RowError(f"{name}: line {line}: not UTF-8 text ({exc.reason} at byte "
                       f"{exc.start})") from exc
    if name.lower().endswith((".jsonl", ".ndjson")):
        rows = []
        # split on "\n" only: U+2028, U+0085 … are legal inside JSON strings
        for number, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RowError(f"Line {number}: invalid JSON ({exc.msg})") from exc
            except RecursionError:
                raise RowError(f"Line {number}: invalid JSON (nested too deeply)") from None
            if not isinstance(row, dict):
                raise RowError(f"Line {number}: expected a JSON object")
            rows.append(row)
        return rows
    if name.lower().endswith(".csv"):
        reader = csv.DictReader(io.StringIO(text))
        try:
            return [csv_safety.unescape_row(row) for row in reader]
        except csv.Error as exc:  # e.g. a field over csv.field_size_limit()
            raise RowError(f"Line {reader.line_num + 1}: malformed CSV ({exc})") from exc
    raise RowError(f"{name}: use a .csv or .jsonl file")


@transaction.atomic
def batch_create_from_rows(
    *, hit_type: str, title: str, rows: Iterable[dict[str, Any]], assignments_per_task: int = 5,
    reward: Decimal = Decimal("0"), lease_seconds: int = 1800, instructions: str = "",
    description: str = "", min_seconds: int | None = None, seed: int | str | None = None,
    hit_options: dict[str, Any] | None = None, **options: Any,
) -> Batch:
    """One batch with one task per row, all or nothing.

    The reward and budget are checked first (``REWARD``, ``BATCH_BUDGET``: ``AmountRefused``).
    A row's ``_gold_answer`` column (JSON) marks it as a gold task with that known answer.
    Once every row is clean, the HIT type's ``prepare_rows`` turns them into the tasks'
    payloads (a rating type stores inline texts and randomises their sides); its random
    choices are seeded by ``seed``, by default the new batch's uuid, so they can be redrawn.
    ``min_seconds`` None: the HIT type's default (``HitType.default_min_seconds``); 0 accepts
    answers of any speed. ``hit_options``: the type's per-batch settings (``clean_options``).
    """
    reward = REWARD.parse(reward)
    study = options.get("study")  # a Study: its default minimum time applies
    if min_seconds is None and study is not None and study.default_min_seconds is not None:
        min_seconds = study.default_min_seconds
    if "budget" in options:
        options["budget"] = BATCH_BUDGET.parse(options["budget"], optional=True)
    hit = get_hit_type(hit_type)
    if min_seconds is None:
        min_seconds = hit.default_min_seconds()
    try:
        allowed = _study_answer_options(hit, study)
        if allowed and hit_options in (None, ""):
            hit_options = {}
        if allowed and isinstance(hit_options, dict):
            hit_options = {**allowed, **hit_options}  # the batch's own choice wins
        hit_options = hit.clean_options(hit_options)
        allowed = hit.clean_options(allowed) if allowed else None
    except ValidationError as exc:
        raise RowError("; ".join(exc.messages)) from exc
    cleaned: list[tuple[dict, Any]] = []
    for number, row in enumerate(rows, start=1):
        payload = {k: v for k, v in row.items() if k not in _RESERVED and k is not None}
        try:
            payload = hit.clean_payload(payload)
            gold = _parse_gold(row.get("_gold_answer"))
            if gold is not None:
                gold = hit.clean_gold(gold)
                hit.check_gold_offered(gold, hit_options)
                if allowed is not None:
                    _check_gold_allowed(hit, gold, allowed)
            if (problem := storage_problem([payload, gold])) is not None:
                raise ValidationError(problem)
        except ValidationError as exc:
            raise RowError(f"Row {number}: {'; '.join(exc.messages)}") from exc
        cleaned.append((payload, gold))
    if not cleaned:
        raise RowError("The file has no rows.")
    batch = Batch.objects.create(
        hit_type=hit_type, title=title, assignments_per_task=assignments_per_task, reward=reward,
        lease_seconds=lease_seconds, instructions=instructions, description=description,
        min_seconds=min_seconds, hit_options=hit_options, **options,
    )
    try:
        cleaned = hit.prepare_rows(cleaned, seed=str(batch.uuid) if seed is None else seed,
                                   study=batch.study_id)
    except ValidationError as exc:
        raise RowError("; ".join(exc.messages)) from exc
    Task.objects.bulk_create(
        Task(
            batch=batch, position=i, payload=payload, is_gold=gold is not None,
            gold_answer=gold, max_assignments=assignments_per_task,
        )
        for i, (payload, gold) in enumerate(cleaned, start=1)
    )
    return batch


def _study_answer_options(hit, study) -> dict[str, Any]:
    """The options that offer the study's allowed answers (``Study.default_answer_options``):
    a new batch that names none gets them; empty when the study names none."""
    answers = getattr(study, "default_answer_options", None)
    if not answers:
        return {}
    try:
        return hit.options_for_answers(answers)
    except ValidationError as exc:
        raise ValidationError(f"Study “{study}”: {'; '.join(exc.messages)}") from exc


def _check_gold_allowed(hit, gold, allowed: dict[str, Any]) -> None:
    """A gold answer outside the study's allowed answers is refused even in a batch whose own
    options offer it: the study decides what its gold may say."""
    try:
        hit.check_gold_offered(gold, allowed)
    except ValidationError as exc:
        raise ValidationError("; ".join(exc.messages).replace(
            "in this batch", "in this study")) from exc


def batch_create_sample(*, hit_type: str) -> Batch:
    """The HIT type's sample rows (``example_rows``, the upload page's sample file) as a
    *trial* batch: what an admin tries the product with. A local, unpaid draft with one
    assignment per task, so one person can finish it. Its votes are kept and shown in its own
    results and review, but counted on no leaderboard or report unless an analyst includes
    trial batches: a try-out never reaches the main boards."""
    hit = get_hit_type(hit_type)
    if not hit.example_rows:
        raise RowError(f"HIT type {hit_type!r} has no sample rows")
    return batch_create_from_rows(
        hit_type=hit_type, title=f"Sample: {hit.title}", rows=hit.example_rows,
        assignments_per_task=1, description="Trial batch made from the upload page's sample",
        trial=True)


def batch_set_status(batch: Batch, status: str) -> Batch:
    allowed = {
        Batch.Status.DRAFT: {Batch.Status.ACTIVE},
        Batch.Status.ACTIVE: {Batch.Status.PAUSED, Batch.Status.FINISHED},
        Batch.Status.PAUSED: {Batch.Status.ACTIVE, Batch.Status.FINISHED},
        Batch.Status.FINISHED: set(),
    }
    if status not in allowed[batch.status]:
        raise ValidationError(f"A {batch.status} batch cannot become {status}.")
    with transaction.atomic():
        if batch.status == Batch.Status.DRAFT:  # opening commits the batch's full cost
            study_budget_guard(batch.study_id, batch_study_cost(batch, batch.study),
                               f"opening “{batch.title}”")
        if not Batch.objects.filter(pk=batch.pk, status=batch.status).update(status=status):
            raise ValidationError("The batch changed meanwhile; reload and try again.")
        batch.status = status
        if status == Batch.Status.FINISHED:
            batch_announce_finished(batch, how="finished by an admin")
    return batch


def _parse_gold(raw: Any):
    if raw in (None, ""):
        return None
    if isinstance(raw, dict | list):
        return raw
    try:
        return json.loads(raw)
    except (TypeError, json.JSONDecodeError):
        raise ValidationError(f"_gold_answer is not valid JSON: {raw!r}") from None
