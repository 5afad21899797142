"""What every marketplace's arrival pages share: ids read from the query string, refusals
and "nothing left" pages the marketplace may frame, and the hand-over to the engine's task
page.

Only what this deployment published is accepted (each marketplace's arrival service checks
it); anything else is refused and writes nothing (no worker row, no lease), so a task uuid
seen elsewhere cannot be turned into votes under invented worker ids. Every page of an arrival
flow may be framed by the marketplace, refusals included.
"""
import re

from django.shortcuts import redirect, render

from annotation.core.middleware import allow_marketplace_framing
from annotation.engine.views import external_query

# Marketplace ids are short alphanumeric strings (MTurk: A1B2…; Prolific: 24 hex digits).
MARKETPLACE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


def framed(response):
    return allow_marketplace_framing(response)


def refused(request, batch, reason, status=403):
    return framed(render(request, "annotation/not_eligible.html",
                         {"batch": batch, "reason": reason}, status=status))


def marketplace_id(value: str) -> str | None:
    value = value.strip()
    return value if MARKETPLACE_ID.fullmatch(value) else None


def arrived(request, batch, assignment):
    """The claimed assignment's task page (with its token), or the batch's "nothing left"
    page when the claim found no slot (``assignment`` None)."""
    if assignment is None:
        return framed(render(request, "annotation/batch_done.html", {"batch": batch},
                             status=409))
    url = redirect("annotation:assignment", assignment_uuid=assignment.uuid).url
    return redirect(f"{url}?{external_query(assignment)}")
