"""ConvBench three-turn conversations: the xlsx parser and writer."""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

# openpyxl (and the NumPy it pulls in) is imported where a workbook is read or written: every
# web worker imports this module through the admin, and only an import ever needs it.
from annotation.content.formats.common import FormatError, _is_blank

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
    import openpyxl

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
    import openpyxl
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

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
