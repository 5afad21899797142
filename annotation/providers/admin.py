"""Admin for the marketplaces: launch (estimate + confirmation, Sandbox or Production in large
type), preview, pause, resume, extend, expire, sync now, status counts, bonuses and review; the
review and payments pages of any batch (``admin_batch_money``); workers (``admin_workers``).
Every button calls one service."""
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path, reverse
from django.utils.html import format_html

from annotation.core.clients.errors import MarketplaceError
from annotation.core.marketplaces import get_provider
from annotation.engine.admin import BatchMoneyForm
from annotation.models import (
    Bonus,
    MarketplaceBatch,
    ProviderAction,
    ProviderConfig,
    ProviderHit,
    ProviderSubmission,
)
from annotation.providers import admin_workers  # noqa: F401  (registers the Worker admin)
from annotation.providers.admin_batch_money import BatchMoneyViews
from annotation.providers.costs import BudgetExceeded
from annotation.providers.selectors import batch_costs, batch_status_counts
from annotation.providers.services import (
    assignment_approve,
    assignment_reject,
    batch_expire,
    batch_extend,
    batch_filter_set_choose,
    batch_launch,
    batch_pause,
    batch_resume,
    batch_sync,
    config_for,
    qualification_push,
    worker_bonus,
)

_REFUSALS = (MarketplaceError, BudgetExceeded, ValidationError)


class LaunchForm(forms.Form):
    confirm = forms.BooleanField(label="I checked the estimate and want to launch")
    confirm_production = forms.BooleanField(
        required=False, label="This is PRODUCTION Mechanical Turk: real workers, real money")

    filter_set = forms.ChoiceField(
        required=False, label="Prolific filter set",
        help_text="Prolific's reusable audience, applied beside the batch's own filters")

    def __init__(self, *args, production: bool, filter_sets=None, **kwargs):
        super().__init__(*args, **kwargs)
        if filter_sets is None:
            del self.fields["filter_set"]
        else:
            self.fields["filter_set"].choices = [("", "None"), *filter_sets]
        if production:
            self.fields["confirm_production"].required = True
        else:
            del self.fields["confirm_production"]


class ProviderConfigInline(admin.StackedInline):
    model = ProviderConfig
    can_delete = False
    readonly_fields = ("completion_code",)


@admin.register(MarketplaceBatch)
class MarketplaceBatchAdmin(BatchMoneyViews, admin.ModelAdmin):
    form = BatchMoneyForm
    list_display = ("title", "provider", "status", "counts", "costs", "buttons")
    list_filter = ("provider", "status")
    fields = ("title", "provider", "status", "reward", "assignments_per_task", "budget",
              "counts", "costs", "buttons")
    readonly_fields = ("title", "provider", "status", "counts", "costs", "buttons")
    inlines = (ProviderConfigInline,)
    actions = ("pause", "resume", "extend", "expire", "sync_now", "push_qualifications")

    def get_queryset(self, request):
        return super().get_queryset(request).exclude(provider="local")

    def has_add_permission(self, request):
        return False  # create batches in Batch admin, then set their provider

    @admin.display(description="Status counts")
    def counts(self, obj):
        c = batch_status_counts(obj)
        parts = [f"{group}: " + ", ".join(f"{k or '—'} {v}" for k, v in sorted(c[group].items()))
                 for group in ("hits", "remote", "flagged", "assignments", "bonuses") if c[group]]
        return " · ".join(parts) or "not launched"

    @admin.display(description="Spent / committed / budget")
    def costs(self, obj):
        c = batch_costs(obj)
        budget = "none" if c.budget is None else f"${c.budget:.2f}"
        return f"${c.spent:.2f} / ${c.committed:.2f} / {budget}"

    @admin.display(description="")
    def buttons(self, obj):
        task = obj.tasks.order_by("position").first()
        preview = ""
        if task is not None:
            preview = (reverse("annotation:mturk_task", args=[task.uuid])
                       + "?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE")
        return format_html(
            '<a class="button" href="{}">Launch…</a> <a href="{}" target="_blank" '
            'rel="noopener">Preview as a worker</a> · <a href="{}">Review</a> · '
            '<a href="{}">Payments</a>',
            reverse("admin:annotation_marketplacebatch_launch", args=[obj.pk]), preview,
            reverse("admin:annotation_marketplacebatch_review", args=[obj.pk]),
            reverse("admin:annotation_marketplacebatch_payments", args=[obj.pk]))

    def get_urls(self):
        return [path("<int:pk>/launch/", self.admin_site.admin_view(self.launch_view),
                     name="annotation_marketplacebatch_launch"), *super().get_urls()]

    def launch_view(self, request, pk):
        if not self.has_change_permission(request):
            raise PermissionDenied  # staff without the model permission: 403
        batch = get_object_or_404(MarketplaceBatch, pk=pk)
        config_for(batch)
        provider = get_provider(batch.provider)
        production = provider.production()
        facts = provider.launch_facts(batch)
        chooses_filter_set = hasattr(facts, "filter_set_choices")
        form = LaunchForm(request.POST or None, production=production,
                          initial={"filter_set": config_for(batch).audience_filter_set_id},
                          filter_sets=facts.filter_set_choices() if chooses_filter_set else None)
        if request.method == "POST" and form.is_valid():
            try:
                if chooses_filter_set:
                    batch_filter_set_choose(batch, form.cleaned_data["filter_set"],
                                            actor=request.user.get_username())
                report = batch_launch(
                    batch, actor=request.user.get_username(),
                    production_confirmed=form.cleaned_data.get("confirm_production", False))
            except _REFUSALS as exc:
                messages.error(request, f"Not launched: {'; '.join(getattr(exc, 'messages', [str(exc)]))}")
            else:
                messages.success(request, f"Launched “{batch.title}”: {report.created} new, "
                                          f"{report.reused} already published, of {report.total}.")
                return redirect("admin:annotation_marketplacebatch_changelist")
            if facts is not None:
                facts = provider.launch_facts(batch)  # the audience as it now stands
        context = {**self.admin_site.each_context(request), "opts": self.model._meta,
                   "title": f"Launch “{batch.title}” on {batch.get_provider_display()}",
                   "batch": batch, "form": form, "costs": batch_costs(batch),
                   "production": production, "tasks": batch.tasks.count(),
                   "mturk_endpoint": provider.endpoint(), "prolific": facts}
        return render(request, "admin/annotation/marketplacebatch/launch.html", context)

    def _each(self, request, queryset, service, verb):
        for batch in queryset:
            try:
                errors = service(batch, actor=request.user.get_username())
            except _REFUSALS as exc:
                self.message_user(request, f"{batch}: {exc}", messages.ERROR)
                continue
            for error in errors or []:
                self.message_user(request, f"{batch}: {error}", messages.WARNING)
            if errors:
                self.message_user(request, f"{batch}: {verb}, except {len(errors)} unit(s) "
                                           "(above).", messages.WARNING)
            else:
                self.message_user(request, f"{batch}: {verb}.")

    @admin.action(description="Pause (stop new arrivals)")
    def pause(self, request, queryset):
        self._each(request, queryset, batch_pause, "paused")

    @admin.action(description="Resume")
    def resume(self, request, queryset):
        self._each(request, queryset, batch_resume, "resumed")

    @admin.action(description="Extend live units by the batch's lifetime (MTurk)")
    def extend(self, request, queryset):
        self._each(request, queryset, lambda batch, actor: batch_extend(
            batch, seconds=config_for(batch).lifetime_seconds, actor=actor),
            "live units extended by its lifetime")

    @admin.action(description="Expire (close for good)")
    def expire(self, request, queryset):
        self._each(request, queryset, batch_expire, "expired")

    @admin.action(description="Sync now")
    def sync_now(self, request, queryset):
        for batch in queryset:
            r = batch_sync(batch, actor=request.user.get_username())
            level = messages.WARNING if r.errors else messages.INFO
            self.message_user(request, f"{batch}: seen {r.seen}, flagged {r.flagged}, approved "
                                       f"{r.approved}, rejected {r.rejected}. {' '.join(r.errors)}",
                              level)

    @admin.action(description="Push qualifications to the marketplace")
    def push_qualifications(self, request, queryset):
        self.message_user(request, f"Pushed {qualification_push(actor=request.user)} grants.")


@admin.register(ProviderSubmission)
class ProviderSubmissionAdmin(admin.ModelAdmin):
    list_display = ("external_id", "provider", "worker_external_id", "remote_status", "flag",
                    "assignment", "synced_at")
    list_filter = ("provider", "remote_status", "flag")
    search_fields = ("external_id", "worker_external_id")
    readonly_fields = [f.name for f in ProviderSubmission._meta.fields]
    actions = ("approve", "reject", "bonus_ten_cents")

    def has_add_permission(self, request):
        return False

    def _each(self, request, queryset, call):
        for submission in queryset.select_related("assignment__batch", "assignment__worker"):
            if submission.assignment is None:
                self.message_user(request, f"{submission}: no assignment here", messages.WARNING)
                continue
            try:
                call(submission.assignment)
            except _REFUSALS as exc:
                self.message_user(request, f"{submission}: {exc}", messages.ERROR)

    @admin.action(description="Approve (pay)")
    def approve(self, request, queryset):
        self._each(request, queryset,
                   lambda a: assignment_approve(a, actor=request.user.get_username()))

    @admin.action(description="Reject with the batch's reason")
    def reject(self, request, queryset):
        self._each(request, queryset, lambda a: assignment_reject(
            a, reason=config_for(a.batch).reject_reason, actor=request.user.get_username()))

    @admin.action(description="Bonus $0.10 (once per assignment)")
    def bonus_ten_cents(self, request, queryset):
        self._each(request, queryset, lambda a: worker_bonus(
            a, amount="0.10", reason="Thank you for careful work.", key="admin-0.10",
            actor=request.user.get_username()))


@admin.register(Bonus)
class BonusAdmin(admin.ModelAdmin):
    list_display = ("worker", "amount", "reason", "status", "provider", "batch", "created_at",
                    "paid_at")
    list_filter = ("status", "provider", "batch")
    readonly_fields = [f.name for f in Bonus._meta.fields]
    actions = ("retry",)

    def has_add_permission(self, request):
        return False

    @admin.action(description="Retry sending (never pays twice)")
    def retry(self, request, queryset):
        for bonus in queryset.select_related("assignment__batch", "assignment__worker"):
            try:
                worker_bonus(bonus.assignment, amount=bonus.amount, reason=bonus.reason,
                             key=bonus.key, actor=request.user.get_username())
            except _REFUSALS as exc:
                self.message_user(request, f"{bonus}: {exc}", messages.ERROR)


@admin.register(ProviderHit)
class ProviderHitAdmin(admin.ModelAdmin):
    list_display = ("external_id", "provider", "batch", "task", "status", "max_assignments",
                    "expires_at")
    list_filter = ("provider", "status", "batch")
    readonly_fields = [f.name for f in ProviderHit._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(ProviderAction)
class ProviderActionAdmin(admin.ModelAdmin):
    list_display = ("created_at", "provider", "action", "target", "ok", "actor", "detail")
    list_filter = ("provider", "action", "ok")
    readonly_fields = [f.name for f in ProviderAction._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
