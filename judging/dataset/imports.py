"""Read a study dataset (``judging.dataset.export``) back into a database, atomically.

Every file must carry the columns of its schema; every value passes the importers' one set of
field checks (``annotation.core.row_checks``); every reference (a response's instance, a
comparison's responses, a judgment's comparison or response) must resolve to a row of the
dataset or of this database; a response must not take the slot (instance, model, turn,
condition) of a stored response or of an earlier row. A bad row raises ``ImportFailed`` naming
the file and row, and nothing is written. Rows whose uuid is already here are skipped (the database wins), so
importing the same dataset twice adds nothing. Judgments go through the one judgment writer.
Everything added belongs to the study imported into, and a reference resolves only to that
study's rows (a response of this file never hangs on another study's item).
"""
from __future__ import annotations

import io
import json
import uuid as uuidlib
from pathlib import Path

import pyarrow.parquet as pq
from django.core.exceptions import ValidationError
from django.db import transaction

from annotation.content.imports.common import ImportFailed
from annotation.content.imports.jsonl_dump import import_jsonl_dump
from annotation.core.jobs import occupying
from annotation.core.row_checks import database_refusal, row_problem
from annotation.models import Instance
from judging.dataset.export import FILES
from judging.dataset.schema import TABLES
from judging.models import Comparison, EvalModel, Judgment, Response
from judging.services.judgments.record import judgments_record
from studies.models import study_pk


def _read(folder: Path, table: str) -> list[dict]:
    path = folder / f"{table}.parquet"
    if not path.is_file():
        raise ImportFailed(f"{path.name}: missing from {folder}")
    try:
        data = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several unrelated types for a broken file
        raise ImportFailed(f"{path.name}: not a readable Parquet file ({exc})") from exc
    missing = [c.name for c in TABLES[table] if c.name not in data.column_names and c.since == "1"]
    if missing:
        raise ImportFailed(f"{path.name}: missing column(s) {', '.join(missing)}")
    return data.to_pylist()


def _uuid(value, where: str) -> uuidlib.UUID:
    try:
        return uuidlib.UUID(str(value))
    except ValueError:
        raise ImportFailed(f"{where}: {value!r} is not a uuid") from None


def _json(value, where: str, column: str):
    try:
        return json.loads(value) if value is not None else None
    except (TypeError, ValueError):
        raise ImportFailed(f"{where}: {column} is not JSON text") from None


def _instances_jsonl(rows: list[dict]) -> bytes:
    lines = []
    for n, row in enumerate(rows, start=1):
        where = f"instances.parquet row {n}"
        record = dict(row)
        for key in ("family", "reference_meta", "extra"):
            record[key] = _json(record[key], where, key)
        record["turns"] = [{**t, "focus_points": _json(t["focus_points"], where, "focus_points")}
                           for t in record["turns"] or []]
        record["images"] = list(record["images"] or [])
        record["rubrics"] = list(record["rubrics"] or [])
        lines.append(json.dumps(record, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode() if lines else b""


def _lookup(model_or_queryset, uuids: set) -> dict:
    """uuid → row, a query per 5,000 uuids (the parameter limit)."""
    queryset = getattr(model_or_queryset, "objects", model_or_queryset)
    out, ids = {}, list(uuids)
    for start in range(0, len(ids), 5000):
        out.update(queryset.in_bulk(ids[start:start + 5000], field_name="uuid"))
    return out


def _check(where: str, model, values: dict) -> None:
    if (problem := row_problem(model, values)) is not None:
        raise ImportFailed(f"{where}: {problem}")


def _new_key(key, seen: set, where: str):
    """A uuid no earlier row of the file holds (the database holds one only once)."""
    if key in seen:
        raise ImportFailed(f"{where}: uuid {key} appears twice in the file")
    seen.add(key)
    return key


def _bulk_create(model, objs: list, numbers: list[int], table: str) -> None:
    """Insert in chunks; a chunk the database refuses names the file's rows it held."""
    for start in range(0, len(objs), 5000):
        rows = numbers[start:start + 5000]
        with database_refusal(f"{table}.parquet rows {rows[0]}–{rows[-1]}", ImportFailed):
            model.objects.bulk_create(objs[start:start + 5000])


def _models(rows: list[dict], sid: int) -> tuple[dict[str, EvalModel], int]:
    created = 0
    for n, row in enumerate(rows, start=1):
        where = f"models.parquet row {n}"
        if not row["name"]:
            raise ImportFailed(f"{where}: a model needs a name")
        values = {k: row[k] or "" for k in ("name", "version", "family", "notes")}
        _check(where, EvalModel, values)
        present = EvalModel.objects.in_study(sid).filter(name=row["name"]).first()
        if present is None:
            model = EvalModel(**values, is_reference=bool(row["is_reference"]), study_id=sid)
            try:
                model.full_clean()
            except ValidationError as exc:
                raise ImportFailed(f"{where}: {'; '.join(exc.messages)}") from exc
            with database_refusal(where, ImportFailed):
                model.save()
            created += 1
    return {m.name: m for m in EvalModel.objects.in_study(sid)}, created


def _responses(rows: list[dict], models: dict, sid: int) -> int:
    instances = _lookup(Instance.objects.filter(study_id=sid),
                        {_uuid(r["instance"], "responses.parquet") for r in rows})
    present = _lookup(Response, {_uuid(r["uuid"], "responses.parquet") for r in rows})
    new, numbers, seen, slots = [], [], set(), _stored_slots(instances.values())
    for n, row in enumerate(rows, start=1):
        where = f"responses.parquet row {n}"
        key = _new_key(_uuid(row["uuid"], where), seen, where)
        if key in present:
            continue
        instance = instances.get(_uuid(row["instance"], where))
        model = models.get(row["model"])
        if instance is None or model is None:
            raise ImportFailed(f"{where}: unknown {'instance' if instance is None else 'model'}")
        if row["condition"] not in Response.Condition.values or not 0 <= (row["turn"] or 0) <= 3:
            raise ImportFailed(f"{where}: bad condition {row['condition']!r} or turn")
        text = row["text"] or ""  # an empty answer is an answer (the model said nothing)
        _check(where, Response, {"text": text})
        slot = (instance.pk, model.pk, row["turn"] or 0, row["condition"])
        if slot in slots:
            raise ImportFailed(f"{where}: {model.name!r} already has a response to instance "
                               f"{instance.uuid} (turn {slot[2]}, {slot[3]}): {slots[slot]}")
        slots[slot] = f"responses.parquet row {n}"
        new.append(Response(uuid=key, instance=instance, model=model, turn=row["turn"] or 0,
                            condition=row["condition"], text=text))
        numbers.append(n)
    _bulk_create(Response, new, numbers, "responses")
    return len(new)


def _stored_slots(instances) -> dict[tuple, str]:
    """(instance, model, turn, condition) of the responses already stored for ``instances``."""
    ids, out = [i.pk for i in instances], {}
    for start in range(0, len(ids), 5000):
        for uuid, *slot in Response.objects.filter(instance_id__in=ids[start:start + 5000]) \
                .values_list("uuid", "instance_id", "model_id", "turn", "condition"):
            out[tuple(slot)] = f"the stored response {uuid}"
    return out


def _comparisons(rows: list[dict], sid: int) -> int:
    refs = {_uuid(r[c], "comparisons.parquet") for r in rows for c in ("response_a", "response_b")}
    responses = _lookup(Response.objects.filter(instance__study_id=sid)
                        .select_related("instance"), refs)
    present = _lookup(Comparison, {_uuid(r["uuid"], "comparisons.parquet") for r in rows})
    new, numbers, seen = [], [], set()
    for n, row in enumerate(rows, start=1):
        where = f"comparisons.parquet row {n}"
        key = _new_key(_uuid(row["uuid"], where), seen, where)
        if key in present:
            continue
        a, b = (responses.get(_uuid(row[c], where)) for c in ("response_a", "response_b"))
        if a is None or b is None or a.instance_id != b.instance_id or \
                str(a.instance.uuid) != str(row["instance"]):
            raise ImportFailed(f"{where}: its responses are unknown or not of its instance")
        values = {"sampling": row["sampling"] or "", "gold_choice": row["gold_choice"] or ""}
        _check(where, Comparison, values)
        new.append(Comparison(uuid=key, instance_id=a.instance_id, response_a=a, response_b=b,
                              swapped=bool(row["swapped"]), **values))
        numbers.append(n)
    _bulk_create(Comparison, new, numbers, "comparisons")
    return len(new)


def _judgments(rows: list[dict], sid: int) -> int:
    def ids(column):
        return {_uuid(r[column], "judgments.parquet") for r in rows if r[column]}

    comparisons = _lookup(Comparison.objects.filter(instance__study_id=sid), ids("comparison"))
    responses = _lookup(Response.objects.filter(instance__study_id=sid), ids("response"))
    present = _lookup(Judgment.with_rejected.all(), ids("uuid"))
    new, numbers, seen = [], [], set()
    for n, row in enumerate(rows, start=1):
        where = f"judgments.parquet row {n}"
        key = _new_key(_uuid(row["uuid"], where), seen, where)
        if key in present:
            continue
        on = {}
        if row["comparison"]:
            on["comparison"] = comparisons.get(_uuid(row["comparison"], where))
        if row["response"]:
            on["response"] = responses.get(_uuid(row["response"], where))
        if not on or None in on.values():
            raise ImportFailed(f"{where}: its comparison or response is unknown")
        if row["kind"] not in Judgment.Kind.values or \
                row["choice"] not in ("", *Judgment.Choice.values):
            raise ImportFailed(f"{where}: bad kind {row['kind']!r} or choice {row['choice']!r}")
        values = {"source": row["source"] or "", "annotator": row["annotator"] or "",
                  "kind": row["kind"], "choice": row["choice"] or "", "score": row["score"],
                  "feedback": row["feedback"] or "", "turn": row["turn"] or "",
                  "meta": _json(row["meta"], where, "meta") or {},
                  "template_version": row["template_version"] or "",
                  "prompt_hash": row["prompt_hash"] or ""}
        _check(where, Judgment, values)
        new.append({**on, "uuid": key, **values, "created_at": row["created_at"],
                    "rejected": bool(row.get("rejected"))})
        numbers.append(n)
    for start in range(0, len(new), 5000):
        chunk = new[start:start + 5000]
        where = f"judgments.parquet rows {numbers[start]}–{numbers[start + len(chunk) - 1]}"
        with database_refusal(where, ImportFailed):
            try:
                judgments_record(chunk)
            except ValidationError as exc:
                raise ImportFailed(f"{where}: {'; '.join(exc.messages)}") from exc
    return len(new)


def dataset_import(folder: str | Path, study=None) -> dict[str, int]:
    """Import every table of the dataset in ``folder`` into ``study`` (None: the default study);
    returns rows added per table. Counted against the job cap while it runs (``JobsBusy`` past
    it, or while this folder imports)."""
    folder = Path(folder)
    with occupying("dataset_import", fingerprint=str(folder.resolve())):
        return _import(folder, study_pk(study))


def _import(folder: Path, sid: int) -> dict[str, int]:
    tables = {table: _read(folder, table) for table in FILES}  # all files checked first
    with transaction.atomic():
        dump = _instances_jsonl(tables["instances"])
        created = import_jsonl_dump(io.BytesIO(dump), line_name="instances.parquet row",
                                    study=sid).created if dump else 0
        models, models_created = _models(tables["models"], sid)
        return {"instances": created, "models": models_created,
                "responses": _responses(tables["responses"], models, sid),
                "comparisons": _comparisons(tables["comparisons"], sid),
                "judgments": _judgments(tables["judgments"], sid)}
