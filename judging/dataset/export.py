"""Write the study as a dataset: one Parquet file per table plus a dataset card.

Instances are the full JSONL dump's records (``annotation.content.exports.dump_jsonl``) so the
import path is the one already tested for atomicity; responses, comparisons and judgments are
streamed in chunks (a million judgments never sit in memory as objects).

No person of the study is named in any file (``judging.dataset.identities``), field by field:

- ``judgments.annotator``: for crowd votes (live or imported) and analysts' rulings, the
  person's keyed pseudonym (``anon-…``), never a marketplace id, an imported annotator string
  or a username; for automatic judges their own id (judges are models, named on purpose).
- free text anyone typed is scrubbed (each identity in it replaced by its pseudonym):
  ``models.name``/``version``/``family``/``notes`` (a submission's notes once read "Submitted
  by <username>") and ``responses.model`` alike, so the two still join; ``responses.text``;
  ``judgments.feedback`` (a worker's feedback, an analyst's ruling note) and every string in
  ``judgments.meta`` (an import's file name); every string of ``instances`` except ids,
  enumerations, image addresses and hashes, and the image's licence and ``attribution`` (the
  author's credit the licence requires: a third party, not a participant, set by an admin);
  the batch titles in the card.
- dropped: ``meta.import_key`` (an unkeyed hash of the raw annotator string, which anyone
  holding a candidate marketplace id could confirm), and every owner, submitter and account
  field (none is a column).
- kept as they are: uuids, judges' names (``judgments.source``), comparison labels.
"""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from annotation.content.exports import dump_jsonl
from annotation.core.jobs import occupying
from judging.dataset.card import card_markdown
from judging.dataset.identities import Identities
from judging.dataset.schema import arrow_schema
from judging.models import Comparison, EvalModel, Judgment, Response
from studies.models import study_pk

CHUNK = 50_000
FILES = ("instances", "models", "responses", "comparisons", "judgments")
# Instance fields that cannot name a participant and must stay exact: ids, enumerations, image
# addresses and hashes, and the licence with the author's credit it requires.
INSTANCE_KEPT = frozenset({
    "uuid", "kind", "source", "stage", "reference_status", "reference_rated_by", "url",
    "sha256", "license", "attribution", "format", "fetch_status", "file", "thumbnail"})


def _instance_rows(people: Identities, study_id: int) -> list[dict]:
    rows = []
    for line in dump_jsonl(study=study_id).decode("utf-8").splitlines():
        record = people.scrub_json(json.loads(line), INSTANCE_KEPT)
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


def _judgment_row(people: Identities, v: dict) -> dict:
    meta = {k: value for k, value in v["meta"].items() if k != "import_key"}
    return {
        "uuid": str(v["uuid"]), "comparison": _str(v["comparison__uuid"]),
        "response": _str(v["response__uuid"]), "source": v["source"],
        "annotator": people.annotator(v["source"], v["annotator"], v["worker_id"]),
        "kind": v["kind"], "choice": v["choice"], "score": v["score"],
        "feedback": people.scrub(v["feedback"]), "turn": v["turn"],
        "meta": people.scrub(json.dumps(meta, ensure_ascii=False, sort_keys=True)),
        "template_version": v["template_version"], "prompt_hash": v["prompt_hash"],
        "created_at": v["created_at"], "rejected": v["rejected"],
    }


def dataset_export(out_dir: str | Path, study=None) -> dict[str, int]:
    """Write every table of ``study`` (None: the default study) and ``README.md`` into
    ``out_dir`` (created if needed); returns the row count per table. Counted against the job
    cap while it runs (``JobsBusy`` past it, or while an export into the same directory runs)."""
    out = Path(out_dir)
    with occupying("dataset_export", fingerprint=str(out.resolve())):
        return _export(out, study_pk(study))


def _export(out: Path, sid: int) -> dict[str, int]:
    out.mkdir(parents=True, exist_ok=True)
    people = Identities()
    scrub = people.scrub
    counts = {"instances": _write(out / "instances.parquet", "instances",
                                  [_instance_rows(people, sid)])}
    counts["models"] = _write(out / "models.parquet", "models", [[
        {**{k: scrub(m[k]) for k in ("name", "version", "family", "notes")},
         "is_reference": m["is_reference"]}
        for m in EvalModel.objects.in_study(sid).order_by("name").values(
            "name", "version", "family", "is_reference", "notes")]])
    counts["responses"] = _write(out / "responses.parquet", "responses", _chunked(
        Response.objects.filter(instance__study_id=sid).order_by("pk").values("uuid", "instance__uuid", "model__name", "turn",
                                               "condition", "text"),
        lambda v: {"uuid": str(v["uuid"]), "instance": str(v["instance__uuid"]),
                   "model": scrub(v["model__name"]), "turn": v["turn"],
                   "condition": v["condition"], "text": scrub(v["text"])}))
    counts["comparisons"] = _write(out / "comparisons.parquet", "comparisons", _chunked(
        Comparison.objects.filter(instance__study_id=sid).order_by("pk").values("uuid", "instance__uuid", "response_a__uuid",
                                                 "response_b__uuid", "swapped", "sampling",
                                                 "gold_choice"),
        lambda v: {"uuid": str(v["uuid"]), "instance": str(v["instance__uuid"]),
                   "response_a": str(v["response_a__uuid"]),
                   "response_b": str(v["response_b__uuid"]), "swapped": v["swapped"],
                   "sampling": v["sampling"], "gold_choice": v["gold_choice"]}))
    counts["judgments"] = _write(out / "judgments.parquet", "judgments", _chunked(
        Judgment.with_rejected.filter(study_id=sid)  # rejected votes kept, and marked
        .order_by("pk").values(
            "uuid", "comparison__uuid", "response__uuid", "source", "annotator", "worker_id",
            "kind", "choice", "score", "feedback", "turn", "meta", "template_version",
            "prompt_hash", "created_at", "rejected"),
        lambda v: _judgment_row(people, v)))
    (out / "README.md").write_text(card_markdown(out, counts, scrub, sid), encoding="utf-8")
    return counts
