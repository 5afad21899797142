"""Admin for the judging tables; writes go through the services (no logic here).

Responses and score judgments have an action that builds a rating batch from the selection
(rubric scores; which feedback is better) after a short form: the ids those HITs need are
never typed by hand."""
from decimal import Decimal

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.template.response import TemplateResponse

from . import rating_cache
from .models import Comparison, EvalModel, Judgment, Response
from .services.rating_batches import (
    RatingBatchError,
    feedback_batch_create,
    rubric_batch_create,
)

admin.site.register(EvalModel, list_display=("name", "version", "family", "is_reference", "owner"),
                    search_fields=("name",))


class RatingBatchForm(forms.Form):
    title = forms.CharField(max_length=200)
    assignments_per_task = forms.IntegerField(
        min_value=1, max_value=1000, initial=5, label="N (assignments per task)")
    reward = forms.DecimalField(min_value=0, max_digits=8, decimal_places=2,
                                initial=Decimal("0.10"), help_text="Per assignment, in dollars")
    lease_seconds = forms.IntegerField(min_value=30, initial=1800, label="Lease (seconds)")


def rating_batch_action(modeladmin, request, queryset, *, build, what: str, default_title: str):
    """The intermediate form of a build-a-batch action: the first POST (from the list) shows
    the form, the form's own POST (``apply``) builds the batch through ``build``."""
    if not request.user.has_perm("annotation.add_batch"):
        raise PermissionDenied
    form = RatingBatchForm(request.POST if "apply" in request.POST else None,
                           initial={"title": default_title})
    if form.is_valid():
        try:
            batch = build(queryset, **form.cleaned_data)
        except RatingBatchError as exc:
            modeladmin.message_user(request, f"No batch was made: {exc}", messages.ERROR)
            return None
        modeladmin.message_user(request, f"Created “{batch.title}” with {batch.tasks.count()} "
                                         f"tasks (a draft: activate it in Batches).")
        return redirect("admin:annotation_batch_change", batch.pk)
    context = {**modeladmin.admin_site.each_context(request), "title": f"Build a batch: {what}",
               "opts": modeladmin.model._meta, "form": form, "objects": queryset[:50],
               "count": queryset.count(), "ids": list(queryset.values_list("pk", flat=True)),
               "action": request.POST["action"],
               "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME}
    return TemplateResponse(request, "admin/judging/rating_batch_form.html", context)


@admin.register(Response)
class ResponseAdmin(admin.ModelAdmin):
    list_display = ("model", "instance", "turn", "condition")
    list_filter = ("model", "condition", "instance__kind", "turn")
    raw_id_fields = ("instance",)
    actions = ("build_rubric_batch",)

    @admin.action(description="Build a rubric-score batch from the selected responses…")
    def build_rubric_batch(self, request, queryset):
        return rating_batch_action(
            self, request, queryset.select_related("model"), what="rubric scores",
            default_title=f"Rubric scores of {queryset.count()} responses",
            build=lambda qs, **fields: rubric_batch_create(responses=qs, **fields))


@admin.register(Comparison)
class ComparisonAdmin(admin.ModelAdmin):
    list_display = ("uuid", "instance", "response_a", "response_b", "swapped", "sampling",
                    "gold_choice")
    list_filter = ("sampling", "swapped")
    raw_id_fields = ("instance", "response_a", "response_b")


@admin.register(Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    list_display = ("comparison", "response", "kind", "source", "annotator", "choice", "score",
                    "turn", "rejected", "created_at")
    list_filter = ("kind", "source", "choice", "turn", "rejected", "response__model")
    search_fields = ("annotator",)
    raw_id_fields = ("comparison", "response", "worker", "assignment")
    actions = ("build_feedback_batch",)

    # Judgments are written by one service (votes, judges, imports, rulings); the admin reads
    # them. Deleting one is allowed, and the leaderboards' cache hears of it at once.
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def get_queryset(self, request):
        # The admin shows the votes of rejected work too (marked), which no count includes.
        ordering = self.get_ordering(request)
        votes = Judgment.with_rejected.all()
        return votes.order_by(*ordering) if ordering else votes

    def delete_model(self, request, obj):
        super().delete_model(request, obj)
        rating_cache.source_changed(obj.source)

    def delete_queryset(self, request, queryset):
        sources = set(queryset.values_list("source", flat=True))
        super().delete_queryset(request, queryset)
        for source in sources:
            rating_cache.source_changed(source)

    @admin.action(description="Build a which-feedback-is-better batch from the selected score "
                              "judgments…")
    def build_feedback_batch(self, request, queryset):
        return rating_batch_action(
            self, request, queryset.select_related("response__model"),
            what="which feedback is better",
            default_title=f"Feedback comparison of {queryset.count()} score judgments",
            build=lambda qs, **fields: feedback_batch_create(judgments=qs, **fields))


from .judges import admin as _judges_admin  # noqa: E402,F401
from .submissions import admin as _submissions_admin  # noqa: E402,F401
