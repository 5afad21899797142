"""Write the study as a dataset: one Parquet file per table plus a dataset card.

Instances are the full JSONL dump's records (``annotation.content.exports.dump_jsonl``) so the
import path is the one already tested for atomicity; responses, comparisons and judgments are
streamed in chunks (a million judgments never sit in memory as objects). Crowd workers appear
under a pseudonym — a keyed hash of the worker, stable within this deployment — never under
their marketplace id or username.
"""
from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from django.conf import settings

from annotation.content.exports import dump_jsonl
from judging.dataset.card import card_markdown
from judging.dataset.schema import arrow_schema
from judging.models import Comparison, EvalModel, Judgment, Response

CHUNK = 50_000
FILES = ("instances", "models", "responses", "comparisons", "judgments")


def pseudonym(worker_id: int) -> str:
    """A worker's public name in the dataset: keyed by SECRET_KEY, so it cannot be reversed
    by hashing candidate ids, and the same worker keeps it across exports."""
    digest = hmac.new(settings.SECRET_KEY.encode(), f"worker:{worker_id}".encode(),
                      hashlib.sha256).hexdigest()
    return f"anon-{digest[:12]}"


def _instance_rows() -> list[dict]:
    rows = []
    for line in dump_jsonl().decode("utf-8").splitlines():
        record = json.loads(line)
        for key in ("family", "reference_meta", "extra"):
            value = record[key]
            record[key] = None if value is None and key == "family" else json.dumps(
                value, ensure_ascii=False, sort_keys=True)
        for turn in record["turns"]:
            turn["focus_points"] = json.dumps(turn["focus_points"], ensure_ascii=False)
        rows.append(record)
    return rows


def _write(path: Path, table: str, chunks) -> int:
    schema = arrow_schema(table)
    count = 0
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:
        for rows in chunks:
            if rows:
                writer.write_table(pa.Table.from_pylist(rows, schema=schema))
                count += len(rows)
        if count == 0:
            writer.write_table(schema.empty_table())
    return count


def _chunked(queryset, convert):
    rows = []
    for values in queryset.iterator(chunk_size=CHUNK):
        rows.append(convert(values))
        if len(rows) >= CHUNK:
            yield rows
            rows = []
    yield rows


def _str(value) -> str | None:
    return None if value is None else str(value)


def _judgment_row(v: dict) -> dict:
    human_worker = v["source"] == Judgment.HUMAN and v["worker_id"] is not None
    return {
        "uuid": str(v["uuid"]), "comparison": _str(v["comparison__uuid"]),
        "response": _str(v["response__uuid"]), "source": v["source"],
        "annotator": pseudonym(v["worker_id"]) if human_worker else v["annotator"],
        "kind": v["kind"], "choice": v["choice"], "score": v["score"],
        "feedback": v["feedback"], "turn": v["turn"],
        "meta": json.dumps(v["meta"], ensure_ascii=False, sort_keys=True),
        "template_version": v["template_version"], "prompt_hash": v["prompt_hash"],
        "created_at": v["created_at"], "rejected": v["rejected"],
    }


def dataset_export(out_dir: str | Path) -> dict[str, int]:
    """Write every table and ``README.md`` into ``out_dir`` (created if needed); returns the
    row count per table."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    counts = {"instances": _write(out / "instances.parquet", "instances", [_instance_rows()])}
    counts["models"] = _write(out / "models.parquet", "models", [list(
        EvalModel.objects.order_by("name").values("name", "version", "family", "is_reference",
                                                  "notes"))])
    counts["responses"] = _write(out / "responses.parquet", "responses", _chunked(
        Response.objects.order_by("pk").values("uuid", "instance__uuid", "model__name", "turn",
                                               "condition", "text"),
        lambda v: {"uuid": str(v["uuid"]), "instance": str(v["instance__uuid"]),
                   "model": v["model__name"], "turn": v["turn"],
                   "condition": v["condition"], "text": v["text"]}))
    counts["comparisons"] = _write(out / "comparisons.parquet", "comparisons", _chunked(
        Comparison.objects.order_by("pk").values("uuid", "instance__uuid", "response_a__uuid",
                                                 "response_b__uuid", "swapped", "sampling",
                                                 "gold_choice"),
        lambda v: {"uuid": str(v["uuid"]), "instance": str(v["instance__uuid"]),
                   "response_a": str(v["response_a__uuid"]),
                   "response_b": str(v["response_b__uuid"]), "swapped": v["swapped"],
                   "sampling": v["sampling"], "gold_choice": v["gold_choice"]}))
    counts["judgments"] = _write(out / "judgments.parquet", "judgments", _chunked(
        Judgment.with_rejected.order_by("pk").values(  # rejected votes kept, and marked
            "uuid", "comparison__uuid", "response__uuid", "source", "annotator", "worker_id",
            "kind", "choice", "score", "feedback", "turn", "meta", "template_version",
            "prompt_hash", "created_at", "rejected"),
        _judgment_row))
    (out / "README.md").write_text(card_markdown(out, counts), encoding="utf-8")
    return counts
