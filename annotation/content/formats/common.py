"""Shared by every format: FormatError, the Source type, text reading and cell/URL checks."""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Any

from annotation.core.row_checks import url_problem as image_url_problem  # the one URL rule


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
    if (problem := image_url_problem(url)) is not None:
        raise FormatError(row, column, problem)
    return url
