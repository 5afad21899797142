"""Links between a study's pages: one view and one template serve a page at its old URL
(the default study) and under ``/s/<slug>/``; a link or redirect stays where the request is.

An old URL name (``console:batch``) maps to its study twin (``study_console:batch``), whose
first argument is the study's slug. A name outside the map reverses as usual.
"""
from django.shortcuts import redirect
from django.urls import reverse

STUDY_NAMESPACES = {
    "console": "study_console",
    "judging:judges": "study_judges",
    "agreement": "study_reports",
    "review": "study_review",
}


def current_study_slug(request) -> str | None:
    """The slug in the URL being served, if it is a study page."""
    match = getattr(request, "resolver_match", None)
    return match.kwargs.get("study_slug") if match is not None else None


def study_reverse(request, name: str, *args) -> str:
    slug = current_study_slug(request) if request is not None else None
    namespace, _, short = name.rpartition(":")
    if slug is None or namespace not in STUDY_NAMESPACES:
        return reverse(name, args=args)
    return reverse(f"{STUDY_NAMESPACES[namespace]}:{short}", args=(slug, *args))


def study_redirect(request, name: str, *args):
    return redirect(study_reverse(request, name, *args))
