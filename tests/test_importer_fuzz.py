"""Every importer, fed a file whose *last* row holds one bad field: refused with the importer's
own error naming that row, nothing written (the row counts of every table of our apps
unchanged), and no database error escaping.

The bad fields are those the forms and the API refuse (``annotation.core.row_checks``): a NUL,
a control character in a name, a value longer than its column, a ``javascript:`` URL where
URLs are taken, and a row duplicating a stored one where the importer's contract makes that a
conflict (importers that skip what is already stored are not asked). The same file with the
row intact imports, so each refusal is the bad field's doing. Real files from
``../shared/data`` are used where an importer takes them; those cases skip when it is absent.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import uuid
import zipfile
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import DatabaseError, transaction

from agreement.backup import BackupError, export_study, import_study
from agreement.backup.manifest import MANIFEST
from annotation.content.exports import dump_jsonl
from annotation.content.formats import (
    build_prometheus_prompt,
    parse_convbench_xlsx,
    parse_prometheus_jsonl,
    write_convbench_xlsx,
)
from annotation.content.imports.common import ImportFailed
from annotation.content.imports.convbench import import_convbench
from annotation.content.imports.jsonl_dump import import_jsonl_dump
from annotation.content.imports.prometheus import import_prometheus
from annotation.content.imports.visitbench import import_visitbench
from annotation.engine.services.batches import RowError, batch_create_from_rows, rows_from_upload
from judging.dataset.export import dataset_export
from judging.dataset.imports import dataset_import
from judging.judges.ablation import import_responses
from judging.models import Comparison, Judgment
from judging.services.errors import ImportRejected
from judging.services.judgments.formats import COLUMNS
from judging.services.judgments.imports import judgments_import
from judging.services.judgments.record import judgment_record
from judging.services.responses import predictions_import
from tests.agreement.study import build_study
from tests.annotation.test_import_properties import db_counts
from tests.judging import builders
from tests.support.shared_data import SHARED_DATA

LONG = "x" * 300  # longer than every name column (model 100, annotator 200, external id 200)
JS_URL = "javascript:alert(1)"


def _shared(*parts: str) -> Path:
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data absent ({path})")
    return path


def _spoil(row: dict, bad: dict, kind: str | None) -> None:
    """Give ``row`` the bad field ``bad[kind] = (column, value)`` (nothing when ``kind`` is
    None); a callable value is applied to the column's old value."""
    if kind is not None:
        column, value = bad[kind]
        row[column] = value(row[column]) if callable(value) else value


class _Scratch(Exception):
    """Raised to roll back a block whose writes only served to build a file."""


def _rolled_back(build):
    """``build()``'s result, with every row it wrote rolled back."""
    out = []
    try:
        with transaction.atomic():
            out.append(build())
            raise _Scratch
    except _Scratch:
        pass
    return out[0]


class Importer:
    """One importer: what it needs stored, a file with a bad last row, and how it names rows."""

    kinds: tuple[str, ...] = ()
    refusal: type[Exception] = ImportFailed
    transactional = False  # the backup restore needs real commits and an empty database

    def prepare(self, tmp_path: Path) -> None:
        """Rows the import needs stored (none by default)."""

    def file(self, kind: str | None, tmp_path: Path):
        """The input with its last row made bad by ``kind`` (intact when None)."""
        raise NotImplementedError

    def run(self, data) -> None:
        raise NotImplementedError

    row = r""  # the refusal names the last row like this


class VisitBench(Importer):
    """The real single-image VisIT-Bench file (10 records); record 10 made bad."""

    bad = {"nul": ("instruction", lambda v: v + "\x00"),
           "control": ("instruction_category", "Chart\x01reading"),  # a family name
           "long": ("instruction_category", LONG), "url": ("image_url", JS_URL)}
    kinds = tuple(bad)
    row = r"record 10\b|row 1[0-9]\b"  # the importer's record, or the parser's CSV line

    def file(self, kind, tmp_path):
        text = _shared("visit_bench", "visit_fully_annotated_example.csv").read_text("utf-8")
        rows = list(csv.DictReader(io.StringIO(text)))
        _spoil(rows[-1], self.bad, kind)
        return _csv_bytes(rows, list(rows[0]))

    def run(self, data):
        import_visitbench(data)


class ConvBench(Importer):
    """The first four conversations of the real workbook; ID 4 made bad (an xlsx cell cannot
    hold a NUL or a control character other than tab and newlines, which a label may hold)."""

    kinds = ("long",)
    row = r"ID 4\b"

    def file(self, kind, tmp_path):
        records = parse_convbench_xlsx(_shared("convbench", "ConvBench.xlsx")).records[:4]
        assert records[-1].id == 4
        if kind == "long":
            records[-1] = replace(records[-1], image_id=LONG + ".jpg")
        return write_convbench_xlsx(records)

    def run(self, data):
        import_convbench(data)


class Prometheus(Importer):
    """The three real Prometheus-Vision prompts; record 3 made bad."""

    kinds = ("nul", "control", "long")
    row = r"record 3\b"

    def file(self, kind, tmp_path):
        records = parse_prometheus_jsonl(_shared("prometheus_vision", "sample_eval_data.jsonl"))
        last = records[-1]
        if kind == "nul":
            last = replace(last, reference_answer=last.reference_answer + "\x00")
        elif kind == "control":
            last = replace(last, image="img\x01.jpg")  # an image id
        elif kind == "long":
            last = replace(last, image=LONG + ".jpg")
        records[-1] = last
        return "\n".join(json.dumps({"image": r.image, "instruction": build_prometheus_prompt(r)})
                         for r in records).encode("utf-8")

    def run(self, data):
        import_prometheus(data)


class JsonlDump(Importer):
    """The full JSONL dump of the real VisIT-Bench file, into an empty database; line 10 bad."""

    kinds = ("nul", "control", "long", "url")
    row = r"line 10\b"

    def file(self, kind, tmp_path):
        source = _shared("visit_bench", "visit_fully_annotated_example.csv")
        lines = _rolled_back(lambda: (import_visitbench(source), dump_jsonl())[1]).splitlines()
        assert len(lines) == 10
        record = json.loads(lines[-1])
        if kind == "nul":
            record["instruction"] += "\x00"
        elif kind == "control":
            record["external_id"] = "visitbench:\x01"
        elif kind == "long":
            record["external_id"] = LONG
        elif kind == "url":
            record["images"][0]["url"] = JS_URL
        lines[-1] = json.dumps(record).encode()
        return b"\n".join(lines) + b"\n"

    def run(self, data):
        import_jsonl_dump(io.BytesIO(data))


def _small_judged_study() -> None:
    models = builders.models("M1", "M2")
    for n in range(3):
        inst = builders.instance(instruction=f"What is in picture {n}?")
        a, b = (builders.respond(inst, m) for m in models.values())
        comparison = Comparison.objects.create(instance=inst, response_a=a, response_b=b)
        for w in range(2):
            judgment_record(source=Judgment.HUMAN, annotator=f"w{w}", comparison=comparison,
                            choice="A")


def _edit_parquet(path: Path, edit) -> None:
    table = pq.read_table(path)
    rows = table.to_pylist()
    edit(rows)
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)


class StudyDataset(Importer):
    """The Parquet study dataset (``export_study_dataset``) into an empty database; for the
    duplicate, into the database it came from, with a new responses row taking a stored
    response's place."""

    kinds = ("nul", "control", "long", "url", "duplicate")
    row = r"\w+\.parquet row \d+"

    def prepare(self, tmp_path):
        self.kept = False

    def file(self, kind, tmp_path):
        folder = tmp_path / f"dataset-{kind}"
        if kind == "duplicate":
            if not self.kept:
                _small_judged_study()
                self.kept = True
            dataset_export(folder)
        else:
            _rolled_back(lambda: (_small_judged_study(), dataset_export(folder)))
        self.row = r"\w+\.parquet row \d+"

        def last_of(table: str, column: str, value) -> None:
            def edit(rows):
                rows[-1][column] = value(rows[-1][column])
            _edit_parquet(folder / f"{table}.parquet", edit)
            self.row = rf"{table}\.parquet row {len(pq.read_table(folder / f'{table}.parquet'))}\b"

        if kind == "nul":
            last_of("models", "name", lambda v: v + "\x00")
        elif kind == "control":
            last_of("judgments", "annotator", lambda v: v + "\x01")
        elif kind == "long":
            last_of("judgments", "annotator", lambda v: LONG)
        elif kind == "url":
            def js(images):
                return [{**images[0], "url": JS_URL}, *images[1:]]
            last_of("instances", "images", js)
        elif kind == "duplicate":
            def duplicate(rows):
                rows.append({**rows[0], "uuid": str(uuid.uuid4()), "text": "Another text."})
            _edit_parquet(folder / "responses.parquet", duplicate)
            self.row = rf"responses\.parquet row {len(pq.read_table(folder / 'responses.parquet'))}\b"
        return folder

    def run(self, folder):
        dataset_import(folder)


def _judgment_rows(n: int) -> list[dict]:
    return [{"item_id": f"item-{k}", "dataset": "fuzz", "instruction": f"Describe picture {k}.",
             "image_urls": json.dumps([f"https://example.org/{k}.png"]), "model_a": "m1",
             "response_a": f"m1 on {k}", "model_b": "m2", "response_b": f"m2 on {k}",
             "annotator": "w1", "source": "human", "choice": "A", "score": "", "turn": "",
             "timestamp": ""} for k in range(1, n + 1)]


def _csv_bytes(rows: list[dict], columns: list[str]) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode("utf-8")


class Judgments(Importer):
    """A generic judgment CSV creating what it names; row 4 bad. The duplicate: row 4 gives
    another text for a response already stored."""

    bad = {"nul": ("annotator", "w\x00"), "control": ("model_b", "m\x012"),
           "long": ("annotator", LONG), "url": ("image_urls", json.dumps([JS_URL])),
           "duplicate": ("response_a", "A different answer for a stored response.")}
    kinds = tuple(bad)
    refusal = ImportRejected
    row = r"Row 4\b"

    def prepare(self, tmp_path):
        judgments_import("first.csv", _csv_bytes(_judgment_rows(4)[3:], COLUMNS),
                         create_missing=True)  # item 4 and its responses are stored

    def file(self, kind, tmp_path):
        rows = _judgment_rows(4)
        _spoil(rows[-1], self.bad, kind)
        return _csv_bytes(rows, COLUMNS)

    def run(self, data):
        judgments_import("fuzz.csv", data, create_missing=True)


class Predictions(Importer):
    """A predictions JSONL for four stored instances; row 4 bad. The duplicate: row 4 gives
    another text for a response already stored."""

    bad = {"nul": ("prediction", "x\x00"), "control": ("model", "m\x011"),
           "long": ("model", LONG), "duplicate": ("prediction", "A different answer.")}
    kinds = tuple(bad)
    refusal = ImportRejected
    row = r"Row 4\b"

    def prepare(self, tmp_path):
        self.items = [builders.instance(external_id=f"pred-{k}") for k in range(1, 5)]
        builders.respond(self.items[-1], builders.models("m1")["m1"], "A stored answer.")

    def file(self, kind, tmp_path):
        rows = [{"item_id": i.external_id, "model": "m1", "prediction": f"Answer {k}."}
                for k, i in enumerate(self.items, start=1)]
        rows[-1]["prediction"] = "A stored answer."
        _spoil(rows[-1], self.bad, kind)
        return "\n".join(json.dumps(r) for r in rows).encode("utf-8")

    def run(self, data):
        predictions_import("fuzz.jsonl", data)


class RatingBatch(Importer):
    """A forced-choice rating batch uploaded as CSV with its texts and model names inline
    (stored as models, responses and comparisons); row 4 bad."""

    bad = {"nul": ("response_b", "m2\x00"), "control": ("model_a", "m\x011"),
           "long": ("model_a", LONG), "url": ("image_urls", json.dumps([JS_URL]))}
    kinds = tuple(bad)
    refusal = RowError
    row = r"Row 4\b|Line 5\b"  # the row's number, or its CSV line (the header is line 1)

    def file(self, kind, tmp_path):
        rows = [{"instruction": f"Describe picture {k}.",
                 "image_urls": json.dumps([f"https://example.org/{k}.png"]),
                 "model_a": "m1", "response_a": f"m1 on {k}", "model_b": "m2",
                 "response_b": f"m2 on {k}"} for k in range(1, 5)]
        _spoil(rows[-1], self.bad, kind)
        return _csv_bytes(rows, list(rows[0]))

    def run(self, data):
        batch_create_from_rows(hit_type="pairwise_ab", title="fuzz",
                               rows=rows_from_upload("fuzz.csv", data))


class Ablation(Importer):
    """A model's answers to the ConvBench ablation conversations; line 3 bad."""

    kinds = ("nul",)
    refusal = ValidationError
    row = r"line 3\b"

    def prepare(self, tmp_path):
        models = builders.models("Conv-A", "Conv-B")
        self.items = [builders.conversation(models["Conv-A"], models["Conv-B"])
                      for _ in range(3)]

    def file(self, kind, tmp_path):
        lines = [{"instance": str(i.uuid), "condition": "generated",
                  "responses": {"1": "one", "2": "two", "3": "three"}} for i in self.items]
        if kind == "nul":
            lines[-1]["responses"]["3"] = "thr\x00ee"
        return [json.dumps(line) for line in lines]

    def run(self, lines):
        import_responses(model_name="Conv-New", lines=lines)


class Backup(Importer):
    """A study backup (``backup_study``) restored into the emptied database; a late row of one
    member made bad and the manifest's checksum fixed (a deliberate tamper)."""

    kinds = ("nul", "control", "long", "duplicate")
    refusal = BackupError
    transactional = True

    def prepare(self, tmp_path):
        build_study()
        self.archive = tmp_path / "study.zip"
        export_study(self.archive)
        call_command("flush", interactive=False, verbosity=0)

    def file(self, kind, tmp_path):
        member = ("data/judging.response.jsonl" if kind in ("nul", "duplicate")
                  else "data/judging.judgment.jsonl")
        with zipfile.ZipFile(self.archive) as zf:
            lines = zf.read(member).decode().splitlines()
        last = json.loads(lines[-1])
        if kind == "nul":
            last["fields"]["text"] += "\x00"
        elif kind == "control":
            last["fields"]["annotator"] = "w\x01"
        elif kind == "long":
            last["fields"]["annotator"] = LONG
        if kind == "duplicate":  # the same response again under another id
            last["pk"] += 10_000
            lines.append(json.dumps(last))
        else:
            lines[-1] = json.dumps(last)
        self.row = rf"{re.escape(member)} line {len(lines)}\b"
        data = ("\n".join(lines) + "\n").encode()
        out = tmp_path / f"bad-{kind}.zip"
        with zipfile.ZipFile(self.archive) as zin, zipfile.ZipFile(out, "w") as zout:
            manifest = json.loads(zin.read(MANIFEST))
            for name in zin.namelist():
                if name not in (MANIFEST, member):
                    zout.writestr(name, zin.read(name))
            manifest["files"][member] = {"sha256": hashlib.sha256(data).hexdigest(),
                                         "bytes": len(data)}
            zout.writestr(member, data)
            zout.writestr(MANIFEST, json.dumps(manifest))
        return out

    def run(self, path):
        import_study(path)


IMPORTERS = [VisitBench(), ConvBench(), Prometheus(), JsonlDump(), StudyDataset(), Judgments(),
             Predictions(), RatingBatch(), Ablation(), Backup()]
CASES = [pytest.param(importer, kind, id=f"{type(importer).__name__}-{kind}",
                      marks=pytest.mark.django_db(transaction=importer.transactional))
         for importer in IMPORTERS for kind in importer.kinds]


def _message(exc: Exception) -> str:
    return " ".join(getattr(exc, "messages", None) or [str(exc)])


class TestEveryImporterRefusesABadLateRowWhole:
    @pytest.mark.parametrize("importer, kind", CASES)
    def test_refused_naming_the_row_and_nothing_written(self, importer, kind, tmp_path):
        importer.prepare(tmp_path)
        good = importer.file(None, tmp_path)
        if importer.transactional:  # the intact file restores (then the database is emptied)
            importer.run(good)
            call_command("flush", interactive=False, verbosity=0)
        else:
            _rolled_back(lambda: importer.run(good))
        bad = importer.file(kind, tmp_path)
        before = db_counts()
        with pytest.raises(Exception) as caught:
            importer.run(bad)
        assert isinstance(caught.value, importer.refusal), repr(caught.value)
        assert not isinstance(caught.value, DatabaseError)
        assert re.search(importer.row, _message(caught.value)), _message(caught.value)
        assert db_counts() == before
