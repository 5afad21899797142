"""The check every study page and API route makes: the study in the URL, if the user may.

A non-member gets a 404 — the same answer as for a study that does not exist — never a 403
naming it. Anonymous visitors are sent to sign in on member pages (they may be members), and
get the 404 on a private study's public board.
"""
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.http import Http404
from rest_framework.permissions import BasePermission

from .selectors import study_for_user

VIEW, VIEW_BOARD, ANALYZE, SUBMIT, MANAGE = (
    "studies.view", "studies.view_board", "studies.analyze", "studies.submit", "studies.manage")


def study_page(permission: str = VIEW):
    """Decorates ``view(request, study, …)`` for the URL ``…/<slug:study_slug>/…``."""
    def decorator(view):
        @wraps(view)
        def wrapped(request, study_slug, *args, **kwargs):
            try:
                study = study_for_user(study_slug, request.user, permission)
            except Http404:
                if not request.user.is_authenticated and permission != VIEW_BOARD:
                    return redirect_to_login(request.get_full_path())
                raise
            request.study = study  # the header's switcher (studies.context_processors)
            return view(request, study, *args, **kwargs)

        wrapped.required_role = f"study:{permission}"
        return wrapped
    return decorator


def study_or_default(permission: str, default_check):
    """Decorates ``view(request, study, …)`` served twice: under ``/s/<slug>/…`` for the
    study in the URL (``study_page(permission)``), and at its old URL for the default study
    behind ``default_check`` (the deployment-wide role decorator it always had)."""
    def decorator(view):
        in_study = study_page(permission)(view)

        @wraps(view)
        def in_default(request, *args, **kwargs):
            from .selectors import study_default

            return view(request, study_default(), *args, **kwargs)

        old = default_check(in_default)

        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if "study_slug" in kwargs:
                return in_study(request, kwargs.pop("study_slug"), *args, **kwargs)
            return old(request, *args, **kwargs)

        wrapped.required_role = f"{old.required_role}|study:{permission}"
        return wrapped
    return decorator


class StudyPermission(BasePermission):
    """API routes under ``/api/studies/<slug>/``: the study in the URL if the user holds
    ``permission`` there; everyone else (anonymous included) the 404 of a missing study. The
    study is left on the request for the view."""

    permission = VIEW

    def has_permission(self, request, view) -> bool:
        # ``studies.api.StudyScopedMixin`` takes the slug out of the kwargs (``study_slug``).
        slug = getattr(view, "study_slug", None) or view.kwargs["study_slug"]
        request.study = study_for_user(slug, request.user, self.permission)
        return True


class StudyBoardReader(StudyPermission):
    """A board: anyone for a public study, members for a private one."""

    permission = VIEW_BOARD


class StudySubmitter(StudyPermission):
    """The study's submitters (staff too)."""

    permission = SUBMIT
