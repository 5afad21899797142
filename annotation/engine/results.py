"""A batch's results out of the platform: one row per assignment, as CSV, JSONL or Parquet.

What MTurk's requester page gives as its results CSV, for every provider. A row names the
batch, the task (position and uuid), the assignment, the worker *as the person* (a local
account's username, a marketplace worker's marketplace id), the status, claim and submit times,
seconds spent, whether the task was gold and how the worker did on it, whether the submission
counted or came late, the marketplace's assignment id, what the task page measured
(``telemetry.*``: active seconds, window blurs, pastes, pasted characters, keystrokes in free
text; empty for answers that sent none) and the quality flags (their codes, space-separated) —
the task's inputs as ``input.<field>`` columns (MTurk's ``Input.*``: what the page showed —
instruction, image URLs, turns, the models' names and responses as shown on sides A and B —
as each HIT type's ``export_inputs`` reads them, and ``input.gold`` for a gold task) — and
the answer's fields, flattened into
``answer.<field>`` columns (a nested object gives ``answer.<field>.<key>``; a list is one
JSON-encoded cell). The answer columns are the union over the exported batches, in the order
first seen, so every row has the same columns; a column whose values are all numbers (or all
booleans) keeps that type, any other column holds text (non-text values JSON-encoded).

Memory stays bounded on big batches: one pass reads only the answers to learn the columns, a
second streams the rows in chunks; CSV and JSONL are yielded chunk by chunk, Parquet written
one record batch per chunk. Every CSV goes through ``core.csv_safety``.
"""
from __future__ import annotations

import io
import json
import tempfile
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any

from django.http import FileResponse, StreamingHttpResponse
from django.utils.http import content_disposition_header

from annotation.core import csv_safety
from annotation.engine.hit_types import get_hit_type
from annotation.engine.selectors import active_seconds
from annotation.engine.selectors_workers import worker_person
from annotation.models import Assignment, Batch

if TYPE_CHECKING:
    import pyarrow as pa

CHUNK = 2000
FORMATS = {  # format → (media type, file extension)
    "csv": ("text/csv; charset=utf-8", "csv"),
    "jsonl": ("application/x-ndjson; charset=utf-8", "jsonl"),
    "parquet": ("application/vnd.apache.parquet", "parquet"),
}
# (column, kind) of what every row has, before the answer's columns; kinds map to Arrow types
# in ``parquet_schema`` (pyarrow is imported there: a web worker's boot should not pay for it).
FIXED = [
    ("batch", "text"), ("batch_title", "text"), ("task_position", "int"), ("task", "text"),
    ("assignment", "text"), ("worker", "text"), ("worker_provider", "text"), ("status", "text"),
    ("claimed_at", "time"), ("submitted_at", "time"), ("seconds_spent", "float"),
    ("is_gold", "bool"), ("gold_correct", "bool"), ("counted", "bool"), ("late", "bool"),
    ("provider_assignment_id", "text"),
    ("telemetry.active_seconds", "float"), ("telemetry.blurs", "int"), ("telemetry.pastes", "int"),
    ("telemetry.pasted_chars", "int"), ("telemetry.keystrokes", "int"), ("flags", "text"),
]


class UnknownFormat(ValueError):
    """A results format we do not write."""


def check_format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise UnknownFormat(f"unknown results format {fmt!r}; use one of {', '.join(FORMATS)}")
    return fmt


def flatten_answer(answer: Any) -> dict[str, Any]:
    """``{"answer.<field>": value}``; nested objects flattened with dots, lists kept whole."""
    out: dict[str, Any] = {}

    def walk(value: Any, prefix: str) -> None:
        if isinstance(value, dict) and value:
            for key, inner in value.items():
                walk(inner, f"{prefix}.{key}")
        else:
            out[prefix] = value

    if isinstance(answer, dict):
        walk(answer, "answer")
    elif answer is not None:
        out["answer"] = answer
    return out


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return "text"


def _merged(kinds: set[str]) -> str:
    if kinds <= {"bool"}:
        return "bool" if kinds else "text"
    if kinds <= {"int"}:
        return "int"
    if kinds <= {"int", "float"}:
        return "float"
    return "text"


def _assignments(batches: Iterable[Batch]):
    return Assignment.objects.filter(batch__in=[b.pk for b in batches])


def answer_columns(batches: Iterable[Batch]) -> dict[str, str]:
    """``{"answer.<field>": kind}`` over every answer of the batches (first pass: answers
    only, in chunks), kind being ``bool``, ``int``, ``float`` or ``text``."""
    seen: dict[str, set[str]] = {}
    answers = (_assignments(batches).filter(answer__isnull=False).order_by("pk")
               .values_list("answer", flat=True))
    for answer in answers.iterator(chunk_size=CHUNK):
        for column, value in flatten_answer(answer).items():
            kinds = seen.setdefault(column, set())
            if value is not None:
                kinds.add(_kind(value))
    return {column: _merged(kinds) for column, kinds in seen.items()}


def input_columns(batches: Iterable[Batch]) -> dict[str, str]:
    """``{"input.<field>": kind}``: the union of the batches' HIT types' ``export_columns``
    (in batch order), then ``input.gold``."""
    columns: dict[str, str] = {}
    for hit_type in dict.fromkeys(b.hit_type for b in batches):
        for name, kind in get_hit_type(hit_type).export_columns.items():
            columns.setdefault(f"input.{name}", kind)
    columns["input.gold"] = "text"
    return columns


def _inputs(assignments: list[Assignment]) -> dict[int, dict[str, Any]]:
    """``{task pk: {"input.<field>": value}}`` for a chunk's tasks: one ``export_inputs`` call
    per HIT type in the chunk, so the queries do not grow with the number of tasks."""
    tasks_by_type: dict[str, dict[int, Any]] = {}
    for a in assignments:
        tasks_by_type.setdefault(a.batch.hit_type, {})[a.task_id] = a.task
    out: dict[int, dict[str, Any]] = {}
    for slug, tasks in tasks_by_type.items():
        shown = get_hit_type(slug).export_inputs(list(tasks.values()))
        for pk, task in tasks.items():
            out[pk] = {f"input.{name}": value for name, value in shown.get(pk, {}).items()}
            out[pk]["input.gold"] = task.gold_answer if task.is_gold else None
    return out


def _cell(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if kind == "float":
        return float(value)
    if kind == "text" and not isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return value


def result_rows(batches: Iterable[Batch], columns: dict[str, str]) -> Iterator[dict[str, Any]]:
    """One dict per assignment (fixed columns, then ``columns``: inputs and answers), in
    batch, task and claim order, read in chunks (each chunk's inputs read together)."""
    qs = (_assignments(batches).select_related("batch", "task", "worker__user")
          .order_by("batch_id", "task__position", "pk"))
    chunk: list[Assignment] = []
    for a in qs.iterator(chunk_size=CHUNK):
        chunk.append(a)
        if len(chunk) == CHUNK:
            yield from _chunk_rows(chunk, columns)
            chunk = []
    if chunk:
        yield from _chunk_rows(chunk, columns)


def _chunk_rows(chunk: list[Assignment], columns: dict[str, str]) -> Iterator[dict[str, Any]]:
    inputs = _inputs(chunk)
    for a in chunk:
        row = {
            "batch": str(a.batch.uuid), "batch_title": a.batch.title,
            "task_position": a.task.position, "task": str(a.task.uuid),
            "assignment": str(a.uuid), "worker": worker_person(a.worker),
            "worker_provider": a.worker.provider, "status": a.status,
            "claimed_at": a.claimed_at, "submitted_at": a.submitted_at,
            "seconds_spent": a.seconds_spent, "is_gold": a.task.is_gold,
            "gold_correct": a.gold_correct, "counted": a.counted, "late": a.late,
            "provider_assignment_id": a.provider_assignment_id,
            **telemetry_cells(a.telemetry), "flags": " ".join(f["code"] for f in a.flags or []),
        }
        cells = {**inputs[a.task_id], **flatten_answer(a.answer)}
        row.update((column, _cell(cells.get(column), kind)) for column, kind in columns.items())
        yield row


def telemetry_cells(telemetry: dict | None) -> dict[str, Any]:
    """The ``telemetry.*`` cells: None where the page sent nothing for that measure."""
    telemetry = telemetry or {}
    cells: dict[str, Any] = {"telemetry.active_seconds": active_seconds(telemetry)}
    for key in ("blurs", "pastes", "pasted_chars", "keystrokes"):
        cells[f"telemetry.{key}"] = telemetry.get(key)
    return cells


def _chunks(rows: Iterator[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    chunk: list[dict[str, Any]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _text(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def csv_stream(batches: Iterable[Batch]) -> Iterator[str]:
    """The results as CSV text, a chunk of rows at a time (header first)."""
    batches = list(batches)
    columns = {**input_columns(batches), **answer_columns(batches)}
    names = [name for name, _ in FIXED] + list(columns)
    buffer = io.StringIO()
    writer = csv_safety.SafeWriter(buffer)
    writer.writerow(names)
    for chunk in _chunks(result_rows(batches, columns)):
        writer.writerows([_text(row[name]) for name in names] for row in chunk)
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue()


def jsonl_stream(batches: Iterable[Batch]) -> Iterator[str]:
    """The results as JSON lines (one object per assignment, same keys on every line)."""
    batches = list(batches)
    columns = {**input_columns(batches), **answer_columns(batches)}
    for chunk in _chunks(result_rows(batches, columns)):
        yield "".join(json.dumps({k: _text(v) for k, v in row.items()}, ensure_ascii=False)
                      + "\n" for row in chunk)


def parquet_schema(columns: dict[str, str]) -> pa.Schema:
    import pyarrow as pa

    arrow = {"bool": pa.bool_(), "int": pa.int64(), "float": pa.float64(),
             "text": pa.string(), "time": pa.timestamp("us", tz="UTC")}
    return pa.schema([(name, arrow[kind]) for name, kind in FIXED + list(columns.items())])


def parquet_write(batches: Iterable[Batch], out: IO[bytes] | str) -> None:
    """The results as one Parquet file (typed columns), a record batch per chunk of rows."""
    batches = list(batches)
    columns = {**input_columns(batches), **answer_columns(batches)}
    schema = parquet_schema(columns)
    import pyarrow as pa
    import pyarrow.parquet as pq

    with pq.ParquetWriter(out, schema) as writer:
        for chunk in _chunks(result_rows(batches, columns)):
            writer.write_batch(pa.RecordBatch.from_pylist(chunk, schema=schema))


def results_write(batches: Iterable[Batch], fmt: str, out: IO[bytes]) -> None:
    """Write the batches' results in ``fmt`` (csv, jsonl, parquet) to a binary file."""
    check_format(fmt)
    if fmt == "parquet":
        parquet_write(batches, out)
        return
    stream = csv_stream(batches) if fmt == "csv" else jsonl_stream(batches)
    for text in stream:
        out.write(text.encode("utf-8"))


def results_filename(batches: list[Batch], fmt: str) -> str:
    stem = f"results-{batches[0].uuid}" if len(batches) == 1 else f"results-{len(batches)}-batches"
    return f"{stem}.{FORMATS[fmt][1]}"


def results_response(batches: list[Batch], fmt: str):
    """The download for the API and the admin: CSV and JSONL streamed as they are written,
    Parquet (whose footer comes last) through a temporary file, never whole in memory."""
    media_type, _ = FORMATS[check_format(fmt)]
    name = results_filename(batches, fmt)
    if fmt == "parquet":
        spool = tempfile.TemporaryFile()
        parquet_write(batches, spool)
        spool.seek(0)
        return FileResponse(spool, as_attachment=True, filename=name, content_type=media_type)
    stream = csv_stream(batches) if fmt == "csv" else jsonl_stream(batches)
    response = StreamingHttpResponse((text.encode("utf-8") for text in stream),
                                     content_type=media_type)
    response["Content-Disposition"] = content_disposition_header(True, name)
    return response
