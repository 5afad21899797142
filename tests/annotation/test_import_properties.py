"""Property tests of the benchmark importers and the batch upload: malformed input is either
imported validly or refused with the importer's own error naming the row, and a refused file
leaves every table as it was: uploads come from outside, and a file that fails half-way must
not leave half a dataset behind.

Each example runs inside a savepoint rolled back at its end, and compares the row counts of
every model of the project's apps before and after the call.
"""
import contextlib
import csv
import io
import json
import re
import uuid

import pytest
from django.apps import apps
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.content.exports import dump_jsonl
from annotation.content.formats import (
    ConvBenchRecord,
    HumanVerification,
    ImageRef,
    PrometheusRecord,
    Rubric,
    VisitDataset,
    VisitRecord,
    build_prometheus_prompt,
    write_convbench_xlsx,
    write_visit_csv,
)
from annotation.content.imports.common import ImportFailed
from annotation.content.imports.convbench import import_convbench
from annotation.content.imports.images import image_store_bytes
from annotation.content.imports.jsonl_dump import import_jsonl_dump
from annotation.content.imports.prometheus import import_prometheus
from annotation.content.imports.visitbench import import_visitbench
from annotation.core.image_fetch import ImageFetchError
from annotation.engine.services.batches import RowError, batch_create_from_rows, rows_from_upload
from annotation.models import (
    ConversationTurn,
    Image,
    Instance,
    InstanceImage,
    InstructionFamily,
    ScoreRubric,
)

pytestmark = pytest.mark.django_db

APPS = ("annotation", "judging", "agreement", "auth")
PROPERTY = settings(
    max_examples=30, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                           HealthCheck.data_too_large],
)


# --------------------------------------------------------------------------- shared helpers


def db_counts() -> dict[str, int]:
    """Row count of every model (auto-created many-to-many tables included) of our apps."""
    return {
        model._meta.label: model._base_manager.count()
        for label in APPS for model in apps.get_app_config(label).get_models(
            include_auto_created=True)
    }


@contextlib.contextmanager
def scratch():
    """One example's database changes, rolled back when it ends."""
    with transaction.atomic():
        yield
        transaction.set_rollback(True)


def refused_or_valid(call, errors, *, row_pattern: str | None = None):
    """Run ``call``: it returns, or raises one of ``errors`` (any other exception fails the
    test) having written nothing; ``row_pattern`` must then occur in the message."""
    before = db_counts()
    try:
        result = call()
    except errors as exc:
        assert db_counts() == before, f"a refused import wrote rows: {exc}"
        message = " ".join(getattr(exc, "messages", None) or [str(exc)])
        if row_pattern is not None:
            assert re.search(row_pattern, message, re.IGNORECASE), message
        return None, message
    return result, None


# Text a spreadsheet or a JSON file may hold: control characters, NUL, lone surrogates (only
# reachable through JSON escapes or str content), bidi overrides, formulas, markup, BOMs,
# and strings longer than the columns that store them.
ODD = st.sampled_from([
    "\x00", "\ud800", "\udfff", "\u202e", "\ufeff", "\u200b", "=HYPERLINK(\"http://x\")",
    "+1+1", "@SUM(A1)", "<script>alert(1)</script>", "é", "😀", "\r", "\n", '"', ",", "\t",
    "x" * 1200, "\x1b[31m", "\u2028", "\x85", "\x1c",
])
NASTY = st.lists(st.one_of(st.text(max_size=12), ODD), min_size=0, max_size=4).map("".join)
NASTY_NONEMPTY = st.lists(st.one_of(st.text(min_size=1, max_size=12), ODD),
                          min_size=1, max_size=4).map("".join)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=False)
    | NASTY,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(NASTY, children,
                                                                      max_size=3),
    max_leaves=6,
)


def _csv(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n").writerows(rows)
    return out.getvalue()


# --------------------------------------------------------------------------- VisIT-Bench CSV


def _visit_record(n: int) -> VisitRecord:
    urls = [f"https://example.org/{n}/{i}.png" for i in range(1 + n % 2)]
    return VisitRecord(
        category=f"Category {n % 2}", instruction=f"What is in image set {n}?",
        images=[ImageRef(u, f"Caption {n}.{i}", f"blip {i}") for i, u in enumerate(urls)],
        reference_output=f"Reference {n}.", candidate_reference=f"Candidate {n}.",
        human_verification=HumanVerification(True, False, False),
    )


def _visit_rows(count: int) -> list[list[str]]:
    text = write_visit_csv(VisitDataset("multi", [_visit_record(n) for n in range(count)]))
    return list(csv.reader(io.StringIO(text, newline="")))


_VISIT_COLUMNS = _visit_rows(1)[0]


def _col(name: str) -> int:
    return _VISIT_COLUMNS.index(name)


# Each corruption makes a row that no importer may accept.
VISIT_CORRUPTIONS = {
    "missing cell": lambda r: r[:-1],
    "extra cell": lambda r: [*r, "surplus"],
    "empty instruction": lambda r: _set(r, "instruction", "  "),
    "NUL in instruction": lambda r: _set(r, "instruction", "What\x00 is this?"),
    "surrogate in caption": lambda r: _set(r, "images_dense_captions", '["a \\ud800 b"]'),
    "NUL in caption": lambda r: _set(r, "images_dense_captions", '["a \\u0000 b"]'),
    "NUL in metadata": lambda r: _set(r, "public_images_metadata", '{"k": "\\u0000"}'),
    "ftp image": lambda r: _set(r, "images", '["ftp://example.org/a.png"]'),
    "image list not JSON": lambda r: _set(r, "images", "[not json"),
    "eleven images": lambda r: _set(r, "images", json.dumps(
        [f"https://example.org/{i}.png" for i in range(11)])),
    "URL too long for its column": lambda r: _set(r, "images", json.dumps(
        ["https://example.org/" + "a" * 1000])),
    "bad flag": lambda r: _set(r, "human_ratings_gpt4_correct", "maybe"),
    "two verdicts": lambda r: _set(r, "human_ratings_problem_in_gpt4", "True"),
    "metadata not an object": lambda r: _set(r, "public_images_metadata", "[1, 2]"),
    "multiple flag wrong": lambda r: _set(r, "is_multiple_images", "True"),
}


def _set(row: list[str], column: str, value: str) -> list[str]:
    row = list(row)
    row[_col(column)] = value
    return row


@PROPERTY
@given(st.binary(max_size=400))
def test_visitbench_arbitrary_bytes_import_or_refuse(data):
    with scratch():
        refused_or_valid(lambda: import_visitbench(data), ImportFailed)


@PROPERTY
@given(st.lists(st.lists(NASTY, min_size=9, max_size=14), min_size=1, max_size=3))
def test_visitbench_rows_of_odd_cells_import_or_refuse(rows):
    text = _csv([_VISIT_COLUMNS, *rows])
    with scratch():
        refused_or_valid(lambda: import_visitbench(text), ImportFailed,
                         row_pattern=r"\b(row|record) \d+")


@PROPERTY
@given(st.integers(0, 3), st.sampled_from(sorted(VISIT_CORRUPTIONS)), st.booleans())
def test_visitbench_one_corrupted_row_is_refused_by_number(position, corruption, as_bytes):
    rows = _visit_rows(4)
    bad = VISIT_CORRUPTIONS[corruption](_visit_rows(6)[5])
    rows.insert(position + 1, bad)
    text = _csv(rows)
    source = text.encode("utf-8", "surrogatepass") if as_bytes else text
    with scratch():
        # Spreadsheet row (header = row 1) or 1-based record number.
        pattern = rf"\b(row {position + 2}|record {position + 1})\b"
        result, message = refused_or_valid(lambda: import_visitbench(source), ImportFailed,
                                           row_pattern=pattern)
        assert result is None, f"{corruption} was accepted"


@PROPERTY
@given(st.lists(st.sampled_from(range(3)), min_size=2, max_size=6))
def test_visitbench_duplicate_rows_import_once(picks):
    rows = _visit_rows(3)
    text = _csv([rows[0], *(rows[1 + i] for i in picks)])
    with scratch():
        summary = import_visitbench(text)
        assert summary.created == len(set(picks))
        assert summary.skipped == len(picks) - len(set(picks))
        assert Instance.objects.count() == len(set(picks))


# --------------------------------------------------------------------------- ConvBench xlsx


def _conv(n: int, image_id: str | None = None, turns=None) -> ConvBenchRecord:
    return ConvBenchRecord(n, image_id or f"img_{n}.jpg",
                           turns or [f"Q{n}.1 what?", f"Q{n}.2 why?", f"Q{n}.3 write."])


@PROPERTY
@given(st.binary(max_size=300))
def test_convbench_arbitrary_bytes_import_or_refuse(data):
    with scratch():
        refused_or_valid(lambda: import_convbench(data), ImportFailed)


_XLSX_TEXT = NASTY_NONEMPTY.map(
    lambda s: "".join(c for c in s if c in "\t\n\r" or (ord(c) >= 32 and not
                                                            0xD800 <= ord(c) <= 0xDFFF))[:32767]
).filter(
    lambda s: s.strip() and not s.startswith("="))


@PROPERTY
@given(st.integers(0, 3), _XLSX_TEXT, st.lists(_XLSX_TEXT, min_size=3, max_size=3))
def test_convbench_odd_cells_import_or_refuse_by_row(position, image_id, turns):
    records = [_conv(n) for n in range(1, 4)]
    records.insert(position, _conv(99, image_id.replace("/", "_").replace("\\", "_"), turns))
    data = write_convbench_xlsx(records)
    with scratch():
        result, message = refused_or_valid(lambda: import_convbench(data), ImportFailed,
                                           row_pattern=rf"\b(row {position + 2}|ID 99)\b")
        if result is not None:
            assert result.created == 4
            assert ConversationTurn.objects.count() == 12


def test_convbench_image_id_longer_than_its_column_is_refused_by_row():
    """Regression: a 201+ character image_id crashed with a database error (DataError on
    PostgreSQL) instead of naming the row."""
    data = write_convbench_xlsx([_conv(1), _conv(2, "i" * 250 + ".jpg")])
    before = db_counts()
    with pytest.raises(ImportFailed, match=r"ID 2\b.*image_id"):
        import_convbench(data)
    assert db_counts() == before


# --------------------------------------------------------------------------- Prometheus jsonl


def _prom_line(n: int, **parts) -> str:
    record = PrometheusRecord(
        image=parts.get("image", f"img_{n}.jpg"),
        instruction=parts.get("instruction", f"Describe picture {n}."),
        response=parts.get("response", f"A response {n}."),
        reference_answer=parts.get("reference", f"The reference {n}."),
        rubric=Rubric(parts.get("criteria", "Is it accurate?"),
                      parts.get("scores", ["bad", "weak", "fair", "good", "great"])),
    )
    return json.dumps({"image": record.image, "instruction": build_prometheus_prompt(record)})


@PROPERTY
@given(st.text(max_size=300))
def test_prometheus_arbitrary_text_import_or_refuse(text):
    with scratch():
        refused_or_valid(lambda: import_prometheus(text), ImportFailed)


@PROPERTY
@given(st.integers(0, 3), NASTY_NONEMPTY, NASTY_NONEMPTY, NASTY, NASTY_NONEMPTY,
       st.lists(NASTY_NONEMPTY, min_size=5, max_size=5))
def test_prometheus_odd_parts_import_or_refuse_by_line(position, image, instruction, response,
                                                       criteria, scores):
    lines = [_prom_line(n) for n in range(3)]
    lines.insert(position, _prom_line(9, image=image, instruction=instruction,
                                      response=response, criteria=criteria, scores=scores))
    text = "\n".join(lines) + "\n"
    with scratch():
        result, _ = refused_or_valid(lambda: import_prometheus(text), ImportFailed,
                                     row_pattern=rf"\b(row|record) {position + 1}\b")
        if result is not None:
            assert result.created + result.skipped == 4
            assert ScoreRubric.objects.count() == result.created


@pytest.mark.parametrize("parts,field", [
    ({"instruction": "Describe \x00 it."}, "NUL"),
    ({"response": "bad \ud800 half"}, "surrogate|Unicode"),
    ({"image": "i" * 300}, "image"),
])
def test_prometheus_values_the_database_cannot_hold_are_refused_by_line(parts, field):
    """Regression: NUL, a lone surrogate (valid JSON escapes) or an image name longer than its
    column crashed with a database/encoding error; now the line is named, nothing written."""
    text = "\n".join([_prom_line(1), _prom_line(2, **parts)]) + "\n"
    before = db_counts()
    with pytest.raises(ImportFailed, match=rf"(row|record) 2\b.*({field})"):
        import_prometheus(text)
    assert db_counts() == before


# --------------------------------------------------------------------------- JSONL dump


def _dump_lines() -> list[str]:
    """A dump of two single-image instances (one family) and a three-turn conversation with a
    rubric, taken inside a rolled-back savepoint so the database stays empty."""
    with scratch():
        family = InstructionFamily.objects.create(name="Counting", skill="Count things")
        seed = Image.objects.create(source_url="https://example.org/seed.png")
        family.seed_images.add(seed)
        for n in range(2):
            inst = Instance.objects.create(family=family, instruction=f"How many {n}?",
                                           source="test", external_id=f"t{n}")
            InstanceImage.objects.create(
                instance=inst, position=0, caption=f"cap {n}",
                image=Image.objects.create(source_url=f"https://example.org/{n}.png"))
        conv = Instance.objects.create(kind="conversation", instruction="Look.",
                                       source="test", external_id="conv")
        for turn, capability in enumerate(("perception", "reasoning", "creation"), start=1):
            ConversationTurn.objects.create(instance=conv, turn=turn, capability=capability,
                                            instruction=f"Turn {turn}?")
        ScoreRubric.objects.create(instance=conv, criteria="Good?", score1="1", score2="2",
                                   score3="3", score4="4", score5="5")
        lines = dump_jsonl().decode("utf-8").splitlines()
    assert len(lines) == 3
    return lines


def _set_path(record: dict, path: tuple, value) -> dict:
    record = json.loads(json.dumps(record))
    target = record
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return record


_DELETE = object()

# (line index, key path, value) — each makes a record the importer must refuse.
DUMP_CORRUPTIONS = {
    "bad uuid": (0, ("uuid",), "not-a-uuid"),
    "unknown kind": (0, ("kind",), "bogus"),
    "stage too long": (0, ("stage",), "x" * 50),
    "NUL in instruction": (0, ("instruction",), "How \x00 many?"),
    "surrogate in instruction": (0, ("instruction",), "How \ud800 many?"),
    "NUL in extra": (0, ("extra",), {"note": "\x00"}),
    "NUL key in reference_meta": (0, ("reference_meta",), {"\x00": 1}),
    "external id too long": (0, ("external_id",), "e" * 300),
    "missing images": (0, ("images",), _DELETE),
    "images not a list": (0, ("images",), {"a": 1}),
    "image url ftp": (0, ("images", 0, "url"), "ftp://example.org/x.png"),
    "image uuid bad": (0, ("images", 0, "uuid"), 12),
    "image width negative": (0, ("images", 0, "width"), -5),
    "image width huge": (0, ("images", 0, "width"), 10**30),
    "NUL in caption": (0, ("images", 0, "caption"), "\x00"),
    "family name too long": (0, ("family", "name"), "n" * 150),
    "family not an object": (0, ("family",), "Counting"),
    "NUL in seed url": (0, ("family", "seed_images", 0, "url"), "https://x.org/\x00"),
    "turn out of range": (2, ("turns", 0, "turn"), 7),
    "turn not a number": (2, ("turns", 0, "turn"), "first"),
    "turn capability bad": (2, ("turns", 0, "capability"), "dancing"),
    "NUL in focus points": (2, ("turns", 1, "focus_points"), ["\x00"]),
    "four rubric scores": (2, ("rubrics", 0, "scores"), ["1", "2", "3", "4"]),
    "rubric uuid bad": (2, ("rubrics", 0, "uuid"), [1]),
    "NUL in rubric": (2, ("rubrics", 0, "criteria"), "a\x00b"),
    "record a list": (0, (), None),
}


@pytest.fixture
def dump_lines():
    return _dump_lines()


@PROPERTY
@given(data=st.data())
def test_dump_one_corrupted_line_is_refused_by_number(dump_lines, data):
    name = data.draw(st.sampled_from(sorted(DUMP_CORRUPTIONS)), label="corruption")
    index, path, value = DUMP_CORRUPTIONS[name]
    position = data.draw(st.integers(0, 3), label="position")
    bad = "[1, 2]" if not path else json.dumps(_set_path(json.loads(dump_lines[index]), path,
                                                         value))
    lines = [line for i, line in enumerate(dump_lines) if i != index]
    lines.insert(position % (len(lines) + 1), bad)
    number = lines.index(bad) + 1
    with scratch():
        result, _ = refused_or_valid(lambda: import_jsonl_dump(io.StringIO("\n".join(lines))),
                                     ImportFailed, row_pattern=rf"\bline {number}\b")
        assert result is None, f"{name} was accepted"


@PROPERTY
@given(data=st.data())
def test_dump_values_of_any_type_import_or_refuse(dump_lines, data):
    index = data.draw(st.integers(0, 2), label="line")
    record = json.loads(dump_lines[index])
    key = data.draw(st.sampled_from(sorted(record)), label="key")
    record[key] = data.draw(JSONISH, label="value")
    lines = [*dump_lines[:index], json.dumps(record), *dump_lines[index + 1:]]
    with scratch():
        result, _ = refused_or_valid(lambda: import_jsonl_dump(io.StringIO("\n".join(lines))),
                                     ImportFailed, row_pattern=rf"\bline {index + 1}\b")
        if result is not None:
            assert result.created == 3


@PROPERTY
@given(st.binary(max_size=300))
def test_dump_arbitrary_bytes_import_or_refuse(data):
    with scratch():
        refused_or_valid(lambda: import_jsonl_dump(io.BytesIO(data)), ImportFailed)


def test_dump_duplicate_instance_uuid_is_refused(dump_lines):
    with scratch():
        before = db_counts()
        with pytest.raises(ImportFailed, match="line 4: instance .* appears twice"):
            import_jsonl_dump(io.StringIO("\n".join([*dump_lines, dump_lines[0]])))
        assert db_counts() == before


def test_dump_nul_and_surrogate_are_refused_by_line(dump_lines):
    """Regression: NUL in a text or JSON field, or a lone surrogate, passed full_clean and then
    crashed on PostgreSQL (DataError / UnicodeEncodeError) instead of naming the line."""
    for value in ("How \x00 many?", "How \ud800 many?"):
        record = json.loads(dump_lines[1])
        record["instruction"] = value
        with scratch():
            before = db_counts()
            with pytest.raises(ImportFailed, match=r"line 2\b"):
                import_jsonl_dump(io.StringIO("\n".join([dump_lines[0], json.dumps(record)])))
            assert db_counts() == before


# --------------------------------------------------------------------------- images


@PROPERTY
@given(st.binary(max_size=2000))
def test_image_bytes_store_or_refuse(data):
    with scratch():
        image, _ = refused_or_valid(lambda: image_store_bytes(data), ImageFetchError)
        if image is not None:
            assert image.fetch_status == Image.FetchStatus.OK and image.sha256


# --------------------------------------------------------------------------- batch upload


_PAIRWISE_COLUMNS = ["instruction", "image_urls", "response_a", "response_b", "_gold_answer"]


def _pairwise_row(n: int) -> list[str]:
    return [f"Question {n}?", json.dumps([f"https://example.org/{n}.png"]), f"A{n}", f"B{n}",
            ""]


def _upload_and_create(name: str, data: bytes, hit_type: str = "pairwise_ab"):
    rows = rows_from_upload(name, data)
    return batch_create_from_rows(hit_type=hit_type, title="fuzz", rows=rows)


@PROPERTY
@given(st.binary(max_size=400), st.sampled_from(["rows.csv", "rows.jsonl", "rows.txt"]))
def test_batch_upload_arbitrary_bytes_create_or_refuse(data, name):
    with scratch():
        refused_or_valid(lambda: _upload_and_create(name, data), RowError)


BATCH_CELL_CORRUPTIONS = {
    "missing cell": lambda r: r[:2],
    "NUL in gold": lambda r: [*r[:4], '{"choice": "\\u0000"}'],
    "gold not JSON": lambda r: [*r[:4], "{choice"],
    "NUL in url list": lambda r: [r[0], '["https://x.org/\\u0000"]', *r[2:]],
    "surrogate in url list": lambda r: [r[0], '["https://x.org/\\ud800"]', *r[2:]],
    "ftp url": lambda r: [r[0], '["ftp://x.org/a.png"]', *r[2:]],
    "eleven urls": lambda r: [r[0], json.dumps(["https://x.org/a.png"] * 11), *r[2:]],
    "url list not JSON": lambda r: [r[0], "[oops", *r[2:]],
    "NUL in instruction": lambda r: ["Q\x00?", *r[1:]],
    "huge instruction": lambda r: ["q" * 6000, *r[1:]],
    "huge field over the csv limit": lambda r: [r[0], r[1], "a" * 200_000, *r[3:]],
    "empty response": lambda r: [*r[:3], "", r[4]],
}


@PROPERTY
@given(st.integers(0, 3), st.sampled_from(sorted(BATCH_CELL_CORRUPTIONS)))
def test_batch_csv_one_corrupted_row_is_refused_by_number(position, corruption):
    rows = [_pairwise_row(n) for n in range(3)]
    rows.insert(position, BATCH_CELL_CORRUPTIONS[corruption](_pairwise_row(9)))
    data = _csv([_PAIRWISE_COLUMNS, *rows]).encode("utf-8")
    with scratch():
        # The row number of the data (first data row = 1), or the CSV line (header = 1).
        pattern = rf"\b(row|line) ({position + 1}|{position + 2})\b"
        result, _ = refused_or_valid(lambda: _upload_and_create("rows.csv", data), RowError,
                                     row_pattern=pattern)
        assert result is None, f"{corruption} was accepted"


@PROPERTY
@given(st.integers(0, 3), st.dictionaries(
    st.sampled_from([*_PAIRWISE_COLUMNS, "comparison", "other", ""]), JSONISH, max_size=6))
def test_batch_jsonl_rows_of_any_type_create_or_refuse(position, row):
    lines = [json.dumps(dict(zip(_PAIRWISE_COLUMNS, _pairwise_row(n), strict=True)))
             for n in range(3)]
    lines.insert(position, json.dumps(row))
    data = "\n".join(lines).encode("utf-8")
    with scratch():
        batch, _ = refused_or_valid(lambda: _upload_and_create("rows.jsonl", data), RowError,
                                    row_pattern=rf"\b(row|line) {position + 1}\b")
        if batch is not None:
            assert batch.tasks.count() == 4


@PROPERTY
@given(st.sampled_from(["instruction_generation", "instruction_caption",
                        "reference_verification", "multiturn_ab", "rubric_score",
                        "feedback_ab"]),
       st.dictionaries(st.sampled_from(["family", "instance", "comparison", "turns", "response",
                                        "rubric", "judgment_a", "judgment_b", "image_urls",
                                        "instruction", "response_text", "criteria"]),
                       JSONISH, max_size=5))
def test_batch_rows_for_every_hit_type_create_or_refuse(hit_type, row):
    with scratch():
        refused_or_valid(lambda: batch_create_from_rows(hit_type=hit_type, title="t",
                                                        rows=[row]),
                         RowError, row_pattern=r"\brow 1\b")


def test_batch_csv_field_over_the_csv_limit_is_a_row_error():
    """Regression: a cell over csv.field_size_limit() raised _csv.Error from rows_from_upload."""
    data = _csv([_PAIRWISE_COLUMNS, _pairwise_row(1), ["q", "[]", "a" * 200_000, "b", ""]])
    with pytest.raises(RowError, match=r"(?i)line 3\b"):
        rows_from_upload("rows.csv", data.encode("utf-8"))


def test_batch_nul_in_json_payload_or_gold_is_a_row_error():
    """Regression: NUL inside a JSON payload value or gold answer passed the form and crashed
    PostgreSQL's jsonb on insert (DataError) instead of naming the row."""
    good = dict(zip(_PAIRWISE_COLUMNS, _pairwise_row(1), strict=True))
    for bad in ({**good, "image_urls": ["https://x.org/\x00"]},
                {**good, "_gold_answer": {"choice": "\x00"}}):
        before = db_counts()
        with pytest.raises(RowError, match=r"Row 2\b"):
            batch_create_from_rows(hit_type="pairwise_ab", title="t", rows=[good, bad])
        assert db_counts() == before


def test_batch_row_keys_are_strings():
    """A JSONL row's keys arrive as strings; a payload naming an unknown comparison is refused."""
    with pytest.raises(RowError, match=r"Row 1: .*comparison"):
        batch_create_from_rows(hit_type="pairwise_ab", title="t",
                               rows=[{"comparison": str(uuid.uuid4())}])


def test_line_separators_inside_json_strings_do_not_split_lines(dump_lines):
    """Regression: JSONL readers split lines with str.splitlines(), which also breaks at
    U+2028, U+0085 and U+001C — characters JSON allows raw inside strings and that our own
    exports write (ensure_ascii=False) — so a valid file was refused as 'invalid JSON'."""
    odd = "one\u2028two\x85three\x1cfour"
    row = {"instruction": odd, "response_a": "a", "response_b": "b"}
    rows = rows_from_upload("rows.jsonl", json.dumps(row, ensure_ascii=False).encode("utf-8"))
    assert rows == [row]
    record = json.loads(dump_lines[0])
    record["instruction"] = odd
    with scratch():
        import_jsonl_dump(io.StringIO(json.dumps(record, ensure_ascii=False)))
        assert Instance.objects.get().instruction == odd
