"""Reads of studies: which one a URL or a command names, and which a user may see."""
from django.http import Http404

from . import rules as study_rules
from .models import Study


class UnknownStudy(LookupError):
    pass


def study_default() -> Study:
    from .models import default_study_id

    return Study.objects.get(pk=default_study_id())


def study_for_user(slug: str, user, permission: str = "studies.view") -> Study:
    """The study at ``slug`` if ``user`` may do ``permission`` there, else a 404: a
    non-member learns nothing, not even that the study exists (no 403 with its name)."""
    study = Study.objects.filter(slug=slug).first()
    if study is None or not study_rules.rules.test_rule(permission, user, study):
        raise Http404("No such study")
    return study


def studies_visible_to(user) -> list[Study]:
    """The studies the header's switcher lists: every study for staff, else the user's."""
    if not user.is_authenticated:
        return []
    if user.is_staff:
        return list(Study.objects.all())
    return [s for s in Study.objects.all() if study_rules.study_roles(user, s)]


def study_for_command(slug: str | None) -> Study:
    """The study a management command acts on: ``--study`` if given, else the only one;
    with several and none named, an error that lists them."""
    if slug:
        study = Study.objects.filter(slug=slug).first()
        if study is None:
            raise UnknownStudy(f"No study {slug!r}. Studies: {_slugs()}")
        return study
    studies = list(Study.objects.all()[:2])
    if len(studies) == 1:
        return studies[0]
    if not studies:
        return study_default()
    raise UnknownStudy(f"Several studies exist; name one with --study: {_slugs()}")


def _slugs() -> str:
    return ", ".join(Study.objects.order_by("slug").values_list("slug", flat=True))
