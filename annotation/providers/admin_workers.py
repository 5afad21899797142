"""Workers in the admin: the list (with whether each block reached the marketplace), block /
unblock / retry actions, and a page per worker — their record, earnings, block state and
assignments, where their work can be approved or rejected. Every button calls one service."""
import uuid

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path, reverse
from django.utils.html import format_html

from annotation.core.clients.errors import MarketplaceError
from annotation.engine.selectors_workers import (
    worker_assignments,
    worker_batches_awaiting_review,
    worker_display,
    worker_summary,
)
from annotation.engine.worker_panels import panels_for
from annotation.models import Batch, Worker
from annotation.providers.admin_review import (
    REVIEWABLE,
    ReviewForm,
    assignments_page,
    review_apply,
)
from annotation.providers.selectors import marketplace_block_state, with_marketplace_block
from annotation.providers.selectors_payments import payments_overview
from annotation.providers.services import (
    provider_worker_block,
    provider_worker_unblock,
    worker_block_and_reject,
    worker_marketplace_block,
)


def _block(worker, actor):
    provider_worker_block(worker, reason=f"Blocked by {actor}", actor=actor)


def _unblock(worker, actor):
    provider_worker_unblock(worker, actor=actor)


def _retry(worker, actor):
    if not worker_marketplace_block(worker, actor=actor):
        raise MarketplaceError("nothing to send (not blocked here, or no marketplace block)")


@admin.register(Worker)
class WorkerAdmin(admin.ModelAdmin):
    list_display = ("person", "provider", "blocked", "blocked_reason", "on_marketplace",
                    "created_at", "overview_link")
    list_filter = ("provider", "blocked")
    search_fields = ("external_id", "user__username")
    # Blocking goes through the actions and the overview's buttons (they reach the marketplace),
    # never through a checkbox on this form.
    readonly_fields = ("overview_link", "blocked", "blocked_reason", "on_marketplace")
    actions = ("block", "unblock", "retry_marketplace_block")

    def get_queryset(self, request):
        return with_marketplace_block(super().get_queryset(request).select_related("user"))

    @admin.display(description="Worker", ordering="external_id")
    def person(self, obj):
        return worker_display(obj)

    @admin.display(description="On their marketplace")
    def on_marketplace(self, obj):
        return marketplace_block_state(obj)[0]

    @admin.display(description="Overview")
    def overview_link(self, obj):
        if obj.pk is None:
            return "—"
        return format_html('<a href="{}">Overview</a>',
                           reverse("admin:annotation_worker_overview", args=[obj.pk]))

    # --- actions -----------------------------------------------------------------------------
    @admin.action(description="Block (here, and on their marketplace where it can block)")
    def block(self, request, queryset):
        self._each(request, queryset, "blocked", _block)

    @admin.action(description="Unblock (here, and on their marketplace)")
    def unblock(self, request, queryset):
        self._each(request, queryset, "unblocked", _unblock)

    @admin.action(description="Retry a failed marketplace block")
    def retry_marketplace_block(self, request, queryset):
        self._each(request, queryset, "blocked on their marketplace", _retry)

    def _each(self, request, queryset, verb, call):
        done = 0
        for worker in queryset:
            try:
                call(worker, request.user.get_username())
            except MarketplaceError as exc:  # our own flag holds; the failure is logged
                self.message_user(request, f"{worker_display(worker)}: not {verb} on the "
                                           f"marketplace: {exc}", messages.ERROR)
            else:
                done += 1
        if done:
            self.message_user(request, f"{done} worker(s) {verb}.")

    # --- the worker's page --------------------------------------------------------------------
    def get_urls(self):
        return [path("<int:pk>/overview/", self.admin_site.admin_view(self.overview_view),
                     name="annotation_worker_overview"), *super().get_urls()]

    def overview_view(self, request, pk):
        if not self.has_view_permission(request):
            raise PermissionDenied
        worker = get_object_or_404(with_marketplace_block(
            Worker.objects.select_related("user")), pk=pk)
        assignments = worker_assignments(worker)
        form = ReviewForm(assignments=assignments)
        if request.method == "POST":
            if not self.has_change_permission(request, worker):
                raise PermissionDenied
            if request.POST.get("op") == "block" and request.POST.get("reject_batch"):
                self._block_and_reject(request, worker)
                return redirect(request.get_full_path())
            op = _OPS.get(request.POST.get("op", ""))
            if op is not None:
                self._each(request, Worker.objects.filter(pk=worker.pk), op[0], op[1])
                return redirect(request.get_full_path())
            form = ReviewForm(request.POST, assignments=assignments)
            if form.is_valid():
                review_apply(request, form)
                return redirect(request.get_full_path())
        page = assignments_page(assignments, request.GET.get("page"))
        state, retry = marketplace_block_state(worker)
        context = {
            **self.admin_site.each_context(request), "opts": self.model._meta,
            "title": f"Worker {worker_display(worker)}", "worker": worker,
            "person": worker_display(worker), "summary": worker_summary(worker),
            "marketplace_state": state, "retry": retry,
            "payments": payments_overview(worker=worker, by="batch"),
            "page": page, "form": form, "reviewable": REVIEWABLE,
            "awaiting_review": worker_batches_awaiting_review(worker),
            "panels": panels_for(worker),  # what later apps know (e.g. a reliability estimate)
        }
        return render(request, "admin/annotation/worker/overview.html", context)


    def _block_and_reject(self, request, worker):
        """Block, and reject the worker's work awaiting review in the chosen batch."""
        batch = Batch.objects.filter(uuid=_uuid_or_none(request.POST["reject_batch"])).first()
        if batch is None:
            self.message_user(request, "Choose one of the listed batches.", messages.ERROR)
            return
        try:
            rejected, errors = worker_block_and_reject(
                worker, batch=batch, reason=request.POST.get("reason", ""),
                actor=request.user.get_username())
        except ValidationError as exc:
            self.message_user(request, "; ".join(exc.messages), messages.ERROR)
            return
        self.message_user(request, f"{worker_display(worker)} blocked; {rejected} assignment(s) "
                                   f"in “{batch.title}” rejected.")
        for error in errors:
            self.message_user(request, f"The marketplace refused: {error}", messages.ERROR)


def _uuid_or_none(text: str):
    try:
        return uuid.UUID(text)
    except ValueError:
        return None


_OPS = {"block": ("blocked", _block), "unblock": ("unblocked", _unblock),
        "retry": ("blocked on their marketplace", _retry)}
