"""The deployment's API viewsets served a second time under ``/api/studies/<slug>/``.

One mixin, so every such route makes the same three moves: it answers only a study role
(django-rules, ``studies/rules.py``; anyone else, anonymous included, gets the 404 of a missing
study), it reads only the study's rows (another study's object is a 404), and what it creates
belongs to the study. At the old URL the view keeps its deployment-wide role check and serves
what it always served.
"""
from .access import ANALYZE, StudyPermission
from .models import default_study_id


class StudyRole(StudyPermission):
    """``StudyPermission`` for the role an action needs (``StudyScopedMixin`` picks it)."""

    def __init__(self, permission: str):
        self.permission = permission


class StudyScopedMixin:
    """Put before the DRF base class. ``study_permission``: the role every study route needs;
    ``study_action_permissions``: a stricter one per action (e.g. cancelling a run).
    ``old_route_study``: "default" if the old URL reads the default study's rows, "all" if it
    reads every study's (as it did before studies)."""

    study_permission = ANALYZE
    study_action_permissions: dict[str, str] = {}
    old_route_study = "default"
    study_slug: str | None = None

    def dispatch(self, request, *args, **kwargs):
        # Taken out of the kwargs so the handlers keep their old signatures.
        self.study_slug = kwargs.pop("study_slug", None)
        return super().dispatch(request, *args, **kwargs)

    @property
    def in_study(self) -> bool:
        return self.study_slug is not None

    @property
    def study(self):
        """The study of the URL; None at the old URL (the services' default study)."""
        return self.request.study if self.in_study else None

    def get_permissions(self):
        if not self.in_study:
            return super().get_permissions()
        action = getattr(self, "action", None)
        return [StudyRole(self.study_action_permissions.get(action, self.study_permission))]

    def get_queryset(self):
        queryset = super().get_queryset()
        if self.in_study:
            return queryset.filter(study=self.request.study)
        if self.old_route_study == "default":
            return queryset.filter(study_id=default_study_id())
        return queryset
