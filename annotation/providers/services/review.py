"""Marketplace submissions in: sync (our record of each submission), automatic review by gold,
and the requester's approve / reject."""
from datetime import UTC, datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.core.clients.errors import MarketplaceError
from annotation.engine.services.leases import lease_expire
from annotation.engine.services.rejections import rejection_applied, rejection_reversed
from annotation.engine.services.submissions import assignment_return
from annotation.models import Assignment, Batch, Worker
from annotation.providers.base import RELEASES_PLACE, get_provider
from annotation.providers.models import (
    ProviderConfig,
    ProviderHit,
    ProviderSubmission,
)
from annotation.providers.services.common import (
    DONE,
    SyncReport,
    action_log,
    config_for,
    remote_assignment_id,
    require_outside_transaction,
)
from annotation.providers.services.local_review import (
    OVERRIDE_WINDOW,
    clean_note,
    local_assignment_approve,
    local_assignment_reject,
    local_auto_approve,
)
from annotation.providers.services.workers import provider_worker_block, qualification_push


def batch_sync(batch: Batch, *, actor: str = "") -> SyncReport:
    """Fetch every submission of the batch's units, match them to ours, apply the review policy.

    A submission whose worker differs from the one who worked on our site, or that has no
    submitted assignment here, is flagged and never approved automatically.
    """
    require_outside_transaction()
    provider = get_provider(batch.provider)
    report = SyncReport()
    for hit in ProviderHit.objects.filter(batch=batch).exclude(external_id=""):
        try:
            remote = list(provider.list_submissions(hit.external_id))
        except MarketplaceError as exc:
            report.errors.append(f"{hit.external_id}: {exc}")
            action_log(batch, provider.name, "sync", hit.external_id, False, exc, actor)
            continue
        for submission in remote:
            report.seen += 1
            flagged = record_submission(provider.name, hit, submission)
            report.flagged += int(flagged)
            report.matched += int(not flagged)
    batch_review(batch, report=report, actor=actor)
    action_log(batch, provider.name, "sync", batch.title, not report.errors,
         f"seen {report.seen}, flagged {report.flagged}, approved {report.approved}, "
         f"rejected {report.rejected}", actor)
    return report


_FINISHED = ("submitted", "approved", "rejected")


def record_submission(provider_name: str, hit: ProviderHit, remote) -> bool:
    """Our record of one marketplace submission, matched to our assignment. Work the
    marketplace says is finished but that did not happen here (another participant, no
    assignment, not submitted) is flagged; a place in progress or given back is not. A place
    given back releases our lease at once (``place_release``)."""
    assignment = (Assignment.objects.select_related("worker")
                  .filter(provider_assignment_id=remote.external_id).first())
    flag = ProviderSubmission.Flag.NONE
    if assignment is None or assignment.batch_id != hit.batch_id:
        assignment = None
        if remote.status in _FINISHED:  # work claimed done that never happened here
            flag = ProviderSubmission.Flag.UNKNOWN
    elif (assignment.worker.provider != provider_name
          or assignment.worker.external_id != remote.worker_id):
        flag = ProviderSubmission.Flag.WORKER_MISMATCH
        note = (f"Flagged: the marketplace says worker {remote.worker_id} submitted this, "
                f"but {assignment.worker.external_id} worked on it here.")
        Assignment.objects.filter(pk=assignment.pk).update(review_note=note[:500])
    elif remote.status in RELEASES_PLACE:
        place_release(assignment, remote.status)
    elif assignment.status not in DONE and remote.status in _FINISHED:
        flag = ProviderSubmission.Flag.NOT_SUBMITTED
    ProviderSubmission.objects.update_or_create(
        provider=provider_name, external_id=remote.external_id,
        defaults={"hit": hit, "assignment": assignment, "worker_external_id": remote.worker_id,
                  "remote_status": remote.status, "submitted_at": remote.submitted_at,
                  "flag": flag, "synced_at": timezone.now()},
    )
    if flag == ProviderSubmission.Flag.NONE and remote.status in ("approved", "rejected"):
        # Decided on the marketplace (by hand, or MTurk's auto-approval): mirror it here.
        if not _flip(assignment, Assignment.Status.SUBMITTED, remote.status) \
                and remote.status == Assignment.Status.APPROVED:
            # approved there while rejected here: the rejection was overridden on MTurk's site
            _flip(assignment, Assignment.Status.REJECTED, Assignment.Status.APPROVED)
    return flag != ProviderSubmission.Flag.NONE


_ANY_DEADLINE = datetime(9999, 1, 1, tzinfo=UTC)


def place_release(assignment: Assignment, remote_status: str) -> bool:
    """The marketplace gave the place back (returned, timed out, screened out): release our
    lease now, through the engine's own services, so the slot reopens at the same moment.
    A lease that is no longer live (submitted here, already released) is left as it is; the
    conditional UPDATEs make a repeat or a race with a submit or a sweep harmless."""
    if remote_status == "timed_out":  # Prolific's deadline passed, whatever ours says
        return lease_expire(assignment, now=_ANY_DEADLINE)
    return assignment_return(assignment=assignment)


def _flip(assignment: Assignment, current: str, status: str, **fields) -> bool:
    """One conditional UPDATE from ``current`` to ``status``; a rejection (or its reversal)
    moves the slot and the votes in the same transaction (``engine.services.rejections``)."""
    with transaction.atomic():
        flipped = Assignment.objects.filter(pk=assignment.pk, status=current).update(
            status=status, **fields)
        if flipped and status == Assignment.Status.REJECTED:
            rejection_applied(assignment)
        elif flipped and current == Assignment.Status.REJECTED:
            rejection_reversed(assignment)
    return bool(flipped)


def batch_review(batch: Batch, *, report: SyncReport | None = None,
                 actor: str = "") -> SyncReport:
    """Apply the batch's review policy to its submissions awaiting review (matched, not yet
    decided): after a sync, or as soon as a hook says a submission awaits review."""
    require_outside_transaction()
    report = report or SyncReport()
    config = config_for(batch)
    if config.review_policy == ProviderConfig.ReviewPolicy.MANUAL:
        return report
    ready = (ProviderSubmission.objects
             .filter(hit__batch=batch, flag="", remote_status="submitted",
                     assignment__status=Assignment.Status.SUBMITTED)
             .select_related("assignment__worker", "assignment__batch"))
    for submission in ready:
        assignment = submission.assignment
        approve, note = True, ""
        if config.review_policy == ProviderConfig.ReviewPolicy.GOLD:
            approve, note = _gold_verdict(batch, assignment.worker, config)
        try:
            if approve:
                report.approved += int(assignment_approve(assignment, actor=actor or "sync"))
            else:
                report.rejected += int(assignment_reject(assignment, reason=note,
                                                         actor=actor or "sync"))
        except MarketplaceError as exc:
            report.errors.append(f"{submission.external_id}: {exc}")
    return report


def _gold_verdict(batch: Batch, worker: Worker, config: ProviderConfig) -> tuple[bool, str]:
    rows = list(Assignment.objects.filter(batch=batch, worker=worker, gold_correct__isnull=False)
                .values_list("gold_correct", flat=True))
    if not rows or sum(rows) / len(rows) >= config.gold_pass_rate:
        return True, ""
    return False, f"{config.reject_reason} ({sum(rows)} of {len(rows)} check items correct)"


def assignment_approve(assignment: Assignment, *, feedback: str = "",
                       override_rejection: bool = False, actor: str = "") -> bool:
    """Approve (and so pay) a submitted assignment; False when it already was approved. With
    ``override_rejection`` a rejected one is approved too (MTurk's OverrideRejection, within 30
    days of the submission) and its votes count again. Local batches follow the same rules
    without a marketplace (``local_review``)."""
    if assignment.batch.provider == Worker.Provider.LOCAL:
        return local_assignment_approve(assignment, feedback=feedback,
                                        override_rejection=override_rejection, actor=actor)
    if override_rejection and assignment.status == Assignment.Status.REJECTED:
        return _decide(assignment, Assignment.Status.APPROVED, "approve", feedback, actor,
                       current=Assignment.Status.REJECTED, review_note=feedback[:500])
    return _decide(assignment, Assignment.Status.APPROVED, "approve", feedback, actor)


def assignment_reject(assignment: Assignment, *, reason: str, actor: str = "") -> bool:
    """Reject a submitted assignment with a reason the worker sees; False if already rejected."""
    if assignment.batch.provider == Worker.Provider.LOCAL:
        return local_assignment_reject(assignment, reason=reason, actor=actor)
    require_outside_transaction()
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError("A rejection needs a reason the worker can read.")
    return _decide(assignment, Assignment.Status.REJECTED, "reject", reason, actor,
                   review_note=reason[:500])


def worker_block_and_reject(worker: Worker, *, batch: Batch, reason: str,
                            actor: str = "") -> tuple[int, list[str]]:
    """Block ``worker`` and reject, with ``reason``, their work in ``batch`` awaiting review:
    one step for a worker caught answering carelessly. The reason is checked before anything
    is written; each rejection is ``assignment_reject`` (votes out, slot reopened, the reason
    sent to the marketplace). Returns (how many were rejected, the marketplace's refusals);
    a refusal stops nothing else."""
    require_outside_transaction()
    reason = clean_note(reason, what="rejection", required=True)
    errors = []
    try:
        provider_worker_block(worker, reason=reason, actor=actor)
    except MarketplaceError as exc:  # our own block holds; the failure is logged
        errors.append(f"block: {exc}")
    rejected = 0
    for assignment in (Assignment.objects.filter(worker=worker, batch=batch,
                                                 status=Assignment.Status.SUBMITTED)
                       .select_related("batch", "task", "worker")):
        try:
            rejected += int(assignment_reject(assignment, reason=reason, actor=actor))
        except MarketplaceError as exc:
            errors.append(f"task {assignment.task.position}: {exc}")
    return rejected, errors


def _decide(assignment: Assignment, status: str, action: str, note: str, actor: str,
            current: str = Assignment.Status.SUBMITTED, **fields) -> bool:
    """Tell the marketplace first (outside any transaction), then flip our row once.
    ``current`` is REJECTED only for an approval that overrides a rejection."""
    require_outside_transaction()
    if assignment.status == status:
        return False
    if assignment.status != current:
        raise ValidationError(f"Only submitted work can be {status} (this is {assignment.status}).")
    overriding = current == Assignment.Status.REJECTED
    if overriding and (assignment.submitted_at is None
                       or assignment.submitted_at < timezone.now() - OVERRIDE_WINDOW):
        raise ValidationError("A rejection can be overridden only within 30 days of the "
                              "submission.")
    remote = remote_assignment_id(assignment)
    provider = get_provider(assignment.batch.provider)
    if remote:
        options = {"override_rejection": True} if overriding else {}
        try:
            getattr(provider, action)(remote, note, **options)
        except MarketplaceError as exc:
            action_log(assignment.batch, provider.name, action, remote, False, exc, actor)
            raise
    flipped = _flip(assignment, current, status, **fields)
    assignment.status = status
    action_log(assignment.batch, provider.name, "approve_override" if overriding else action,
               remote or str(assignment.uuid), True, note, actor)
    return flipped


def sync_all(*, actor: str = "beat") -> dict[str, SyncReport]:
    """Sync every marketplace batch that has published units and is not long finished, push
    qualifications, and auto-approve local work past its delay (MTurk does its own)."""
    reports = {}
    recent = timezone.now() - timedelta(days=30)  # expired units still collect late reviews
    batches = Batch.objects.exclude(provider=Worker.Provider.LOCAL).filter(
        Q(provider_hits__status__in=[ProviderHit.Status.LIVE, ProviderHit.Status.PAUSED])
        | Q(provider_hits__status=ProviderHit.Status.EXPIRED,
            provider_hits__updated_at__gte=recent)).distinct()
    for batch in batches:
        reports[str(batch.uuid)] = batch_sync(batch, actor=actor)
    qualification_push(actor=actor)
    local_auto_approve()
    return reports
