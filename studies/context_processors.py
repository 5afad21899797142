"""The header's study switcher: on a study's pages (once ``study_page`` let the user in), the
study being served and, read only if the header shows them, the studies the user may open."""
from django.utils.functional import SimpleLazyObject

from .selectors import studies_visible_to


def current_study(request):
    study = getattr(request, "study", None)
    if study is None:
        return {}
    return {"current_study": study,
            "study_switcher": SimpleLazyObject(lambda: studies_visible_to(request.user))}
