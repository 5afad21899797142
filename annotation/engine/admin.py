"""Admin for the engine's models; batch upload, status and qualification actions call the
services. Workers are administered with the marketplaces (``annotation.providers.admin``):
blocking one there is a marketplace call.

The upload page explains itself (each HIT type's columns and a sample file, see
``annotation.engine.upload_help``); activating asks for confirmation first, as deleting does."""
from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from annotation.core.form_fields import SafeJSONField
from annotation.core.marketplaces import get_provider
from annotation.core.money import AmountRefused
from annotation.engine import upload_help
from annotation.engine.hit_types import all_hit_types, get_hit_type
from annotation.engine.results_admin import AssignmentPersonAdminMixin, BatchResultsAdminMixin
from annotation.engine.selectors import batch_cost, batch_costs, batch_progress
from annotation.engine.services.batches import (
    BATCH_BUDGET,
    REWARD,
    batch_create_sample,
    batch_set_status,
)
from annotation.engine.services.leases import leases_expire
from annotation.engine.services.qualifications import qualification_revoke
from annotation.engine.services.uploads import UploadRefused, batch_upload
from annotation.engine.study_budget import batch_study_cost, study_money
from annotation.models import (
    Assignment,
    Batch,
    ProviderHit,
    Qualification,
    QualificationGrant,
    Task,
    Worker,
)

SAMPLE_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson; charset=utf-8"}


def hit_type_choices() -> list[tuple[str, str]]:
    return [(h.slug, f"{h.title} ({h.slug})") for h in all_hit_types()]


class BatchUploadForm(forms.Form):
    hit_type = forms.ChoiceField(choices=(), label="HIT type")
    title = forms.CharField(max_length=200)
    description = forms.CharField(max_length=500, required=False)
    instructions = forms.CharField(
        widget=forms.Textarea, required=False,
        help_text="Markdown: **bold**, lists, links and example images as "
                  "![what it shows](https://…); raw HTML is shown as text.")
    provider = forms.ChoiceField(
        choices=Worker.Provider.choices, initial=Worker.Provider.LOCAL,
        help_text="Where the workers come from. Publish on a marketplace afterwards from "
                  "Marketplace batches (Launch…).")
    assignments_per_task = forms.IntegerField(
        min_value=1, max_value=1000, initial=5, label="N (assignments per task)",
        help_text="How many different workers answer each task.")
    reward = forms.DecimalField(min_value=0, max_digits=8, decimal_places=2, initial="0.10",
                                help_text="Paid per assignment, in dollars.")
    budget = forms.DecimalField(
        required=False, min_value=0, max_digits=10, decimal_places=2,
        help_text="Ceiling for the whole batch, fees included. The upload is refused when the "
                  "estimate passes it; a paid marketplace needs one.")
    lease_seconds = forms.IntegerField(
        min_value=30, initial=1800, label="Lease (seconds)",
        help_text="How long a worker holds a task before it goes back to the pool.")
    min_seconds = forms.IntegerField(
        min_value=0, required=False, label="Minimum seconds per task",
        help_text="Answers faster than this are refused. Blank: the HIT type's default (a "
                  "share of the time the task takes); 0 accepts answers of any speed.")
    hit_options = SafeJSONField(
        required=False, label="HIT options",
        help_text="The HIT type's per-batch settings as JSON (listed per type below); blank: "
                  "the type's defaults.")
    trial = forms.BooleanField(
        required=False, label="Trial batch",
        help_text="For trying things out: its votes are kept and shown in its own results and "
                  "review, but counted on no leaderboard or report unless an analyst includes "
                  "trial batches.")
    file = forms.FileField(help_text="CSV or JSONL, one task per row")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["hit_type"].choices = hit_type_choices()


class BatchMoneyForm(forms.ModelForm):
    """A batch's edit page refuses what ``batch_create_from_rows`` refuses (same rules)."""

    def clean_reward(self):
        return REWARD.parse(self.cleaned_data.get("reward"))

    def clean_budget(self):
        return BATCH_BUDGET.parse(self.cleaned_data.get("budget"), optional=True)


@admin.register(Batch)
class BatchAdmin(BatchResultsAdminMixin, admin.ModelAdmin):
    form = BatchMoneyForm
    list_display = ("title", "hit_type", "status", "trial", "assignments_per_task", "reward",
                    "progress", "cost", "money_links", "created_at")
    list_filter = ("status", "hit_type", "provider", "trial")
    search_fields = ("title",)
    readonly_fields = ("uuid", "progress", "cost", "results_download")
    actions = ("activate", "pause", "finish", "export_results_csv", "export_results_jsonl",
               "export_results_parquet")
    change_list_template = "admin/annotation/batch/change_list.html"

    @admin.display(description="Review · payments")
    def money_links(self, obj):
        return format_html('<a href="{}">Review</a> · <a href="{}">Payments</a>',
                           reverse("admin:annotation_marketplacebatch_review", args=[obj.pk]),
                           reverse("admin:annotation_marketplacebatch_payments", args=[obj.pk]))

    @admin.display(description="Progress (done / leased / remaining)")
    def progress(self, obj):
        p = batch_progress(obj)
        return f"{p.done} / {p.leased} / {p.remaining} ({p.percent:.0f} %)"

    @admin.display(description="Cost spent / estimate")
    def cost(self, obj):
        c = batch_cost(obj)
        return f"${c['spent']:.2f} / ${c['estimate']:.2f}"

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        """``hit_type`` is chosen from the registered types (it is read-only once created)."""
        if db_field.name == "hit_type":
            return forms.ChoiceField(choices=hit_type_choices(), label="HIT type")
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        """A batch's tasks were validated by its HIT type and its votes given under its HIT
        options, so neither changes, nor its study; nor does the marketplace once units were
        published there."""
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None:
            fields += ["hit_type", "hit_options"]  # votes already given were given under them
            fields.append("study")  # its items and votes are that study's
            if ProviderHit.objects.filter(batch=obj).exists():
                fields.append("provider")
        return fields

    def get_urls(self):
        return [path("upload/", self.admin_site.admin_view(self.upload_view),
                     name="annotation_batch_upload"),
                path("upload/sample/", self.admin_site.admin_view(self.sample_view),
                     name="annotation_batch_upload_sample"),
                path("upload/sample/try/", self.admin_site.admin_view(self.sample_try_view),
                     name="annotation_batch_upload_sample_try"),
                *super().get_urls()]

    def upload_view(self, request):
        if not self.has_add_permission(request):
            raise PermissionDenied  # staff without the model permission: 403
        form = BatchUploadForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            batch = self._create_from_upload(form)
            if batch is not None:
                return self._created(request, batch)
        context = {**self.admin_site.each_context(request), "form": form,
                   "title": "Upload a batch", "opts": self.model._meta,
                   "hit_types": self._hit_type_help()}
        return render(request, "admin/annotation/batch/upload.html", context)

    @staticmethod
    def _create_from_upload(form: BatchUploadForm) -> Batch | None:
        """The batch a valid upload form describes (``batch_upload``: the product's wizard
        uses the same service), or None with the reason added to the form (a bad file or row
        to ``file``, an estimate over the budget to ``budget``)."""
        data = dict(form.cleaned_data)
        try:
            return batch_upload(file=data.pop("file"), **data)
        except AmountRefused as exc:
            form.add_error(exc.field if exc.field in form.fields else None, exc.messages)
        except UploadRefused as exc:
            form.add_error(exc.field if exc.field in form.fields else "file", exc.messages)
        except ValidationError as exc:
            form.add_error("file", "; ".join(exc.messages))
        return None

    def _created(self, request, batch):
        tasks = batch.tasks.count()
        cost = upload_help.upload_estimate(provider=batch.provider, reward=batch.reward,
                                           tasks=tasks, n=batch.assignments_per_task)
        budget = "no budget" if batch.budget is None else f"budget ${batch.budget:.2f}"
        trial = (" It is a trial batch: its votes count on no leaderboard or report unless an "
                 "analyst includes trial batches." if batch.trial else "")
        self.message_user(request, f"Created “{batch.title}” with {tasks} tasks (a draft; "
                                   f"estimate ${cost.total:.2f}, {budget}). Activate it from "
                                   f"the list when ready.{trial}")
        if batch.image_problems:
            self.message_user(request, f"{len(batch.image_problems)} image URL(s) of this batch "
                                       "are broken: the batch's page lists them "
                                       f"({reverse('console:batch', args=[batch.uuid])}).",
                              messages.WARNING)
        if said := get_provider(batch.provider).upload_note(batch):
            note, low = said
            self.message_user(request, note, messages.WARNING if low else messages.INFO)
        if batch.min_seconds == 0:
            self.message_user(request, "Minimum seconds is 0: answers of any speed are "
                                       "accepted. Set it on the batch to refuse click-throughs.",
                              messages.WARNING)
        return redirect("admin:annotation_batch_change", batch.pk)

    @staticmethod
    def _hit_type_help() -> list[dict]:
        return [{"slug": h.slug, "title": h.title, "rule": upload_help.payload_rule(h),
                 "columns": upload_help.payload_columns(h),
                 "options": upload_help.hit_options(h),
                 "min_seconds": h.default_min_seconds(),
                 "has_sample": bool(upload_help.example_rows(h))} for h in all_hit_types()]

    def sample_view(self, request):
        """A HIT type's example rows as a CSV or JSONL file (``?hit_type=…&format=csv``)."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        fmt = request.GET.get("format", "csv")
        if fmt not in SAMPLE_TYPES:
            raise Http404("Unknown sample format.")
        try:
            name, body = upload_help.sample_file(get_hit_type(request.GET.get("hit_type", "")),
                                                 fmt)
        except LookupError as exc:
            raise Http404(str(exc)) from exc
        response = HttpResponse(body, content_type=SAMPLE_TYPES[fmt])
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response

    def sample_try_view(self, request):
        """POST ``hit_type``: the HIT type's sample as a trial batch (``batch_create_sample``)."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        if request.method != "POST":
            return redirect("admin:annotation_batch_upload")
        try:
            batch = batch_create_sample(hit_type=request.POST.get("hit_type", ""))
        except LookupError as exc:
            raise Http404(str(exc)) from exc
        except ValidationError as exc:
            self.message_user(request, "; ".join(exc.messages), messages.ERROR)
            return redirect("admin:annotation_batch_upload")
        return self._created(request, batch)

    def _move(self, request, queryset, status):
        for batch in queryset:
            try:
                batch_set_status(batch, status)
            except ValidationError as exc:
                self.message_user(request, f"{batch}: {exc.messages[0]}", messages.WARNING)

    @admin.action(description="Activate (open to workers)…", permissions=["change"])
    def activate(self, request, queryset):
        """First a confirmation page (tasks, provider, estimate against budget); only its
        POST, carrying ``post=yes``, activates."""
        if request.POST.get("post") == "yes":
            self._move(request, queryset, Batch.Status.ACTIVE)
            return None
        rows = []
        for batch in queryset.annotate(task_count=Count("tasks")).order_by("pk"):
            costs = batch_costs(batch)
            money, needed = study_money(batch.study), batch_study_cost(batch, batch.study)
            rows.append({
                "batch": batch, "tasks": batch.task_count, "estimate": costs.estimate.total,
                "over_budget": costs.budget is not None and costs.estimate.total > costs.budget,
                "study_money": money, "study_needed": needed,
                "over_study_budget": batch.status == Batch.Status.DRAFT
                and money.remaining is not None and needed > money.remaining,
                "activatable": batch.status in (Batch.Status.DRAFT, Batch.Status.PAUSED),
            })
        context = {**self.admin_site.each_context(request), "title": "Activate these batches?",
                   "opts": self.model._meta, "rows": rows, "action": "activate",
                   "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME}
        return TemplateResponse(request, "admin/annotation/batch/activate_confirmation.html",
                                context)

    @admin.action(description="Pause", permissions=["change"])
    def pause(self, request, queryset):
        self._move(request, queryset, Batch.Status.PAUSED)

    @admin.action(description="Finish", permissions=["change"])
    def finish(self, request, queryset):
        self._move(request, queryset, Batch.Status.FINISHED)


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ("batch", "position", "is_gold", "slots_taken", "max_assignments")
    list_filter = ("batch", "is_gold")
    readonly_fields = ("uuid", "slots_taken")
    list_select_related = ("batch",)


@admin.register(Assignment)
class AssignmentAdmin(AssignmentPersonAdminMixin, admin.ModelAdmin):
    list_display = ("task", "person", "status", "counted", "late", "gold_correct", "claimed_at",
                    "submitted_at", "seconds_spent")
    list_filter = ("status", "counted", "late", "batch")
    readonly_fields = [*(f.name for f in Assignment._meta.fields), "person"]
    list_select_related = ("task__batch", "worker__user")
    actions = ("expire_stale",)

    def has_add_permission(self, request):
        return False  # assignments are only made by the claim services

    @admin.action(description="Expire stale leases now")
    def expire_stale(self, request, queryset):
        self.message_user(request, f"Expired {leases_expire()} leases.")


@admin.register(QualificationGrant)
class QualificationGrantAdmin(admin.ModelAdmin):
    list_display = ("qualification", "worker", "score", "granted_at", "revoked")
    list_filter = ("qualification", "revoked")
    search_fields = ("worker__external_id",)
    list_select_related = ("qualification", "worker")
    actions = ("revoke",)

    @admin.action(description="Revoke (pushed to the marketplace with the next push)")
    def revoke(self, request, queryset):
        revoked = sum(qualification_revoke(qualification=grant.qualification, worker=grant.worker)
                      for grant in queryset.filter(revoked=False)
                      .select_related("qualification", "worker"))
        self.message_user(request, f"Revoked {revoked} grant(s).")


admin.site.register(Qualification)
