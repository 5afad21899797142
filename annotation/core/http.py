"""Reading a query or form value that a page then looks up in the database.

Django decodes every parameter (bytes that are not UTF-8 become U+FFFD), but a value may still
hold what no text column can: a NUL, which PostgreSQL refuses in any query parameter (a 500
there, a silent miss on SQLite). ``request_text`` answers such a value, and one longer than the
column it is compared with, with a 400 before it reaches the ORM, the same on both databases.
The API does the same with DRF's ``ValidationError`` (``judging.api._params``); JSON values are
checked by ``annotation.core.db_text.storage_problem`` where they are stored.
"""
from __future__ import annotations

from django.core.exceptions import BadRequest

from annotation.core.db_text import storage_problem


def request_text(params, name: str, default: str = "", *, max_length: int) -> str:
    """``params[name]`` (``request.GET`` or ``request.POST``), or ``default``; a 400
    (``BadRequest``) if no column could hold it or it is longer than ``max_length``."""
    value = params.get(name, default)
    problem = storage_problem(value) or (
        f"longer than {max_length} characters" if len(value) > max_length else None)
    if problem is not None:
        raise BadRequest(f"{name}: {problem}")
    return value
