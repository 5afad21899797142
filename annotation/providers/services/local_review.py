"""Approve and reject work on local batches by Mechanical Turk's rules, so a requester who knows
MTurk finds the same behaviour here (ApproveAssignment / RejectAssignment, API 2017-01-17):

- only a *submitted* assignment can be approved or rejected;
- a rejection needs a reason the worker can read (MTurk's RequesterFeedback; the same
  characters are refused: ASCII controls other than tab, line feed and carriage return);
- a *rejected* assignment can still be approved when the requester explicitly overrides the
  rejection (``OverrideRejection``), and only if it was submitted within the last 30 days;
- an *approved* assignment can never be rejected;
- work nobody reviewed is approved automatically once the batch's auto-approval delay
  (``ProviderConfig.auto_approval_seconds``, MTurk's AutoApprovalDelayInSeconds) has passed
  since it was submitted.

Each decision is one conditional UPDATE on the assignment's current status, so two admins (or an
admin and the auto-approval) racing on one assignment flip it once; the loser gets ``False``
(same decision already made) or a refusal naming the state it found. Decisions are logged in
the same action log as the marketplaces' (provider ``local``). A rejection, and its reversal,
also move the slot and the work's votes in the same transaction (``engine.services.rejections``).
"""
from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from annotation.core.row_checks import control_problem
from annotation.engine.services.rejections import rejection_applied, rejection_reversed
from annotation.models import Assignment, Batch, Worker
from annotation.providers.models import ProviderConfig
from annotation.providers.services.common import action_log

OVERRIDE_WINDOW = timedelta(days=30)
REASON_MAX = 500  # our review_note column (MTurk allows 1,024)
_DEFAULT_AUTO_APPROVAL = ProviderConfig._meta.get_field("auto_approval_seconds").default
S = Assignment.Status


def clean_note(text: str, *, what: str, required: bool) -> str:
    text = (text or "").strip()
    if required and not text:
        raise ValidationError(f"A {what} needs a reason the worker can read.")
    if len(text) > REASON_MAX:
        raise ValidationError(f"The {what} reason is {len(text)} characters; at most "
                              f"{REASON_MAX}.")
    if control_problem(text):
        raise ValidationError(f"The {what} reason contains control characters.")
    return text


def _require_local(assignment: Assignment) -> None:
    if assignment.batch.provider != Worker.Provider.LOCAL:
        raise ValidationError("This batch is on a marketplace: review it there "
                              "(assignment_approve / assignment_reject).")


def _refusal(assignment: Assignment, wanted: str) -> ValidationError:
    assignment.refresh_from_db(fields=["status", "submitted_at"])
    if wanted == S.REJECTED and assignment.status == S.APPROVED:
        return ValidationError("Approved work cannot be rejected.")
    if wanted == S.APPROVED and assignment.status == S.REJECTED:
        return ValidationError("This work was rejected: approve it again only by overriding the "
                               "rejection, within 30 days of its submission.")
    return ValidationError(f"Only submitted work can be {wanted} (this is "
                           f"{assignment.status}).")


def local_assignment_approve(assignment: Assignment, *, feedback: str = "",
                             override_rejection: bool = False, actor: str = "",
                             now: datetime | None = None) -> bool:
    """Approve submitted work (or, with ``override_rejection``, rejected work submitted in the
    last 30 days). True when this call approved it; False when it already was approved."""
    _require_local(assignment)
    feedback = clean_note(feedback, what="approval", required=False)
    now = now or timezone.now()
    fields = {"status": S.APPROVED}
    if feedback:
        fields["review_note"] = feedback
    action = "approve"
    flipped = Assignment.objects.filter(pk=assignment.pk, status=S.SUBMITTED).update(**fields)
    if not flipped and override_rejection:
        action = "approve_override"  # the rejection's reason no longer holds
        with transaction.atomic():
            flipped = Assignment.objects.filter(
                pk=assignment.pk, status=S.REJECTED, submitted_at__gte=now - OVERRIDE_WINDOW,
            ).update(**{**fields, "review_note": feedback})
            if flipped:
                rejection_reversed(assignment)
    if not flipped:
        error = _refusal(assignment, S.APPROVED)
        if assignment.status == S.APPROVED:
            return False
        if override_rejection and assignment.status == S.REJECTED:
            raise ValidationError("A rejection can be overridden only within 30 days of the "
                                  "submission.")
        raise error
    assignment.status = S.APPROVED
    if feedback or action == "approve_override":
        assignment.review_note = feedback
    action_log(assignment.batch, Worker.Provider.LOCAL, action, str(assignment.uuid), True,
               feedback, actor)
    return True


def local_assignment_reject(assignment: Assignment, *, reason: str, actor: str = "") -> bool:
    """Reject submitted work with a reason the worker sees. True when this call rejected it;
    False when it already was rejected."""
    _require_local(assignment)
    reason = clean_note(reason, what="rejection", required=True)
    with transaction.atomic():
        flipped = Assignment.objects.filter(pk=assignment.pk, status=S.SUBMITTED).update(
            status=S.REJECTED, review_note=reason)
        if flipped:
            rejection_applied(assignment)
    if not flipped:
        error = _refusal(assignment, S.REJECTED)
        if assignment.status == S.REJECTED:
            return False
        raise error
    assignment.status, assignment.review_note = S.REJECTED, reason
    action_log(assignment.batch, Worker.Provider.LOCAL, "reject", str(assignment.uuid), True,
               reason, actor)
    return True


def local_auto_approve(*, now: datetime | None = None, actor: str = "auto-approval") -> int:
    """Approve local work left submitted longer than its batch's auto-approval delay (the
    batch's marketplace settings, else the 3-day default). Returns how many were approved."""
    now = now or timezone.now()
    delays = dict(ProviderConfig.objects.filter(batch__provider=Worker.Provider.LOCAL)
                  .values_list("batch_id", "auto_approval_seconds"))
    waiting = (Assignment.objects.filter(status=S.SUBMITTED, batch__provider=Worker.Provider.LOCAL)
               .values_list("batch_id", flat=True).distinct())
    done = 0
    for batch_id in waiting:
        due = now - timedelta(seconds=delays.get(batch_id, _DEFAULT_AUTO_APPROVAL))
        flipped = Assignment.objects.filter(batch_id=batch_id, status=S.SUBMITTED,
                                            submitted_at__lte=due).update(status=S.APPROVED)
        if flipped:
            action_log(Batch.objects.get(pk=batch_id), Worker.Provider.LOCAL, "auto_approve",
                       f"{flipped} assignment(s)", True, f"submitted before {due:%Y-%m-%d %H:%M}",
                       actor)
        done += flipped
    return done
