"""The product's review page for one batch: each answer beside the task the worker saw, with
their time and quality flags; filters (status, worker, answer, time, gold, flags); approve or
reject the ticked rows or every row the filter lists (the shared ``ReviewForm``), with j/k
and a/r on the keyboard; and blocking a worker from the same screen after a confirmation,
with a reason the worker reads."""
import uuid
from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render

from annotation.core.clients.errors import MarketplaceError
from annotation.engine.hit_types import get_hit_type
from annotation.engine.selectors_workers import worker_display
from annotation.models import Assignment, Batch, Worker
from annotation.providers.admin_review import ReviewForm, assignments_page, review_apply
from annotation.providers.services import provider_worker_block, worker_block_and_reject
from studies.links import study_redirect, study_reverse

from .forms import BlockForm
from .selectors import FLAGS, GOLD, STATUSES, answer_words, review_filter, review_rows, task_view
from .views import study_admin

REVIEWABLE = ("submitted", "rejected")


@study_admin
def batch_review(request, study, batch_uuid):
    batch = get_object_or_404(Batch, uuid=batch_uuid, study=study)
    hit = get_hit_type(batch.hit_type)
    f = review_filter(batch, request.GET)
    rows = review_rows(batch, f)
    reviewable = f.status in REVIEWABLE
    form = ReviewForm(assignments=rows, matching=True)
    if request.method == "POST" and reviewable:
        form = ReviewForm(request.POST, assignments=rows, matching=True)
        if form.is_valid():
            review_apply(request, form)
            return redirect(request.get_full_path())
    page = assignments_page(rows, request.GET.get("page"))
    shown: dict[int, dict] = {}  # one task's content per page, however many answers it has
    for assignment in page:
        assignment.person = worker_display(assignment.worker)
        assignment.words = answer_words(hit, assignment.answer)
        assignment.flag_words = [(FLAGS.get(flag.get("code"), flag.get("code")),
                                  flag.get("detail", "")) for flag in assignment.flags or []
                                 if isinstance(flag, dict)]
        if assignment.task_id not in shown:
            shown[assignment.task_id] = task_view(hit, assignment.task)
        assignment.shown = shown[assignment.task_id]
    query = f.query()
    return render(request, "annotation/console/review.html", {
        "batch": batch, "hit": hit, "page": page, "form": form, "f": f,
        "count": page.paginator.count, "reviewable": reviewable,
        "statuses": STATUSES, "flags": FLAGS, "gold": GOLD, "answers": f.answer_values,
        "query": urlencode(query), "has_filter": bool(set(query) - {"status"}),
        "block_url": study_reverse(request, "console:block", batch.uuid)})


@study_admin
def worker_block_page(request, study, batch_uuid):
    """GET: what blocking ``?worker=<uuid>`` means, and the reason to give; POST: block."""
    batch = get_object_or_404(Batch, uuid=batch_uuid, study=study)
    worker = get_object_or_404(Worker.objects.select_related("user"),
                               uuid=_uuid(request.GET.get("worker")))
    pending = Assignment.objects.filter(batch=batch, worker=worker,
                                        status=Assignment.Status.SUBMITTED).count()
    form = BlockForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        reason, actor = form.cleaned_data["reason"], request.user.get_username()
        rejected, errors = 0, []
        try:
            if form.cleaned_data["reject_pending"]:
                rejected, errors = worker_block_and_reject(worker, batch=batch, reason=reason,
                                                           actor=actor)
            else:
                provider_worker_block(worker, reason=reason, actor=actor)
        except MarketplaceError as exc:  # our own block holds; the marketplace's is logged
            errors = [str(exc)]
        except ValidationError as exc:  # the reason refused before anything was written
            form.add_error("reason", exc.messages)
        if form.is_valid():
            return _blocked(request, batch, worker, rejected, errors)
    return render(request, "annotation/console/block.html", {
        "batch": batch, "worker": worker, "person": worker_display(worker),
        "pending": pending, "form": form})


def _blocked(request, batch, worker, rejected, errors):
    messages.success(request, f"Blocked {worker_display(worker)}"
                              + (f" and rejected {rejected} answer(s)" if rejected else "")
                              + ". They see your reason.")
    for error in errors:
        messages.warning(request, f"Marketplace: {error}")
    return study_redirect(request, "console:review", batch.uuid)


def _uuid(value):
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None
