"""REST framework plumbing every app's API uses (set in ``REST_FRAMEWORK``): bounded pages and
a JSON parser with a nesting limit.

Pages: ``?limit=`` (default ``PAGE_SIZE``, at most ``MAX_PAGE_SIZE``) and ``?offset=``. Paging
values are clamped, never refused: a limit above the maximum is the maximum; a limit that is
not a positive integer (``abc``, ``-1``, ``0``, 5,000 digits) is the default; an offset that is
not a non-negative integer is 0; an offset past the end is an empty page. The ``next`` link
carries on from there.

JSON bodies: nested deeper than ``MAX_JSON_DEPTH`` arrays/objects are a 400, like any other
malformed body, so no code after the parser (serializers, ``storage_problem``, ``json.dumps``
into a jsonb column) can recurse past Python's limit; the parser itself would otherwise raise
``RecursionError`` (a 500) on a body like ``[[[[…]]]]`` 10,000 deep.

Errors: a start refused by the job caps (``core.jobs.JobsBusy``) is a 429 with ``Retry-After``.
"""
from __future__ import annotations

from rest_framework import pagination, parsers
from rest_framework.exceptions import ParseError, Throttled

from .jobs import JobsBusy

MAX_PAGE_SIZE = 1000
MAX_JSON_DEPTH = 50  # storage_problem (annotation.core.db_text) checks as deep


class LimitOffsetPagination(pagination.LimitOffsetPagination):
    max_limit = MAX_PAGE_SIZE

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.limit_query_param:
                parameter["description"] = (f"Number of results to return per page (at most "
                                            f"{MAX_PAGE_SIZE}; larger values are clamped).")
                parameter["schema"]["maximum"] = MAX_PAGE_SIZE
        return parameters


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        refusal = f"JSON parse error - nested deeper than {MAX_JSON_DEPTH} levels"
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:  # deeper than the interpreter's own limit
            raise ParseError(refusal) from None
        if too_deep(data, MAX_JSON_DEPTH):
            raise ParseError(refusal)
        return data


def too_deep(value, limit: int) -> bool:
    """Whether arrays/objects nest more than ``limit`` levels (iteratively: no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in item)
    return False


def exception_handler(exc, context):
    """DRF's handler, plus: too many jobs queued -> 429 with Retry-After and the reason."""
    # Imported here: rest_framework.views reads the API settings when it loads, and they name
    # this module's parser and paginator (a top-level import made importing this module first,
    # as a management command's checks do, a circular ImportError).
    from rest_framework import views

    if isinstance(exc, JobsBusy):
        exc = Throttled(wait=exc.retry_after, detail=exc.message)
    return views.exception_handler(exc, context)
