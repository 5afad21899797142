"""Every CSV the platform writes goes through here, so no cell runs as a spreadsheet formula.

A text cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read by
Excel, LibreOffice and Google Sheets as a formula (``=HYPERLINK(…)``, ``@SUM(…)``, DDE
payloads) when an analyst opens the file. Model names, worker ids, instructions and answers
come from people outside the project, so such a cell gets one leading apostrophe (OWASP's
advice on CSV injection; spreadsheets show the text without it). Numbers stay numbers: ints,
floats and Decimals are never touched, and neither is a text that is just a number
(``-0.25``, ``+3``, ``-1e-05``, ``-inf``), which a spreadsheet reads as that number.

The escape is reversible, so our exports still round-trip through our importers, which call
``unescape_cell`` on every CSV cell they read. A cell is *formula-like* when, after any leading
apostrophes, it starts with a trigger and is not a plain number; writing prefixes one
apostrophe to a formula-like cell and reading removes one from a formula-like cell that starts
with an apostrophe. Hence ``read(write(x)) == x`` for every text, and a file we wrote reads back
and writes out byte for byte. The one cell that does not survive byte for byte is a *raw*
formula-like cell in a file written elsewhere: it imports unchanged and is exported escaped
(the released VisIT-Bench files hold none).
"""
from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
ESCAPE = "'"
_PLAIN_NUMBER = re.compile(
    r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|infinity|nan)", re.IGNORECASE)


def _formula_like(text: str) -> bool:
    core = text.lstrip(ESCAPE)
    return core[:1] in TRIGGERS and _PLAIN_NUMBER.fullmatch(core) is None


def safe_cell(value: Any) -> Any:
    """The value as a CSV cell no spreadsheet evaluates; anything but text passes through."""
    if isinstance(value, str) and _formula_like(value):
        return ESCAPE + value
    return value


def unescape_cell(value: Any) -> Any:
    """Undo ``safe_cell``: importers call this on every CSV cell they read."""
    if isinstance(value, str) and value.startswith(ESCAPE) and _formula_like(value):
        return value[1:]
    return value


def unescape_row(row: Mapping[Any, Any]) -> dict[Any, Any]:
    return {k: unescape_cell(v) for k, v in row.items()}


class SafeWriter:
    """``csv.writer`` whose every cell goes through ``safe_cell``."""

    def __init__(self, out, **kwargs):
        self._writer = csv.writer(out, **kwargs)

    def writerow(self, row: Iterable[Any]):
        return self._writer.writerow([safe_cell(v) for v in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


class SafeDictWriter:
    """``csv.DictWriter`` whose header and every cell go through ``safe_cell``."""

    def __init__(self, out, fieldnames: Sequence[str], **kwargs):
        self._writer = csv.DictWriter(out, fieldnames, **kwargs)
        self.fieldnames = self._writer.fieldnames

    def writeheader(self):
        return self._writer.writerow({f: safe_cell(f) for f in self.fieldnames})

    def writerow(self, row: Mapping[str, Any]):
        return self._writer.writerow({k: safe_cell(v) for k, v in row.items()})

    def writerows(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            self.writerow(row)
