"""The one set of field checks every importer runs on every row, and the one way a row the
database still refuses becomes a refusal naming it.

The checks are those of the forms and the API, stated once:

- **storable** (``db_text.storage_problem``): no NUL, no lone surrogate, no NaN/Infinity,
  keys of JSON values included — what PostgreSQL (or any UTF-8 database) cannot hold;
- **no control characters in a name or label** (a ``CharField``: model, annotator, source,
  family, external id, …) but tab, line feed and carriage return — MTurk's rule for text a
  worker reads, which a review reason and a submission's model name follow; free text (a
  ``TextField``: responses, instructions, feedback) may hold what a model printed or a
  worker pasted, as the forms accept it and every page escapes it;
- **fits the column**: no longer than the field's ``max_length`` (SQLite would store a longer
  value silently, PostgreSQL refuses it with a traceback);
- **a URL is an http(s) URL with a host** (``url_problem``): never ``javascript:``,
  ``file:``, ``data:`` or a bare path, since pages put it in ``<img src>``.

``database_refusal`` wraps an import's writes for one row: an ``IntegrityError`` (a duplicate
of a stored row, a broken constraint) or a ``DataError`` the checks did not foresee becomes the
importer's own refusal naming that row. It re-raises, so the import's atomic block rolls back:
all or nothing, never a traceback.
"""
from __future__ import annotations

import contextlib
import datetime
import functools
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from django.db import DataError, IntegrityError, models

from annotation.core.db_text import storage_problem

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")  # ASCII controls but \t \n \r


def url_problem(url: Any) -> str | None:
    """Why ``url`` cannot be stored as an image URL, or None: an http(s) URL with a host."""
    if not isinstance(url, str) or not url.strip():
        return f"image URL must be a non-empty string, got {url!r}"
    try:
        parts = urlsplit(url.strip())
    except ValueError as exc:  # e.g. an unbalanced "[" in the host
        return f"malformed URL: {exc}"
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return f"not an http(s) URL: {url[:200]!r}"
    return storage_problem(url)


def control_problem(text: str) -> str | None:
    """A control character other than tab, line feed and carriage return."""
    return "contains a control character" if _CONTROL.search(text) else None


def text_problem(text: Any, *, max_length: int | None = None, label: bool = False) -> str | None:
    """Why ``text`` cannot be stored as one text value (see the module docstring), or None;
    a ``label`` (a name, an id) may not hold control characters."""
    if (problem := storage_problem(text)) is not None:
        return problem
    if not isinstance(text, str):
        return None
    if label and (problem := control_problem(text)) is not None:
        return problem
    if max_length is not None and len(text) > max_length:
        return f"is {len(text):,} characters long, at most {max_length:,}"
    return None


# Values no column refuses (a float may be NaN, a dict may hide a NUL: those are checked).
_PLAIN = (int, datetime.date, datetime.time, uuid.UUID)


def _kind(field: models.Field) -> str:
    if isinstance(field, models.URLField):
        return "url"
    if isinstance(field, models.CharField):
        return "label"
    return "text" if isinstance(field, models.TextField) else "value"


def _problem(kind: str, max_length: int | None, value: Any) -> str | None:
    if isinstance(value, str):
        if kind == "url" and value and (problem := url_problem(value)) is not None:
            return problem
        if kind == "value":
            return storage_problem(value)
        return text_problem(value, max_length=max_length, label=kind != "text")
    if value is None or isinstance(value, _PLAIN):
        return None
    return storage_problem(value)


def value_problem(field: models.Field, value: Any) -> str | None:
    """Why ``value`` cannot be stored in ``field``, or None."""
    return _problem(_kind(field), field.max_length, value)


def field_problem(model: type[models.Model], name: str, value: Any) -> str | None:
    """Why ``model``'s field ``name`` cannot hold ``value``, or None (a file's column may
    bear another name than the field it fills: the caller names it)."""
    return value_problem(model._meta.get_field(name), value)


def row_problem(model: type[models.Model], values: Mapping[str, Any]) -> str | None:
    """``"<field>: <problem>"`` for the first value of ``values`` (field name → value) that
    ``model``'s field cannot hold, or None."""
    for name, value in values.items():
        if (problem := field_problem(model, name, value)) is not None:
            return f"{name}: {problem}"
    return None


@functools.cache
def _columns(model: type[models.Model]) -> tuple[tuple[str, str, int | None, str], ...]:
    """(name, attname, max_length, kind) of the model's own columns, worked out once."""
    return tuple((f.name, f.attname, f.max_length, _kind(f))
                 for f in model._meta.concrete_fields if not f.is_relation)


def object_problem(obj: models.Model) -> str | None:
    """``row_problem`` over every column of an unsaved ``obj`` (its own, not its keys)."""
    for name, attname, max_length, kind in _columns(type(obj)):
        if (problem := _problem(kind, max_length, getattr(obj, attname))) is not None:
            return f"{name}: {problem}"
    return None


def database_message(exc: Exception) -> str:
    """The database's reason in one line (drivers add DETAIL lines and SQL context)."""
    text = " ".join(str(exc).split())
    return text[:300] or type(exc).__name__


@contextlib.contextmanager
def database_refusal(where: str, refusal: Callable[[str], Exception]) -> Iterator[None]:
    """Run one row's writes; a row the database refuses raises ``refusal("<where>: …")``."""
    try:
        yield
    except (IntegrityError, DataError) as exc:
        raise refusal(f"{where}: the database refused it ({database_message(exc)})") from exc
