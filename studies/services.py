"""Writes of studies: creating one (its creator becomes its owner) and changing its settings.
The pages (``agreement.study_settings``) and the admin are callers; the checks are the model's
own validators plus the slugs the URLs reserve."""
from django.core.exceptions import ValidationError
from django.db import transaction

from .models import Study, StudyMembership

# /s/new/ is the "new study" page: a study there could never be opened.
RESERVED_SLUGS = frozenset({"new"})
# What the owner's settings page may change (the slug is the study's address: fixed).
EDITABLE = ("name", "description", "protocol_notes", "visibility", "budget", "fee_rate",
            "submission_judge", "submission_budget_cap", "submissions_per_day",
            "default_answer_options", "default_min_seconds")


def study_create(*, name: str, slug: str, description: str = "",
                 visibility: str = Study.Visibility.PRIVATE, owner=None) -> Study:
    """A new study, or ``ValidationError`` with nothing written (a taken or reserved slug, an
    unknown visibility). ``owner`` (the staff member who made it) gets the owner role."""
    study = Study(name=name, slug=slug, description=description, visibility=visibility)
    if slug in RESERVED_SLUGS:
        raise ValidationError({"slug": f"“{slug}” is reserved: choose another slug."})
    study.full_clean()
    with transaction.atomic():
        study.save()
        if owner is not None:
            StudyMembership.objects.create(user=owner, study=study,
                                           role=StudyMembership.Role.OWNER)
    return study


def study_update(study: Study, **fields) -> Study:
    """Change the settings in ``EDITABLE``; ``ValidationError`` and nothing written when a
    value is refused."""
    unknown = set(fields) - set(EDITABLE)
    if unknown:
        raise ValidationError(f"Not a study setting: {', '.join(sorted(unknown))}")
    original = {name: getattr(study, name) for name in fields}
    for name, value in fields.items():
        setattr(study, name, value)
    try:
        study.full_clean()
    except ValidationError:
        for name, value in original.items():
            setattr(study, name, value)
        raise
    study.save(update_fields=list(fields))
    return study
