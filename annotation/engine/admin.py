"""Admin for the engine's models; batch upload, status and qualification actions call the
services. Workers are administered with the marketplaces (``annotation.providers.admin``):
blocking one there is a marketplace call."""
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import redirect, render
from django.urls import path

from annotation.engine.hit_types import all_hit_types
from annotation.engine.selectors import batch_cost, batch_progress
from annotation.engine.services.batches import (
    batch_create_from_rows,
    batch_set_status,
    rows_from_upload,
)
from annotation.engine.services.leases import leases_expire
from annotation.engine.services.qualifications import qualification_revoke
from annotation.models import (
    Assignment,
    Batch,
    Qualification,
    QualificationGrant,
    Task,
)


class BatchUploadForm(forms.Form):
    hit_type = forms.ChoiceField(choices=())
    title = forms.CharField(max_length=200)
    description = forms.CharField(max_length=500, required=False)
    instructions = forms.CharField(widget=forms.Textarea, required=False)
    assignments_per_task = forms.IntegerField(min_value=1, max_value=1000, initial=5)
    reward = forms.DecimalField(min_value=0, decimal_places=2, initial="0.10")
    lease_seconds = forms.IntegerField(min_value=30, initial=1800)
    min_seconds = forms.IntegerField(min_value=0, initial=0)
    file = forms.FileField(help_text="CSV or JSONL, one task per row")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["hit_type"].choices = [(h.slug, f"{h.title} ({h.slug})") for h in all_hit_types()]


@admin.register(Batch)
class BatchAdmin(admin.ModelAdmin):
    list_display = ("title", "hit_type", "status", "assignments_per_task", "reward", "progress",
                    "cost", "created_at")
    list_filter = ("status", "hit_type", "provider")
    search_fields = ("title",)
    readonly_fields = ("uuid", "progress", "cost")
    actions = ("activate", "pause", "finish")
    change_list_template = "admin/annotation/batch/change_list.html"

    @admin.display(description="Progress (done / leased / remaining)")
    def progress(self, obj):
        p = batch_progress(obj)
        return f"{p.done} / {p.leased} / {p.remaining} ({p.percent:.0f} %)"

    @admin.display(description="Cost spent / estimate")
    def cost(self, obj):
        c = batch_cost(obj)
        return f"${c['spent']:.2f} / ${c['estimate']:.2f}"

    def get_urls(self):
        return [path("upload/", self.admin_site.admin_view(self.upload_view),
                     name="annotation_batch_upload"), *super().get_urls()]

    def upload_view(self, request):
        if not self.has_add_permission(request):
            raise PermissionDenied  # staff without the model permission: 403
        form = BatchUploadForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            data = dict(form.cleaned_data)
            upload = data.pop("file")
            try:
                rows = rows_from_upload(upload.name, upload.read())
                batch = batch_create_from_rows(rows=rows, **data)
            except ValidationError as exc:
                form.add_error("file", "; ".join(exc.messages))
            else:
                self.message_user(request, f"Created “{batch.title}” with {batch.tasks.count()} tasks.")
                return redirect("admin:annotation_batch_change", batch.pk)
        context = {**self.admin_site.each_context(request), "form": form, "title": "Upload a batch",
                   "opts": self.model._meta}
        return render(request, "admin/annotation/batch/upload.html", context)

    def _move(self, request, queryset, status):
        for batch in queryset:
            try:
                batch_set_status(batch, status)
            except ValidationError as exc:
                self.message_user(request, f"{batch}: {exc.messages[0]}", messages.WARNING)

    @admin.action(description="Activate (open to workers)")
    def activate(self, request, queryset):
        self._move(request, queryset, Batch.Status.ACTIVE)

    @admin.action(description="Pause")
    def pause(self, request, queryset):
        self._move(request, queryset, Batch.Status.PAUSED)

    @admin.action(description="Finish")
    def finish(self, request, queryset):
        self._move(request, queryset, Batch.Status.FINISHED)


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ("batch", "position", "is_gold", "slots_taken", "max_assignments")
    list_filter = ("batch", "is_gold")
    readonly_fields = ("uuid", "slots_taken")
    list_select_related = ("batch",)


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("task", "worker", "status", "counted", "late", "gold_correct", "claimed_at",
                    "submitted_at", "seconds_spent")
    list_filter = ("status", "counted", "late", "batch")
    readonly_fields = [f.name for f in Assignment._meta.fields]
    list_select_related = ("task__batch", "worker")
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
