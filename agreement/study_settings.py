"""Making and setting up a study in the product: staff create one at /s/new/ (name, slug,
description, visibility) and become its owner; an owner changes its settings at
/s/<slug>/settings/. Views parse, authorize, call one service (``studies.services``)."""
from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render

from annotation.core.form_fields import SafeJSONField
from annotation.core.permissions import admin_required
from studies.access import MANAGE, study_page
from studies.models import Study
from studies.services import EDITABLE, RESERVED_SLUGS, study_create, study_update


class StudyNewForm(forms.ModelForm):
    class Meta:
        model = Study
        fields = ["name", "slug", "description", "visibility"]
        help_texts = {"slug": "The study's address: /s/<slug>/ (letters, digits, - and _)."}

    def clean_slug(self):
        slug = self.cleaned_data["slug"]
        if slug in RESERVED_SLUGS:
            raise ValidationError(f"“{slug}” is reserved: choose another slug.")
        return slug


class StudySettingsForm(forms.ModelForm):
    class Meta:
        model = Study
        fields = list(EDITABLE)
        field_classes = {"default_answer_options": SafeJSONField}
        help_texts = {"default_answer_options":
                      'A JSON list of answers a new rating batch offers, e.g. ["A", "B", "tie"] '
                      "(empty: all)"}

    def clean_default_answer_options(self):
        """A list of answer names; left empty, the empty list (the column holds no null)."""
        value = self.cleaned_data["default_answer_options"]
        if value in (None, ""):
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValidationError('Give a JSON list of answer names, e.g. ["A", "B"].')
        return value


def _refused(form, exc: ValidationError) -> None:
    if hasattr(exc, "error_dict"):
        for field, errors in exc.error_dict.items():
            form.add_error(field if field in form.fields else None, errors)
    else:
        form.add_error(None, exc)


@admin_required
def study_new(request):
    form = StudyNewForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            study = study_create(**form.cleaned_data, owner=request.user)
        except ValidationError as exc:
            _refused(form, exc)
        else:
            messages.success(request, f"Created the study “{study.name}”.")
            return redirect("studies:home", study.slug)
    return render(request, "agreement/study_new.html", {"form": form})


@study_page(MANAGE)
def study_edit(request, study):
    # The form edits a copy: a refused value never shows as the study's in the page's header.
    form = StudySettingsForm(request.POST or None, instance=Study.objects.get(pk=study.pk))
    if request.method == "POST" and form.is_valid():
        try:
            study_update(study, **{name: form.cleaned_data[name] for name in EDITABLE})
        except ValidationError as exc:
            _refused(form, exc)
        else:
            messages.success(request, "Settings saved.")
            return redirect("studies:settings", study.slug)
    return render(request, "agreement/study_settings.html", {"form": form, "study": study})
