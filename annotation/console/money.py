"""A batch's money page in the product: spend with fees (committed, approved, paid), approving
everything submitted (or what the review filter lists), bonuses per worker with a reason
(refused above the budget), and payment — on a marketplace approving pays and bonuses are sent
there (the provider services); for a local batch the admin pays outside and records it here
("mark paid"), with a CSV of what is owed per worker. Every write is one service call."""
import csv
import uuid
from dataclasses import replace
from decimal import Decimal

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from annotation.core.clients.errors import MarketplaceError
from annotation.core.csv_safety import SafeWriter
from annotation.engine.selectors_workers import worker_display
from annotation.models import Assignment, Batch, Bonus, Worker
from annotation.providers.admin_review import ReviewForm, review_apply
from annotation.providers.costs import BudgetExceeded
from annotation.providers.selectors import batch_costs
from annotation.providers.selectors_payments import (
    PayoutDue,
    local_payouts_due,
    payments_overview,
)
from annotation.providers.services import local_payout_record, worker_bonus
from annotation.providers.services.common import DONE
from studies.links import study_redirect

from .forms import BonusForm, PayoutForm
from .selectors import review_filter, review_rows
from .views import _batch, study_admin

_BONUS_REFUSALS = (BudgetExceeded, MarketplaceError, ValidationError)
_UNSENT = (Bonus.Status.PENDING, Bonus.Status.FAILED)
EXPORT_COLUMNS = ("worker", "worker_id", "provider", "approved_answers", "earned_usd",
                  "paid_usd", "owed_usd")


def _local(batch: Batch) -> bool:
    return batch.provider == Worker.Provider.LOCAL


def money_lines(batch: Batch) -> list[PayoutDue]:
    """Per worker: earned, paid and owed. Local: payouts recorded here; a marketplace: what it
    confirmed (approved rewards, paid bonuses) against bonuses it has not (yet) paid."""
    if _local(batch):
        return local_payouts_due(batch)
    lines = payments_overview(batch=batch, by="worker").lines
    workers = Worker.objects.in_bulk([line.key for line in lines])
    return [PayoutDue(worker=workers[line.key], person=line.title,
                      approved=line.counts.get(Assignment.Status.APPROVED, 0),
                      earned=line.paid.base + line.paid.bonus + line.owed.base + line.owed.bonus,
                      paid=line.paid.base + line.paid.bonus) for line in lines]


def _bonus_workers(batch: Batch) -> list[tuple[str, str]]:
    workers = (Worker.objects.filter(assignments__batch=batch, assignments__status__in=DONE)
               .select_related("user").distinct())
    return sorted(((str(w.uuid), worker_display(w)) for w in workers), key=lambda c: c[1])


@study_admin
@require_GET
def batch_money(request, study, batch_uuid):
    batch = _batch(study, batch_uuid)
    return _page(request, batch, BonusForm(workers=_bonus_workers(batch),
                                           initial={"key": uuid.uuid4().hex}))


def _page(request, batch, bonus_form, status=200):
    costs = batch_costs(batch)
    overview = payments_overview(batch=batch).total
    lines = money_lines(batch)
    paid = sum((line.paid for line in lines), Decimal("0"))
    if not _local(batch):
        paid += overview.paid.fees
    return render(request, "annotation/console/money.html", {
        "batch": batch, "local": _local(batch), "costs": costs, "overview": overview,
        "paid": paid, "lines": lines, "owed": sum((line.outstanding for line in lines),
                                                  Decimal("0")),
        "submitted": Assignment.objects.filter(batch=batch,
                                               status=Assignment.Status.SUBMITTED).count(),
        "bonuses": Bonus.objects.filter(batch=batch).select_related("worker__user")
                   .order_by("-created_at", "-pk")[:100],
        "unsent": _UNSENT, "bonus_form": bonus_form}, status=status)


@study_admin
@require_POST
def money_approve(request, study, batch_uuid):
    """Approve every submitted answer, or those the review filter in the query string lists
    (only submitted ones: a rejection is overridden on the review page)."""
    batch = _batch(study, batch_uuid)
    rows = review_rows(batch, replace(review_filter(batch, request.GET), status="submitted"))
    form = ReviewForm({"decision": "approve", "matching": "on",
                       "reason": request.POST.get("reason", "")},
                      assignments=rows, matching=True)
    if form.is_valid():
        review_apply(request, form)
    else:
        for error in form.non_field_errors() or ["Nothing was approved."]:
            messages.error(request, error)
    return study_redirect(request, "console:money", batch.uuid)


@study_admin
@require_POST
def money_bonus(request, study, batch_uuid):
    """A bonus to one worker, on their latest answer in the batch (approved ones first)."""
    batch = _batch(study, batch_uuid)
    form = BonusForm(request.POST, workers=_bonus_workers(batch))
    if form.is_valid():
        data = form.cleaned_data
        done = (Assignment.objects.filter(batch=batch, worker__uuid=data["worker"],
                                          status__in=DONE)
                .select_related("batch", "worker").order_by("-submitted_at", "-pk"))
        assignment = done.filter(status=Assignment.Status.APPROVED).first() or done.first()
        try:
            bonus = worker_bonus(assignment, amount=data["amount"], reason=data["reason"],
                                 key=f"console:{data['key']}",
                                 actor=request.user.get_username())
        except _BONUS_REFUSALS as exc:
            form.add_error(None, getattr(exc, "messages", None) or [str(exc)])
        else:
            messages.success(request, f"Bonus of ${bonus.amount} to "
                                      f"{worker_display(bonus.worker)}: {bonus.get_status_display()}.")
            return study_redirect(request, "console:money", batch.uuid)
    return _page(request, batch, form, status=400)


@study_admin
@require_POST
def money_bonus_retry(request, study, batch_uuid, bonus_uuid):
    """Send again a bonus the marketplace refused or that was never sent (same token: paid
    at most once)."""
    batch = _batch(study, batch_uuid)
    bonus = get_object_or_404(Bonus.objects.select_related("assignment__batch",
                                                           "assignment__worker"),
                              uuid=bonus_uuid, batch=batch, status__in=_UNSENT)
    try:
        bonus = worker_bonus(bonus.assignment, amount=bonus.amount, reason=bonus.reason,
                             key=bonus.key, actor=request.user.get_username())
    except _BONUS_REFUSALS as exc:
        messages.error(request, "Not sent: " + "; ".join(getattr(exc, "messages", None)
                                                         or [str(exc)]))
    else:
        messages.success(request, f"Bonus of ${bonus.amount}: {bonus.get_status_display()}.")
    return study_redirect(request, "console:money", batch.uuid)


@study_admin
@require_POST
def money_payout(request, study, batch_uuid):
    """Local batches: record that one worker (or everyone owed) was paid what they are owed."""
    batch = _batch(study, batch_uuid)
    if not _local(batch):
        raise Http404("Marketplace batches are paid by approving their work.")
    form = PayoutForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose whom you paid; a reference is at most 200 characters.")
        return study_redirect(request, "console:money", batch.uuid)
    who, reference = form.cleaned_data["worker"], form.cleaned_data["reference"]
    due = [line for line in local_payouts_due(batch) if line.outstanding > 0
           and (who == "all" or str(line.worker.uuid) == who)]
    recorded = []
    for line in due:
        try:
            payout = local_payout_record(batch, line.worker, reference=reference,
                                         actor=request.user.get_username())
        except ValidationError as exc:
            messages.error(request, "; ".join(exc.messages))
            break
        if payout is not None:
            recorded.append(payout)
    if recorded:
        total = sum(p.amount for p in recorded)
        messages.success(request, f"Recorded ${total} paid to {len(recorded)} worker"
                                  f"{'s' if len(recorded) != 1 else ''}.")
    elif not due:
        messages.info(request, "Nobody is owed anything for this batch.")
    return study_redirect(request, "console:money", batch.uuid)


@study_admin
@require_GET
def money_export(request, study, batch_uuid):
    """What each worker earned, was paid and is owed, as CSV (full precision)."""
    batch = _batch(study, batch_uuid)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    stamp = timezone.now().strftime("%Y%m%d")
    response["Content-Disposition"] = f'attachment; filename="owed-{batch.uuid}-{stamp}.csv"'
    writer = SafeWriter(response, quoting=csv.QUOTE_MINIMAL)
    writer.writerow(EXPORT_COLUMNS)
    for line in money_lines(batch):
        writer.writerow([line.person, line.worker.external_id, line.worker.provider,
                         line.approved, line.earned, line.paid, line.outstanding])
    return response
