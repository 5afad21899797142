"""Two admin pages for any batch, local or marketplace: review (approve / reject submitted work,
MTurk's rules — see ``services/local_review.py``) and payments (base + bonuses + fees, paid vs
owed vs pending, in total and per worker). Mixed into the marketplace batch admin; the Batch
admin links here for local batches."""
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path

from annotation.engine.selectors import assignments_flagged, batch_problems
from annotation.engine.selectors_workers import worker_display
from annotation.models import Assignment, Batch
from annotation.providers.admin_review import ReviewForm, assignments_page, review_apply
from annotation.providers.selectors_payments import payments_overview

_SHOWN = {"submitted": "awaiting review", "rejected": "rejected (a local rejection can be "
                                                     "overridden within 30 days)"}
_FLAG_FILTERS = {"": "all", "any": "flagged only", "too_fast": "too fast",
                 "paste_heavy": "paste-heavy", "near_duplicate": "near-duplicate"}


class BatchMoneyViews:
    """``<pk>/review/`` and ``<pk>/payments/`` on a ModelAdmin of batches."""

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path("<int:pk>/review/", view(self.review_view),
                 name="annotation_marketplacebatch_review"),
            path("<int:pk>/payments/", view(self.payments_view),
                 name="annotation_marketplacebatch_payments"),
            *super().get_urls(),
        ]

    def _context(self, request, title, batch):
        return {**self.admin_site.each_context(request), "opts": self.model._meta,
                "title": title, "batch": batch}

    def review_view(self, request, pk):
        if not self.has_view_permission(request):
            raise PermissionDenied
        batch = get_object_or_404(Batch, pk=pk)
        shown = request.GET.get("status", "submitted")
        if shown not in _SHOWN:
            shown = "submitted"
        flag = request.GET.get("flag", "")
        if flag not in _FLAG_FILTERS:
            flag = ""
        rows = assignments_flagged(
            Assignment.objects.filter(batch=batch, status=shown)
            .select_related("task", "worker__user").order_by("submitted_at", "pk"), flag)
        form = ReviewForm(assignments=rows, matching=True)
        if request.method == "POST":
            if not self.has_change_permission(request):
                raise PermissionDenied
            form = ReviewForm(request.POST, assignments=rows, matching=True)
            if form.is_valid():
                review_apply(request, form)
                return redirect(request.get_full_path())
        page = assignments_page(rows, request.GET.get("page"))
        for assignment in page:
            assignment.person = worker_display(assignment.worker)
        problems, problem_counts = batch_problems(batch)
        for problem in problems:
            problem.person = worker_display(problem.worker)
        context = {**self._context(request, f"Review “{batch.title}”", batch), "page": page,
                   "form": form, "shown": shown, "choices": _SHOWN,
                   "problems": problems, "problem_counts": problem_counts,
                   "flag": flag, "flag_filters": _FLAG_FILTERS}
        return render(request, "admin/annotation/marketplacebatch/review.html", context)

    def payments_view(self, request, pk):
        if not self.has_view_permission(request):
            raise PermissionDenied
        batch = get_object_or_404(Batch, pk=pk)
        context = {**self._context(request, f"Payments for “{batch.title}”", batch),
                   "overview": payments_overview(batch=batch, by="batch"),
                   "by_worker": payments_overview(batch=batch, by="worker")}
        return render(request, "admin/annotation/marketplacebatch/payments.html", context)
