"""Roles and the permission checks every URL declares.

Roles: admin (staff), analyst (group ``analyst``), annotator (group ``annotator``, or a
marketplace worker holding a signed assignment token), submitter (group ``submitter``: may
submit a new model's predictions for automatic judging). Views use the decorators, the API the
DRF classes; nothing is left to a default.
"""
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from rest_framework.permissions import BasePermission

ANNOTATOR, ANALYST, SUBMITTER = "annotator", "analyst", "submitter"
# Attributes the auth backend (annotation.core.auth_backend) sets when it loads the user with roles.
ROLE_FLAGS = {ANNOTATOR: "_role_annotator", ANALYST: "_role_analyst",
              SUBMITTER: "_role_submitter"}


def user_roles(user) -> set[str]:
    """The user's roles, computed once per request (cached on the user object)."""
    if not user.is_authenticated:
        return set()
    cached = getattr(user, "_vlmeval_roles", None)
    if cached is not None:
        return cached
    flags = {role: getattr(user, attr, None) for role, attr in ROLE_FLAGS.items()}
    if None in flags.values():  # loaded without the role flags (another backend, a test user)
        roles = set(user.groups.values_list("name", flat=True)) & set(ROLE_FLAGS)
    else:
        roles = {role for role, member in flags.items() if member}
    if user.is_staff:
        roles |= {"admin", ANALYST}
    user._vlmeval_roles = roles
    return roles


def _role_required(role: str, *also: str):
    """Signed in and holding ``role`` (or one of ``also``)."""
    roles = {role, *also}

    def decorator(view):
        @login_required
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not roles & user_roles(request.user):
                raise PermissionDenied(f"This page needs the {' or '.join(sorted(roles))} role.")
            return view(request, *args, **kwargs)

        wrapped.required_role = "|".join(sorted(roles))
        return wrapped

    return decorator


annotator_required = _role_required(ANNOTATOR)
analyst_required = _role_required(ANALYST)
submitter_required = _role_required(SUBMITTER)
admin_required = _role_required("admin")
# The benchmark kit: what submitters answer and analysts read (admins are analysts too).
kit_reader_required = _role_required(SUBMITTER, ANALYST)


def signed_in_required(view):
    """Any signed-in user, whatever their roles (one's own profile)."""
    wrapped = login_required(view)
    wrapped.required_role = "signed-in"
    return wrapped


def public(view):
    """Marks a view as deliberately open (its own checks, e.g. a signed token, apply)."""
    view.required_role = "public"
    return view


class IsAdmin(BasePermission):
    def has_permission(self, request, view) -> bool:
        return bool(request.user and request.user.is_authenticated and request.user.is_staff)


class IsAnalyst(BasePermission):
    def has_permission(self, request, view) -> bool:
        return ANALYST in user_roles(request.user)


class IsSubmitter(BasePermission):
    def has_permission(self, request, view) -> bool:
        return SUBMITTER in user_roles(request.user)


class IsKitReader(BasePermission):
    """Submitters and analysts (admins included): the benchmark kit."""

    def has_permission(self, request, view) -> bool:
        return bool({SUBMITTER, ANALYST} & user_roles(request.user))


class IsAnnotator(BasePermission):
    def has_permission(self, request, view) -> bool:
        return ANNOTATOR in user_roles(request.user)
