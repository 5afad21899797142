"""Admin for judges (incl. prompt-template overrides), runs (cancel/resume actions) and calls."""
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError

from annotation.core.jobs import JobsBusy

from .models import Judge, JudgeCall, JudgeRun
from .services import RUN_BUDGET, judge_run_cancel, judge_run_resume
from .templates import TemplateError, parse_template, shipped_names


@admin.register(Judge)
class JudgeAdmin(admin.ModelAdmin):
    list_display = ("name", "version", "kind", "model_name", "base_url", "k", "concurrency")
    list_filter = ("kind",)
    search_fields = ("name", "model_name")
    readonly_fields = ("uuid", "created_at")

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)
        field = form.base_fields.get("template_overrides")
        if field is not None:
            field.help_text = ('{"template name": "full template text"}. Shipped templates: '
                               + ", ".join(shipped_names()) + ". Change the version when you "
                               "change the model, sampling or templates.")
            original = field.clean

            def clean(value, _original=original):
                value = _original(value)
                for name, text in (value or {}).items():
                    if name not in shipped_names():
                        raise ValidationError(f"unknown template {name!r}")
                    try:
                        parse_template(name, text, override=True)
                    except TemplateError as exc:
                        raise ValidationError(str(exc)) from exc
                return value

            field.clean = clean
        return form


class JudgeRunForm(forms.ModelForm):
    """The budget field refuses what ``judge_run_start`` refuses (``RUN_BUDGET``)."""

    def clean_budget(self):
        return RUN_BUDGET.parse(self.cleaned_data.get("budget"), optional=True)


@admin.register(JudgeRun)
class JudgeRunAdmin(admin.ModelAdmin):
    form = JudgeRunForm
    list_display = ("uuid", "judge", "status", "units_done", "units_total", "units_failed",
                    "cost", "budget", "created_at")
    list_filter = ("status", "judge")
    readonly_fields = [f.name for f in JudgeRun._meta.fields if f.name != "budget"]
    actions = ["cancel_runs", "resume_runs"]

    def has_add_permission(self, request):
        return False  # runs start through manage.py judge_run / the API, with an estimate

    @admin.action(description="Cancel selected runs")
    def cancel_runs(self, request, queryset):
        for run in queryset:
            judge_run_cancel(run)
        messages.info(request, f"{queryset.count()} run(s) cancelled.")

    @admin.action(description="Resume selected runs (reuses calls already made)")
    def resume_runs(self, request, queryset):
        for run in queryset:
            try:
                judge_run_resume(run)
            except ValidationError as exc:
                messages.error(request, f"{run.uuid}: {'; '.join(exc.messages)}")
            except JobsBusy as exc:
                messages.error(request, f"{run.uuid}: {exc.message}")


@admin.register(JudgeCall)
class JudgeCallAdmin(admin.ModelAdmin):
    list_display = ("idempotency_key", "judge", "purpose", "ordering", "turn", "sample_index",
                    "status", "parse_path", "verdict", "score", "cost")
    list_filter = ("status", "parse_path", "purpose", "judge")
    search_fields = ("idempotency_key", "raw_output")
    raw_id_fields = ("run", "extraction")

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in JudgeCall._meta.fields]

    def has_add_permission(self, request):
        return False
