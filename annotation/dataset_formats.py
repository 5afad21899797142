"""Parsers and writers for the benchmark files we import and export.

Pure functions over plain dataclasses (no database), so importers can parse a
whole upload first and then write it in one transaction: every parser
validates every row and raises :class:`FormatError` for the first bad one.

Row numbers in :class:`FormatError` are what a person sees when opening the
file in a spreadsheet: **the header is row 1, the first data row is row 2**
(CSV records spanning several text lines still count as one row).  For JSONL
the row number is the 1-based line number (there is no header).

Formats (real files in ``shared/data``, see its README):

* VisIT-Bench single-image CSV and multi-image CSV (told apart by header);
* ConvBench ``.xlsx`` (sheet ``multi_turn_benchmark``);
* Prometheus-Vision ``.jsonl`` whose ``instruction`` holds a full rubric prompt.

Findings about the encodings are documented next to each parser.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal
from urllib.parse import urlsplit

import openpyxl
from openpyxl.cell import WriteOnlyCell
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE


class FormatError(ValueError):
    """A file that does not match its format; names the row and column."""

    def __init__(self, row_number: int, column: str | None, message: str):
        where = f"row {row_number}" + (f", column {column!r}" if column else "")
        super().__init__(f"{where}: {message}")
        self.row_number = row_number
        self.column = column
        self.message = message


Source = str | bytes | os.PathLike | IO[str] | IO[bytes]


def _read_text(source: Source) -> str:
    """Text of ``source``: a Path, bytes, text content, or an open file.

    A plain ``str`` is treated as the file *content*, not a path; pass a
    ``pathlib.Path`` for files.  A UTF-8 BOM (Excel) is dropped.
    """
    if isinstance(source, os.PathLike):
        data: str | bytes = Path(source).read_bytes()
    elif isinstance(source, (str, bytes)):
        data = source
    else:
        data = source.read()
    if isinstance(data, str):
        return data.removeprefix("\ufeff")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise FormatError(line, None, f"file is not UTF-8 text (byte {exc.start})") from exc


def _is_blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _check_url(url: Any, row: int, column: str) -> str:
    if not isinstance(url, str) or not url.strip():
        raise FormatError(row, column, f"image URL must be a non-empty string, got {url!r}")
    try:
        parts = urlsplit(url.strip())
    except ValueError as exc:  # e.g. an unbalanced "[" in the host
        raise FormatError(row, column, f"malformed URL: {exc}") from exc
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise FormatError(row, column, f"not an http(s) URL: {url[:200]!r}")
    return url


# ==========================================================================
# VisIT-Bench
# ==========================================================================

MAX_IMAGES = 10  # the largest VisIT-Bench instances (imagecode) have 10 images
CAPTION_PADDING = 10  # dense captions are padded with NaN to 10 entries

VISIT_SINGLE_COLUMNS = (
    "image_url",
    "image_dense_caption",
    "instruction_category",
    "instruction",
    "output_human_annotated",
)
VISIT_MULTI_COLUMNS = (
    "instruction_category",
    "images",
    "is_multiple_images",
    "instruction",
    "gpt4_prediction",
    "images_dense_captions",
    "images_blip2_captions",
    "reference_output",
    "human_ratings_gpt4_correct",
    "human_ratings_problem_in_caption",
    "human_ratings_problem_in_gpt4",
    "public_images_metadata",
)
_RATING_COLUMNS = (
    "human_ratings_gpt4_correct",
    "human_ratings_problem_in_caption",
    "human_ratings_problem_in_gpt4",
)

VisitFormat = Literal["single", "multi"]


@dataclass
class ImageRef:
    """One image of an instance.  Empty captions are ``None``."""

    url: str
    caption: str | None = None  # instruction-conditioned dense caption
    blip2_caption: str | None = None  # multi-image file only


@dataclass
class HumanVerification:
    """VisIT-Bench's human check of the GPT-4 candidate reference.

    In the multi-image file the three flags are mutually exclusive (at most
    one is true; 63/6/30 rows, plus one row where all three are false).
    """

    gpt4_correct: bool
    problem_in_caption: bool
    problem_in_gpt4: bool


@dataclass
class VisitRecord:
    category: str
    instruction: str
    images: list[ImageRef]
    reference_output: str | None  # blank in 30 multi-image rows (irfl_*, winogavil)
    candidate_reference: str | None = None  # gpt4_prediction
    human_verification: HumanVerification | None = None
    # Instance-level licence info as stored upstream ("{}" in every row of
    # the multi-image file; not per image).
    public_images_metadata: dict = field(default_factory=dict)


@dataclass
class VisitDataset:
    format: VisitFormat
    records: list[VisitRecord]


def detect_visit_format(header: list[str]) -> VisitFormat:
    """Tell the two VisIT-Bench CSV layouts apart by their header."""
    names = {h.strip() for h in header}
    if "image_url" in names:
        return "single"
    if "images" in names:
        return "multi"
    raise FormatError(1, None, "unrecognised header: expected 'image_url' (single) or 'images' (multi)")


def _parse_bool(value: str, row: int, column: str) -> bool:
    text = value.strip().lower()
    if text == "true":
        return True
    if text == "false":
        return False
    raise FormatError(row, column, f"expected True or False, got {value[:50]!r}")


def _parse_list(value: str, row: int, column: str) -> list:
    """Parse a JSON list; tolerate NaN (what pandas writes) and Python repr lists."""
    text = value.strip()
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        parsed = None
        if text.startswith("["):
            try:
                parsed = ast.literal_eval(text)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                parsed = None
    if not isinstance(parsed, list):
        raise FormatError(row, column, f"expected a JSON list, got {value[:80]!r}")
    return parsed


def _is_padding(item: Any) -> bool:
    return item is None or (isinstance(item, float) and math.isnan(item))


def _parse_captions(value: str, n_images: int, row: int, column: str) -> list[str | None]:
    """One caption per image; trailing NaN/None padding is dropped.

    Upstream pads ``images_dense_captions`` to 10 entries with ``NaN``.
    Blank captions become ``None``; an empty cell means no captions.
    """
    if not value.strip():
        return [None] * n_images
    items = _parse_list(value, row, column)
    while items and _is_padding(items[-1]):
        items.pop()
    if len(items) > n_images:
        raise FormatError(row, column, f"{len(items)} captions for {n_images} images")
    captions: list[str | None] = []
    for item in items:
        if _is_padding(item):
            captions.append(None)
        elif isinstance(item, str):
            captions.append(item if item.strip() else None)
        else:
            raise FormatError(row, column, f"caption must be text, got {item!r}")
    return captions + [None] * (n_images - len(captions))


def _required(row_values: dict[str, str], column: str, row: int) -> str:
    value = row_values[column]
    if not value.strip():
        raise FormatError(row, column, "must not be empty")
    return value


def _visit_single_row(v: dict[str, str], row: int) -> VisitRecord:
    url = _check_url(v["image_url"], row, "image_url")
    caption = v["image_dense_caption"]
    return VisitRecord(
        category=_required(v, "instruction_category", row),
        instruction=_required(v, "instruction", row),
        images=[ImageRef(url=url, caption=caption if caption.strip() else None)],
        reference_output=_required(v, "output_human_annotated", row),
    )


def _visit_multi_row(v: dict[str, str], row: int) -> VisitRecord:
    category = _required(v, "instruction_category", row)
    urls = _parse_list(v["images"], row, "images")
    if not urls:
        raise FormatError(row, "images", "no images")
    if len(urls) > MAX_IMAGES:
        raise FormatError(row, "images", f"{len(urls)} images; at most {MAX_IMAGES} allowed")
    urls = [_check_url(u, row, "images") for u in urls]
    multiple = _parse_bool(v["is_multiple_images"], row, "is_multiple_images")
    if multiple != (len(urls) > 1):
        raise FormatError(row, "is_multiple_images", f"says {multiple} but there are {len(urls)} images")
    instruction = _required(v, "instruction", row)
    dense = _parse_captions(v["images_dense_captions"], len(urls), row, "images_dense_captions")
    blip2 = _parse_captions(v["images_blip2_captions"], len(urls), row, "images_blip2_captions")

    ratings = [v[c] for c in _RATING_COLUMNS]
    verification = None
    if any(r.strip() for r in ratings):
        flags = [_parse_bool(r, row, c) for r, c in zip(ratings, _RATING_COLUMNS, strict=True)]
        verification = HumanVerification(*flags)

    metadata: dict = {}
    if v["public_images_metadata"].strip():
        try:
            metadata = json.loads(v["public_images_metadata"])
        except (ValueError, RecursionError):
            metadata = None  # type: ignore[assignment]
        if not isinstance(metadata, dict):
            raise FormatError(row, "public_images_metadata", "expected a JSON object")

    return VisitRecord(
        category=category,
        instruction=instruction,
        images=[ImageRef(u, d, b) for u, d, b in zip(urls, dense, blip2, strict=True)],
        reference_output=v["reference_output"] if v["reference_output"].strip() else None,
        candidate_reference=v["gpt4_prediction"] if v["gpt4_prediction"].strip() else None,
        human_verification=verification,
        public_images_metadata=metadata,
    )


def parse_visit_csv(source: Source) -> VisitDataset:
    """Parse either VisIT-Bench CSV layout (detected from the header).

    Extra columns are ignored; blank lines are skipped (but still counted in
    row numbers); text is kept verbatim (no stripping) so exports round-trip.
    """
    reader = csv.reader(io.StringIO(_read_text(source), newline=""))
    row_number = 0
    try:
        header = next(reader, None)
        row_number = 1
        if not header:
            raise FormatError(1, None, "empty file: no header row")
        fmt = detect_visit_format(header)
        names = [h.strip() for h in header]
        expected = VISIT_SINGLE_COLUMNS if fmt == "single" else VISIT_MULTI_COLUMNS
        for column in expected:
            if column not in names:
                raise FormatError(1, column, "missing column")
        if len(set(names)) != len(names):
            raise FormatError(1, None, "duplicate column names")
        parse_row = _visit_single_row if fmt == "single" else _visit_multi_row
        records = []
        for cells in reader:
            row_number += 1
            if not cells or all(not c.strip() for c in cells):
                continue
            if len(cells) != len(names):
                raise FormatError(row_number, None, f"{len(cells)} fields, header has {len(names)}")
            records.append(parse_row(dict(zip(names, cells, strict=True)), row_number))
    except csv.Error as exc:  # e.g. a field over csv.field_size_limit()
        raise FormatError(row_number + 1, None, f"malformed CSV: {exc}") from exc
    return VisitDataset(fmt, records)


def write_visit_csv(dataset: VisitDataset) -> str:
    """Write records back in ``dataset.format``; ``parse(write(d)) == d``.

    Mirrors upstream (NaN-padded dense captions, ``True``/``False`` flags)
    but always ends lines with ``\\r\\n``: with ``\\n`` Python's csv module
    would not quote a lone ``\\r`` inside a cell, breaking the row.  Raises
    ValueError for records the single-image layout cannot hold.
    """
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    if dataset.format == "single":
        writer.writerow(VISIT_SINGLE_COLUMNS)
        for r in dataset.records:
            if len(r.images) != 1 or r.candidate_reference or r.human_verification or r.public_images_metadata:
                raise ValueError("single-image CSV holds exactly one image and no GPT-4/rating fields")
            image = r.images[0]
            writer.writerow(
                [image.url, image.caption or "", r.category, r.instruction, r.reference_output or ""]
            )
        return out.getvalue()

    writer.writerow(VISIT_MULTI_COLUMNS)
    for r in dataset.records:
        dense: list = [i.caption for i in r.images]
        dense = [math.nan if c is None else c for c in dense]
        dense += [math.nan] * (CAPTION_PADDING - len(dense))
        hv = r.human_verification
        ratings = (
            [str(hv.gpt4_correct), str(hv.problem_in_caption), str(hv.problem_in_gpt4)] if hv else ["", "", ""]
        )
        writer.writerow(
            [
                r.category,
                json.dumps([i.url for i in r.images]),
                str(len(r.images) > 1),
                r.instruction,
                r.candidate_reference or "",
                json.dumps(dense),
                json.dumps([i.blip2_caption or "" for i in r.images]),
                r.reference_output or "",
                *ratings,
                json.dumps(r.public_images_metadata),
            ]
        )
    return out.getvalue()


def human_verification_rates(records: list[VisitRecord]) -> dict[str, float]:
    """Percentages as in VisIT-Bench Table 2, over records that were rated."""
    rated = [r.human_verification for r in records if r.human_verification is not None]
    if not rated:
        return {"gpt4_correct": 0.0, "problem_in_caption": 0.0, "problem_in_gpt4": 0.0, "n": 0}
    n = len(rated)
    return {
        "gpt4_correct": 100.0 * sum(h.gpt4_correct for h in rated) / n,
        "problem_in_caption": 100.0 * sum(h.problem_in_caption for h in rated) / n,
        "problem_in_gpt4": 100.0 * sum(h.problem_in_gpt4 for h in rated) / n,
        "n": n,
    }


# ==========================================================================
# ConvBench
# ==========================================================================

CONVBENCH_SHEET = "multi_turn_benchmark"
CONVBENCH_COLUMNS = (
    "ID",
    "image_id",
    "The_first_turn_instruction",
    "The_second_turn_instruction",
    "The_third_turn_instruction",
)
# The paper's hierarchy: turn 1 tests perception, 2 reasoning, 3 creation.
CONVBENCH_TURN_SKILLS = ("perception", "reasoning", "creation")


@dataclass
class ConvBenchRecord:
    """One three-turn conversation.

    The public xlsx holds only the instructions: no reference answers, focus
    points or task categories (the paper annotates them, the file does not).
    """

    id: int
    image_id: str  # a VisIT-Bench image file name
    turns: list[str]  # [perception, reasoning, creation] instructions
    image_path: Path | None = None  # set when the image exists in images_dir


@dataclass
class ConvBenchDataset:
    records: list[ConvBenchRecord]
    # image_ids with no file in images_dir (sorted, unique); empty when no
    # images_dir was given.
    missing_image_ids: list[str] = field(default_factory=list)


def _cell_text(value: Any, row: int, column: str) -> str:
    if isinstance(value, bool) or value is None:
        raise FormatError(row, column, "must not be empty" if value is None else "expected text")
    if isinstance(value, (int, float)):
        value = str(value)
    if not isinstance(value, str):
        raise FormatError(row, column, f"expected text, got {type(value).__name__}")
    if not value.strip():
        raise FormatError(row, column, "must not be empty")
    return value


def _cell_id(value: Any, row: int) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    elif isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise FormatError(row, "ID", f"expected a positive integer, got {value!r}")
    return value


def _safe_filename(image_id: str, row: int) -> str:
    """image_id is joined to a folder, so it must be a bare file name."""
    if "/" in image_id or "\\" in image_id or "\x00" in image_id or image_id.strip() in (".", ".."):
        raise FormatError(row, "image_id", f"not a plain file name: {image_id[:100]!r}")
    return image_id


def parse_convbench_xlsx(
    source: str | os.PathLike | bytes | IO[bytes], images_dir: str | os.PathLike | None = None
) -> ConvBenchDataset:
    """Parse the ConvBench workbook (openpyxl read-only).

    Found in the real file: 578 conversations with IDs 1..578 (the paper says
    577), 574 distinct images, 31 trailing empty rows, six unnamed trailing
    columns that are empty except for stray VisIT-Bench cells on the row of
    ID 526 (ignored: only the five named columns are read), and some
    instructions with leading/trailing whitespace (kept verbatim).
    Uses the ``multi_turn_benchmark`` sheet, or the only sheet if there is
    one.  ``source`` may be a path (str or Path), bytes or a binary file.
    """
    if isinstance(source, bytes):
        source = io.BytesIO(source)
    try:
        workbook = openpyxl.load_workbook(source, read_only=True, data_only=True)
    except Exception as exc:  # BadZipFile, InvalidFileException, XML errors, KeyError ...
        raise FormatError(1, None, f"not a readable .xlsx workbook: {exc}") from exc
    try:
        if CONVBENCH_SHEET in workbook.sheetnames:
            sheet = workbook[CONVBENCH_SHEET]
        elif len(workbook.sheetnames) == 1:
            sheet = workbook.worksheets[0]
        else:
            raise FormatError(1, None, f"no sheet named {CONVBENCH_SHEET!r}")
        sheet.reset_dimensions()  # don't trust the stored used-range
        rows = sheet.iter_rows(values_only=True)
        header = [str(h).strip() if h is not None else "" for h in next(rows, ())]
        for column in CONVBENCH_COLUMNS:
            if column not in header:
                raise FormatError(1, column, "missing column")
        index = {c: header.index(c) for c in CONVBENCH_COLUMNS}
        records: list[ConvBenchRecord] = []
        seen_ids: set[int] = set()
        for row_number, values in enumerate(rows, start=2):
            cells = {c: (values[i] if i < len(values) else None) for c, i in index.items()}
            if all(_is_blank(v) for v in cells.values()):
                continue
            record_id = _cell_id(cells["ID"], row_number)
            if record_id in seen_ids:
                raise FormatError(row_number, "ID", f"duplicate ID {record_id}")
            seen_ids.add(record_id)
            image_id = _safe_filename(_cell_text(cells["image_id"], row_number, "image_id"), row_number)
            turns = [_cell_text(cells[c], row_number, c) for c in CONVBENCH_COLUMNS[2:]]
            records.append(ConvBenchRecord(record_id, image_id, turns))
    finally:
        workbook.close()

    missing: set[str] = set()
    if images_dir is not None:
        folder = Path(images_dir)
        for record in records:
            path = folder / record.image_id
            if path.is_file():
                record.image_path = path
            else:
                missing.add(record.image_id)
    return ConvBenchDataset(records, sorted(missing))


def write_convbench_xlsx(records: list[ConvBenchRecord]) -> bytes:
    """Workbook with the same sheet and five named columns (image paths are not stored).

    Text is always stored as a string cell, so an instruction starting with
    "=" stays text instead of becoming a formula (which would both lose the
    text on re-import and be a formula-injection risk).  Control characters
    xlsx cannot store (e.g. ``\\x08``) are dropped; any other text round-trips
    exactly (cells over 32,767 chars are refused).
    """
    workbook = openpyxl.Workbook(write_only=True)
    sheet = workbook.create_sheet(CONVBENCH_SHEET)
    sheet.append(list(CONVBENCH_COLUMNS))

    def text_cell(text: str) -> WriteOnlyCell:
        cell = WriteOnlyCell(sheet, value=ILLEGAL_CHARACTERS_RE.sub("", text))
        cell.data_type = "s"
        return cell

    for r in records:
        if len(r.turns) != 3:
            raise ValueError(f"conversation {r.id} must have exactly 3 turns")
        cells = [r.image_id, *r.turns]
        if any(len(c) > 32767 for c in cells):
            raise ValueError(f"conversation {r.id}: a cell exceeds Excel's 32,767 characters")
        sheet.append([r.id, *(text_cell(c) for c in cells)])
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


# ==========================================================================
# Prometheus-Vision
# ==========================================================================

PROMETHEUS_TASK_DESCRIPTION = (
    "An instruction (might include an Input inside it), a response to evaluate, a reference answer "
    "that gets a score of 5, and a score rubric representing an evaluation criterion is given.\n"
    "1. Write a detailed feedback that assesses the quality of the response strictly based on the "
    "given score rubric, not evaluating in general.\n"
    "2. After writing a feedback, write a score that is an integer between 1 and 5. You should "
    "refer to the score rubric.\n"
    "3. The output format should look as follows: Feedback: (write a feedback for criteria) "
    "[RESULT] (an integer number between 1 and 5)\n"
    "4. Please do not generate any other opening, closing, and explanations."
)
# Exact section markers of the prompt (verified against all sample rows).
_TASK = "###Task Description:\n"
_INSTRUCTION = "\n\n###The instruction to evaluate:\n"
_RESPONSE = "\n\n###Response to evaluate:\n"
_REFERENCE = "\n\n###Reference Answer (Score 5):\n"
_RUBRIC = "\n\n###Score Rubrics:\n"
_FEEDBACK = "\n\n###Feedback:"
_ORIG_FIELDS = (
    "orig_instruction",
    "original_response",
    "orig_reference_answer",
    "orig_criteria",
    *(f"orig_score{i}_description" for i in range(1, 6)),
)


@dataclass
class Rubric:
    criteria: str
    score_descriptions: list[str]  # index 0 is "Score 1", index 4 is "Score 5"


@dataclass
class PrometheusRecord:
    image: str
    instruction: str
    response: str
    reference_answer: str
    rubric: Rubric
    task_description: str = PROMETHEUS_TASK_DESCRIPTION
    extra: dict = field(default_factory=dict)  # unknown keys, kept for export


def build_prometheus_prompt(record: PrometheusRecord) -> str:
    """The exact rubric prompt Prometheus-Vision feeds its judge."""
    scores = "".join(f"\nScore {i}: {d}" for i, d in enumerate(record.rubric.score_descriptions, start=1))
    return (
        f"{_TASK}{record.task_description}{_INSTRUCTION}{record.instruction}"
        f"{_RESPONSE}{record.response}{_REFERENCE}{record.reference_answer}"
        f"{_RUBRIC}{record.rubric.criteria}{scores}{_FEEDBACK}"
    )


def _parse_rubric(text: str, row: int) -> Rubric:
    """``criteria\\nScore 1: ...\\nScore 2: ...`` through ``Score 5``."""
    positions = []
    start = 0
    for score in range(1, 6):
        marker = f"\nScore {score}: "
        pos = text.find(marker, start)
        if pos < 0:
            raise FormatError(row, "instruction", f"score rubric lacks 'Score {score}:'")
        positions.append((pos, pos + len(marker)))
        start = pos + len(marker)
    criteria = text[: positions[0][0]]
    ends = [p for p, _ in positions[1:]] + [len(text)]
    descriptions = [text[body:end] for (_, body), end in zip(positions, ends, strict=True)]
    if "\nScore " in descriptions[-1]:
        raise FormatError(row, "instruction", "score rubric has scores beyond 5")
    if not criteria.strip():
        raise FormatError(row, "instruction", "score rubric has no criteria")
    for score, description in enumerate(descriptions, start=1):
        if not description.strip():
            raise FormatError(row, "instruction", f"'Score {score}' has no description")
    return Rubric(criteria, descriptions)


def split_prometheus_prompt(prompt: str, row: int = 1) -> tuple[str, str, str, str, Rubric]:
    """Split a rubric prompt into (task description, instruction, response, reference, rubric).

    Sections are cut at the first instruction/response markers and at the
    last reference/rubric markers, so a model response that happens to
    contain marker text still ends up in ``response``.
    """
    if not prompt.startswith(_TASK) or not prompt.endswith(_FEEDBACK):
        raise FormatError(row, "instruction", "not a Prometheus rubric prompt (missing '###Task Description:' or '###Feedback:')")
    body = prompt[len(_TASK) : -len(_FEEDBACK)]
    i_ins = body.find(_INSTRUCTION)
    i_resp = body.find(_RESPONSE, i_ins + 1) if i_ins >= 0 else -1
    i_rub = body.rfind(_RUBRIC)
    i_ref = body.rfind(_REFERENCE, 0, i_rub) if i_rub >= 0 else -1
    for index, name in ((i_ins, "instruction to evaluate"), (i_resp, "Response to evaluate"),
                        (i_ref, "Reference Answer (Score 5)"), (i_rub, "Score Rubrics")):
        if index < 0:
            raise FormatError(row, "instruction", f"missing section '###{name}:'")
    if not i_ins < i_resp < i_ref < i_rub:
        raise FormatError(row, "instruction", "sections are out of order")
    task = body[:i_ins]
    instruction = body[i_ins + len(_INSTRUCTION) : i_resp]
    response = body[i_resp + len(_RESPONSE) : i_ref]
    reference = body[i_ref + len(_REFERENCE) : i_rub]
    rubric = _parse_rubric(body[i_rub + len(_RUBRIC) :], row)
    if not instruction.strip():
        raise FormatError(row, "instruction", "the instruction to evaluate is empty")
    if not reference.strip():
        raise FormatError(row, "instruction", "the reference answer is empty")
    return task, instruction, response, reference, rubric


def parse_prometheus_jsonl(source: Source) -> list[PrometheusRecord]:
    """Parse Prometheus-Vision eval rows, splitting the ``instruction`` prompt.

    When the ``orig_*`` copies of the parts are present they must equal what
    was split out of the prompt (a cheap integrity check).  Row numbers are
    line numbers; blank lines are skipped.
    """
    records = []
    # split("\n"), not splitlines(): JSON strings may hold U+2028 and friends.
    for row, line in enumerate(_read_text(source).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise FormatError(row, None, f"invalid JSON: {exc}") from exc
        if not isinstance(obj, dict):
            raise FormatError(row, None, "expected a JSON object")
        for key in ("image", "instruction"):
            if not isinstance(obj.get(key), str) or not obj[key].strip():
                raise FormatError(row, key, "missing or not a non-empty string")
        task, instruction, response, reference, rubric = split_prometheus_prompt(obj["instruction"], row)
        record = PrometheusRecord(
            image=obj["image"],
            instruction=instruction,
            response=response,
            reference_answer=reference,
            rubric=rubric,
            task_description=task,
            extra={k: v for k, v in obj.items() if k not in ("image", "instruction", *_ORIG_FIELDS)},
        )
        for key, value in _orig_fields(record).items():
            if key in obj and obj[key] != value:
                raise FormatError(row, key, "disagrees with the section in 'instruction'")
        records.append(record)
    return records


def _orig_fields(record: PrometheusRecord) -> dict[str, str]:
    values = [record.instruction, record.response, record.reference_answer, record.rubric.criteria,
              *record.rubric.score_descriptions]
    return dict(zip(_ORIG_FIELDS, values, strict=True))


def write_prometheus_jsonl(records: list[PrometheusRecord]) -> str:
    """JSONL in upstream's key order, with the prompt reassembled."""
    lines = []
    for r in records:
        if len(r.rubric.score_descriptions) != 5:
            raise ValueError("a rubric needs exactly 5 score descriptions")
        obj = {"image": r.image, "instruction": build_prometheus_prompt(r), **_orig_fields(r), **r.extra}
        lines.append(json.dumps(obj))
    return "\n".join(lines) + ("\n" if lines else "")
