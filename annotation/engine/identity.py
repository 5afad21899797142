"""Who is asking: a logged-in annotator, or a marketplace worker holding a signed token.

Marketplace task pages live in a third-party iframe where our session cookie may be blocked,
so each assignment carries its own signed token instead of the login session.
"""
from django.core import signing

from annotation.core.permissions import ANNOTATOR, user_roles
from annotation.models import Assignment

_SALT = "annotation.assignment"
_MAX_AGE = 7 * 24 * 3600


def assignment_token(assignment: Assignment) -> str:
    return signing.dumps(str(assignment.uuid), salt=_SALT, compress=True)


def token_matches(token: str, assignment: Assignment) -> bool:
    try:
        return signing.loads(token, salt=_SALT, max_age=_MAX_AGE) == str(assignment.uuid)
    except signing.BadSignature:
        return False


def request_owns(request, assignment: Assignment) -> bool:
    """True when the requester is the assignment's worker (token or own account)."""
    token = request.POST.get("t") or request.GET.get("t")
    if token:
        return token_matches(token, assignment)
    if ANNOTATOR in user_roles(request.user):
        return assignment.worker.user_id == request.user.pk
    return False
