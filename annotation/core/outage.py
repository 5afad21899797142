"""A database outage answers 503 "try again" instead of a bare 500.

When PostgreSQL restarts or fails over, any request that touches it raises ``OperationalError``
(connection refused, connection terminated by the server) or ``InterfaceError`` (connection
already closed). That is temporary and the client should retry: a 503 with ``Retry-After`` says
so, to browsers, load balancers and API clients alike. The request's open transaction died with
its connection; a submission that did commit just before the failure is stored once, and
submitting again is idempotent. The body is a fixed string: rendering a template could query
the database again.
"""
import logging

from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5
MESSAGE = ("The service cannot reach its database right now. Please try again in a few "
           "seconds; submitting the same answer again is safe (it is recorded once).")
PAGE = ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<title>Temporarily unavailable</title></head><body><h1>Temporarily unavailable</h1>"
        f"<p>{MESSAGE}</p></body></html>")


class DatabaseUnavailableMiddleware:
    """Turns a view's database-connection error into a 503 (listed last, so it sees the
    exception first)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, (OperationalError, InterfaceError)):
            return None
        first_line = (str(exception).strip().splitlines() or [repr(exception)])[0]
        logger.warning("database unavailable (%s %s): %s", request.method, request.path,
                       first_line)
        if request.path.startswith("/api/"):
            response = JsonResponse({"detail": MESSAGE}, status=503)
        else:
            response = HttpResponse(PAGE, status=503, content_type="text/html; charset=utf-8")
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        response["Cache-Control"] = "no-store"
        return response
