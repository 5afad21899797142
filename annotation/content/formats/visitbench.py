"""VisIT-Bench single-image and multi-image CSVs: records, parser, writer, verification rates."""

from __future__ import annotations

import ast
import csv
import io
import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal

from annotation.content.formats.common import FormatError, Source, _check_url, _read_text
from annotation.core.csv_safety import SafeWriter, unescape_cell

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
    row numbers); text is kept verbatim (no stripping) so exports round-trip,
    except the apostrophe ``write_visit_csv`` puts before formula-like text.
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
            cells = [unescape_cell(c) for c in cells]  # what write_visit_csv escaped
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

    Formula-like text (an instruction or answer starting with ``=``, ``-``, …)
    gets a leading apostrophe so a spreadsheet never runs it (``csv_safety``;
    the parser removes it). The authors' released files hold no such cell, so
    they still read and write back byte for byte; their own pandas scripts
    would keep the apostrophe in such a cell of a file we exported.
    """
    out = io.StringIO()
    writer = SafeWriter(out, lineterminator="\r\n")
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
