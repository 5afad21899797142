"""Marketplace operations: one service per operation, called by admin, commands and Celery.

Rules every function here keeps:
- every external call runs OUTSIDE a database transaction (``_outside_transaction`` checks);
  each database write is a short autocommit statement or a conditional ``UPDATE``;
- a row is written *before* a money-moving call (HIT in ``creating``, bonus in ``sending``), so
  an interrupted run resumes without publishing or paying twice;
- launches and bonuses pass the budget guard first; every call is logged in ``ProviderAction``.
"""
import hashlib
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from annotation.core.clients.errors import MarketplaceError, NotSupported
from annotation.engine.services.batches import batch_set_status
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.errors import AssignmentConflict, EngineError
from annotation.engine.services.workers import worker_block, worker_for_external, worker_unblock
from annotation.models import Assignment, Batch, Qualification, QualificationGrant, Task, Worker
from annotation.providers.base import (
    LaunchContext,
    Provider,
    get_provider,
)
from annotation.providers.costs import budget_check, cents
from annotation.providers.models import (
    Bonus,
    ProviderAction,
    ProviderConfig,
    ProviderHit,
    ProviderSubmission,
    QualificationPush,
)
from annotation.providers.selectors import batch_costs, published_studies

_DONE = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED, Assignment.Status.REJECTED)
_TOKEN_MEMORY = timedelta(hours=23)  # MTurk forgets UniqueRequestTokens after 24 hours


class LaunchIncomplete(MarketplaceError):
    """Some units were published, then a call failed; re-running the launch resumes."""


@dataclass
class LaunchReport:
    total: int = 0
    created: int = 0
    reused: int = 0  # published by an earlier (interrupted) run or found by its token


@dataclass
class SyncReport:
    seen: int = 0
    matched: int = 0
    flagged: int = 0
    approved: int = 0
    rejected: int = 0
    errors: list[str] = field(default_factory=list)


# --- helpers -------------------------------------------------------------------------------
def _outside_transaction() -> None:
    if transaction.get_connection().in_atomic_block:
        raise RuntimeError("Marketplace calls must not run inside a database transaction.")


def _log(batch, provider: str, action: str, target: str, ok: bool, detail: str = "",
         actor: str = "") -> None:
    ProviderAction.objects.create(
        batch=batch, provider=provider, action=action, target=target[:200], ok=ok,
        detail=str(detail)[:1000], actor=str(actor)[:150], created_at=timezone.now(),
    )


def config_for(batch: Batch) -> ProviderConfig:
    """The batch's marketplace settings, created with safe defaults on first use."""
    config, _ = ProviderConfig.objects.get_or_create(
        batch=batch, defaults={"completion_code": secrets.token_hex(4).upper()})
    if not config.completion_code:
        config.completion_code = secrets.token_hex(4).upper()
        ProviderConfig.objects.filter(pk=config.pk).update(completion_code=config.completion_code)
    return config


def _remote_assignment(assignment: Assignment) -> str:
    """The marketplace's id when this assignment lives on the batch's marketplace, else ""."""
    if (assignment.batch.provider != Worker.Provider.LOCAL
            and assignment.worker.provider == assignment.batch.provider):
        return assignment.provider_assignment_id
    return ""


def _qualification_type(provider: Provider, qualification: Qualification) -> str:
    ids = dict(qualification.provider_ids or {})
    if not ids.get(provider.name):
        ids[provider.name] = provider.ensure_qualification_type(
            qualification.name, qualification.description)
        Qualification.objects.filter(pk=qualification.pk).update(provider_ids=ids)
        qualification.provider_ids = ids
    return ids[provider.name]


def launch_context(batch: Batch, *, production_confirmed: bool = False,
                   qualification_type_id: str = "") -> LaunchContext:
    config = config_for(batch)
    return LaunchContext(
        title=batch.title, description=batch.description, keywords=config.keywords,
        reward=batch.reward, assignments_per_task=batch.assignments_per_task,
        lease_seconds=batch.lease_seconds, lifetime_seconds=config.lifetime_seconds,
        auto_approval_seconds=config.auto_approval_seconds,
        min_approval_rate=config.min_approval_rate,
        locales=tuple(c.strip().upper() for c in config.locales.split(",") if c.strip()),
        qualification_type_id=qualification_type_id,
        estimated_minutes=config.estimated_minutes, completion_code=config.completion_code,
        production_confirmed=production_confirmed,
    )


def launch_guard(batch: Batch) -> None:
    """Refuse a launch whose full cost (every slot, fees, committed bonuses) passes the budget."""
    provider = get_provider(batch.provider)
    costs = batch_costs(batch)
    budget_check(budget=batch.budget, committed=costs.estimate.bonuses + costs.estimate.bonus_fees,
                 extra=costs.estimate.rewards + costs.estimate.reward_fees,
                 paid_marketplace=provider.paid, what=f"launching “{batch.title}”")


# --- arrivals ------------------------------------------------------------------------------
class StudyNotPublished(EngineError):
    """A Prolific arrival for a study this deployment did not publish for the batch."""


def prolific_arrival_claim(*, batch: Batch, participant_id: str, study_id: str,
                           session_id: str, submit_to: str,
                           now: datetime | None = None) -> Assignment | None:
    """The participant's assignment for this Prolific session: the one on record, or a new
    lease of the batch's next task carrying the session; ``None`` when no task is left.

    All or nothing, in one transaction (no marketplace call is made): the worker row, the
    claim and the session ids commit together, so a failure after the claim leaves no slot
    leased and no worker row. ``SESSION_ID`` (Prolific's submission id) becomes the
    assignment's provider id, so a reload returns the same task.

    Raises ``StudyNotPublished`` unless the batch is on Prolific and ``study_id`` is a study
    this deployment created for it; ``AssignmentConflict`` when the session belongs to another
    participant or batch, or another arrival took it meanwhile; ``NotEligible`` from the claim.
    """
    if batch.provider != Worker.Provider.PROLIFIC or study_id not in published_studies(batch):
        raise StudyNotPublished("This link does not belong to that Prolific study.")
    try:
        with transaction.atomic():
            worker = worker_for_external(Worker.Provider.PROLIFIC, participant_id)
            assignment = Assignment.objects.filter(provider_assignment_id=session_id).first()
            if assignment is not None:
                if assignment.worker_id != worker.pk or assignment.batch_id != batch.pk:
                    raise AssignmentConflict("This session belongs to another participant.")
                return assignment
            assignment = task_claim_next(batch=batch, worker=worker, now=now)
            if assignment is not None:
                _session_attach(assignment, session_id=session_id, study_id=study_id,
                                submit_to=submit_to)
            return assignment
    except IntegrityError:  # another arrival holds this session id; ours rolled back whole
        raise AssignmentConflict("This session is already in use.") from None


def _session_attach(assignment: Assignment, *, session_id: str, study_id: str,
                    submit_to: str) -> None:
    """Record the session on a fresh lease. A lease the worker already held under another
    session keeps its ids (the participant continues that one)."""
    fields = {"provider_assignment_id": session_id, "provider_hit_id": study_id,
              "provider_submit_to": submit_to}
    if Assignment.objects.filter(pk=assignment.pk, provider_assignment_id="").update(**fields):
        for name, value in fields.items():
            setattr(assignment, name, value)
    else:
        assignment.refresh_from_db(fields=list(fields))


# --- launch and life cycle ----------------------------------------------------------------
def batch_launch(batch: Batch, *, actor: str = "", production_confirmed: bool = False,
                 provider: Provider | None = None) -> LaunchReport:
    """Open the batch and publish one unit per task (MTurk) or per batch (Prolific).

    Idempotent: units already published are skipped; a unit whose request went out but whose
    answer was lost is recovered through its deterministic token.
    """
    _outside_transaction()
    provider = provider or get_provider(batch.provider)
    if batch.status == Batch.Status.FINISHED:
        raise ValidationError("A finished batch cannot be launched again.")
    qualification_type = ""
    if batch.required_qualification_id and provider.paid:
        qualification_type = _qualification_type(provider, batch.required_qualification)
    ctx = launch_context(batch, production_confirmed=production_confirmed,
                         qualification_type_id=qualification_type)
    provider.check_ready(ctx)
    launch_guard(batch)
    if batch.status in (Batch.Status.DRAFT, Batch.Status.PAUSED):
        batch_set_status(batch, Batch.Status.ACTIVE)
    units = provider.launch_units(batch, list(Task.objects.filter(batch=batch)))
    report = LaunchReport(total=len(units))
    known = {h.token: h for h in ProviderHit.objects.filter(batch=batch)}
    todo = [u for u in units if not (u.token in known and known[u.token].external_id)]
    report.reused = len(units) - len(todo)
    if not todo:
        return report
    prepared = provider.prepare(ctx)
    for unit in todo:
        hit = known.get(unit.token)
        now = timezone.now()
        if hit is None:
            hit = ProviderHit.objects.create(
                batch=batch, task_id=unit.task_id, provider=provider.name, token=unit.token,
                max_assignments=unit.max_assignments, created_at=now, updated_at=now)
        try:
            found = ""
            if now - hit.created_at > _TOKEN_MEMORY and hasattr(provider, "find_hit"):
                found = provider.find_hit(unit.annotation)
            if found:
                created_id, hit_type, expires, reused = found, prepared, None, True
            else:
                created = provider.create_hit(unit, ctx, prepared)
                created_id, hit_type = created.external_id, created.hit_type_id
                expires, reused = created.expires_at, created.already_existed
        except MarketplaceError as exc:
            _log(batch, provider.name, "launch", unit.annotation, False, exc, actor)
            raise LaunchIncomplete(
                f"Published {report.created + report.reused} of {report.total} units of "
                f"“{batch.title}”, then: {exc}. Run the launch again to resume.",
                definite=exc.definite) from exc
        ProviderHit.objects.filter(pk=hit.pk).update(
            external_id=created_id, hit_type_id=hit_type or prepared,
            status=ProviderHit.Status.LIVE, updated_at=timezone.now(),
            expires_at=expires or now + timedelta(seconds=ctx.lifetime_seconds))
        if unit.task_id:
            Task.objects.filter(pk=unit.task_id).update(provider_hit_id=created_id)
        report.reused += int(reused)
        report.created += int(not reused)
        _log(batch, provider.name, "launch", f"{unit.annotation} → {created_id}", True,
             "found by token" if reused else "created", actor)
    return report


def _each_hit(batch: Batch, statuses, action: str, call, new_status: str, actor: str,
              **update) -> list[str]:
    provider = get_provider(batch.provider)
    errors = []
    for hit in ProviderHit.objects.filter(batch=batch, status__in=statuses).exclude(external_id=""):
        try:
            call(provider, hit)
        except MarketplaceError as exc:
            errors.append(f"{hit.external_id}: {exc}")
            _log(batch, provider.name, action, hit.external_id, False, exc, actor)
            continue
        ProviderHit.objects.filter(pk=hit.pk).update(status=new_status,
                                                     updated_at=timezone.now(), **update)
        _log(batch, provider.name, action, hit.external_id, True, "", actor)
    return errors


def batch_pause(batch: Batch, *, actor: str = "") -> list[str]:
    """Stop new arrivals: our batch first (arrivals are refused at once), then the marketplace."""
    _outside_transaction()
    if batch.status == Batch.Status.ACTIVE:
        batch_set_status(batch, Batch.Status.PAUSED)
    return _each_hit(batch, [ProviderHit.Status.LIVE], "pause",
                     lambda p, h: p.pause(h.external_id), ProviderHit.Status.PAUSED, actor)


def batch_resume(batch: Batch, *, actor: str = "") -> list[str]:
    _outside_transaction()
    until = timezone.now() + timedelta(seconds=config_for(batch).lifetime_seconds)
    errors = _each_hit(batch, [ProviderHit.Status.PAUSED], "resume",
                       lambda p, h: p.resume(h.external_id, until), ProviderHit.Status.LIVE,
                       actor, expires_at=until)
    if batch.status == Batch.Status.PAUSED:
        batch_set_status(batch, Batch.Status.ACTIVE)
    return errors


def batch_extend(batch: Batch, *, seconds: int, actor: str = "") -> list[str]:
    """Push the expiry of every live unit to ``seconds`` from now (MTurk)."""
    _outside_transaction()
    until = timezone.now() + timedelta(seconds=seconds)
    return _each_hit(batch, [ProviderHit.Status.LIVE], "extend",
                     lambda p, h: p.set_expiration(h.external_id, until),
                     ProviderHit.Status.LIVE, actor, expires_at=until)


def batch_expire(batch: Batch, *, actor: str = "") -> list[str]:
    """Close the batch for good, here and on the marketplace. Submitted work can still sync."""
    _outside_transaction()
    if batch.status != Batch.Status.FINISHED and batch.status != Batch.Status.DRAFT:
        batch_set_status(batch, Batch.Status.FINISHED)
    return _each_hit(batch, [ProviderHit.Status.LIVE, ProviderHit.Status.PAUSED], "expire",
                     lambda p, h: p.expire(h.external_id), ProviderHit.Status.EXPIRED, actor,
                     expires_at=timezone.now())


# --- sync and review -----------------------------------------------------------------------
def batch_sync(batch: Batch, *, actor: str = "") -> SyncReport:
    """Fetch every submission of the batch's units, match them to ours, apply the review policy.

    A submission whose worker differs from the one who worked on our site, or that has no
    submitted assignment here, is flagged and never approved automatically.
    """
    _outside_transaction()
    provider = get_provider(batch.provider)
    report = SyncReport()
    for hit in ProviderHit.objects.filter(batch=batch).exclude(external_id=""):
        try:
            remote = list(provider.list_submissions(hit.external_id))
        except MarketplaceError as exc:
            report.errors.append(f"{hit.external_id}: {exc}")
            _log(batch, provider.name, "sync", hit.external_id, False, exc, actor)
            continue
        for submission in remote:
            report.seen += 1
            flagged = _record_submission(provider.name, hit, submission)
            report.flagged += int(flagged)
            report.matched += int(not flagged)
    _review(batch, report, actor)
    _log(batch, provider.name, "sync", batch.title, not report.errors,
         f"seen {report.seen}, flagged {report.flagged}, approved {report.approved}, "
         f"rejected {report.rejected}", actor)
    return report


def _record_submission(provider_name: str, hit: ProviderHit, remote) -> bool:
    assignment = (Assignment.objects.select_related("worker")
                  .filter(provider_assignment_id=remote.external_id).first())
    flag = ProviderSubmission.Flag.NONE
    if assignment is None or assignment.batch_id != hit.batch_id:
        flag, assignment = ProviderSubmission.Flag.UNKNOWN, None
    elif (assignment.worker.provider != provider_name
          or assignment.worker.external_id != remote.worker_id):
        flag = ProviderSubmission.Flag.WORKER_MISMATCH
        note = (f"Flagged: the marketplace says worker {remote.worker_id} submitted this, "
                f"but {assignment.worker.external_id} worked on it here.")
        Assignment.objects.filter(pk=assignment.pk).update(review_note=note[:500])
    elif assignment.status not in _DONE:
        flag = ProviderSubmission.Flag.NOT_SUBMITTED
    ProviderSubmission.objects.update_or_create(
        provider=provider_name, external_id=remote.external_id,
        defaults={"hit": hit, "assignment": assignment, "worker_external_id": remote.worker_id,
                  "remote_status": remote.status, "submitted_at": remote.submitted_at,
                  "flag": flag, "synced_at": timezone.now()},
    )
    if flag == ProviderSubmission.Flag.NONE and remote.status in ("approved", "rejected"):
        # Decided on the marketplace (by hand, or MTurk's auto-approval): mirror it here.
        Assignment.objects.filter(pk=assignment.pk, status=Assignment.Status.SUBMITTED).update(
            status=remote.status)
    return flag != ProviderSubmission.Flag.NONE


def _review(batch: Batch, report: SyncReport, actor: str) -> None:
    config = config_for(batch)
    if config.review_policy == ProviderConfig.ReviewPolicy.MANUAL:
        return
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


def _gold_verdict(batch: Batch, worker: Worker, config: ProviderConfig) -> tuple[bool, str]:
    rows = list(Assignment.objects.filter(batch=batch, worker=worker, gold_correct__isnull=False)
                .values_list("gold_correct", flat=True))
    if not rows or sum(rows) / len(rows) >= config.gold_pass_rate:
        return True, ""
    return False, f"{config.reject_reason} ({sum(rows)} of {len(rows)} check items correct)"


def assignment_approve(assignment: Assignment, *, feedback: str = "", actor: str = "") -> bool:
    """Approve (and so pay) a submitted assignment; False when it already was approved."""
    return _decide(assignment, Assignment.Status.APPROVED, "approve", feedback, actor)


def assignment_reject(assignment: Assignment, *, reason: str, actor: str = "") -> bool:
    """Reject a submitted assignment with a reason the worker sees; False if already rejected."""
    _outside_transaction()
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError("A rejection needs a reason the worker can read.")
    return _decide(assignment, Assignment.Status.REJECTED, "reject", reason, actor,
                   review_note=reason[:500])


def _decide(assignment: Assignment, status: str, action: str, note: str, actor: str,
            **fields) -> bool:
    """Tell the marketplace first (outside any transaction), then flip our row once."""
    _outside_transaction()
    if assignment.status == status:
        return False
    if assignment.status != Assignment.Status.SUBMITTED:
        raise ValidationError(f"Only submitted work can be {status} (this is {assignment.status}).")
    remote = _remote_assignment(assignment)
    provider = get_provider(assignment.batch.provider)
    if remote:
        try:
            getattr(provider, action)(remote, note)
        except MarketplaceError as exc:
            _log(assignment.batch, provider.name, action, remote, False, exc, actor)
            raise
    flipped = Assignment.objects.filter(pk=assignment.pk, status=Assignment.Status.SUBMITTED) \
        .update(status=status, **fields)
    assignment.status = status
    _log(assignment.batch, provider.name, action, remote or str(assignment.uuid), True, note,
         actor)
    return bool(flipped)


# --- money: bonuses ------------------------------------------------------------------------
def bonus_token(assignment: Assignment, key: str) -> str:
    """Deterministic UniqueRequestToken of a bonus: same assignment and key, same token."""
    return "bonus-" + hashlib.sha256(f"{assignment.uuid}:{key}".encode()).hexdigest()[:48]


def worker_bonus(assignment: Assignment, *, amount, reason: str, key: str = "",
                 actor: str = "") -> Bonus:
    """Pay ``amount`` to the assignment's worker once per (assignment, key), budget-guarded.

    Retrying after any failure is safe: the bonus row (created first) carries the token, a paid
    row is never sent again, and only one caller can hold a row in ``sending``.
    """
    _outside_transaction()
    try:
        amount = cents(Decimal(str(amount)))
    except InvalidOperation:
        raise ValidationError(f"Not an amount: {amount!r}") from None
    reason = (reason or "").strip()
    if amount <= 0 or not reason:
        raise ValidationError("A bonus needs a positive amount and a reason.")
    key = (key or f"{amount}:{reason}")[:200]
    batch = assignment.batch
    provider = get_provider(batch.provider)
    bonus = Bonus.objects.filter(assignment=assignment, key=key).first()
    if bonus is None:
        if assignment.status not in _DONE:
            raise ValidationError("Bonuses go to submitted work only.")
        fee = provider.fees().bonus_fee(amount)
        budget_check(budget=batch.budget, committed=batch_costs(batch).committed,
                     extra=amount + fee, paid_marketplace=provider.paid,
                     what=f"a ${amount} bonus")
        try:
            bonus = Bonus.objects.create(
                batch=batch, assignment=assignment, worker=assignment.worker,
                provider=batch.provider, amount=amount, reason=reason[:500], key=key,
                token=bonus_token(assignment, key), created_at=timezone.now())
        except IntegrityError:
            bonus = Bonus.objects.get(assignment=assignment, key=key)
    if bonus.amount != amount:
        raise ValidationError(f"Bonus key {key!r} was already used for ${bonus.amount}.")
    return _send_bonus(bonus, provider, assignment, actor)


def _send_bonus(bonus: Bonus, provider: Provider, assignment: Assignment, actor: str) -> Bonus:
    claimable = [Bonus.Status.PENDING, Bonus.Status.FAILED]
    fresh = timezone.now() - bonus.created_at < _TOKEN_MEMORY
    if provider.bonus_idempotent and fresh:
        claimable += [Bonus.Status.SENDING, Bonus.Status.UNCERTAIN]  # same token: no double pay
    if not Bonus.objects.filter(pk=bonus.pk, status__in=claimable).update(
            status=Bonus.Status.SENDING):
        bonus.refresh_from_db()
        if bonus.status == Bonus.Status.UNCERTAIN:
            raise MarketplaceError(f"Bonus {bonus.uuid} may have been paid: check on "
                                f"{provider.name} and mark it paid or failed by hand.")
        return bonus  # paid already, or another caller is sending it right now
    remote = _remote_assignment(assignment)
    reference = ""
    if remote:
        try:
            reference = provider.send_bonus(
                worker_id=assignment.worker.external_id, assignment_id=remote,
                amount=bonus.amount, reason=bonus.reason, token=bonus.token,
                hit_id=assignment.provider_hit_id)
        except MarketplaceError as exc:
            status = Bonus.Status.FAILED if exc.definite else Bonus.Status.UNCERTAIN
            Bonus.objects.filter(pk=bonus.pk).update(status=status, error=str(exc)[:500])
            _log(bonus.batch, provider.name, "bonus", bonus.token, False, exc, actor)
            raise
    Bonus.objects.filter(pk=bonus.pk).update(status=Bonus.Status.PAID, paid_at=timezone.now(),
                                             external_id=reference[:128], error="")
    _log(bonus.batch, provider.name, "bonus", bonus.token, True,
         f"${bonus.amount} to {assignment.worker.external_id}", actor)
    bonus.refresh_from_db()
    return bonus


@dataclass(frozen=True)
class BonusRow:
    assignment: Assignment
    amount: Decimal
    reason: str
    key: str


def bonus_rows_parse(batch: Batch, rows) -> list[BonusRow]:
    """Validate bonus rows (``assignment``, ``amount``, ``reason``, optional ``key``) up front.

    ``assignment`` is our assignment UUID or the marketplace's assignment id. A bad row raises
    an error naming it, before anything is paid.
    """
    parsed = []
    for number, row in enumerate(rows, start=1):
        ref = (row.get("assignment") or "").strip()
        match = Q(provider_assignment_id=ref)
        try:
            match |= Q(uuid=ref) if len(ref) in (32, 36) else Q(pk__in=[])
            assignment = Assignment.objects.select_related("worker", "batch").filter(
                match, batch=batch).first()
        except ValidationError:
            assignment = None
        if assignment is None:
            raise ValidationError(f"Row {number}: no assignment {ref!r} in this batch")
        try:
            amount = cents(Decimal((row.get("amount") or "").strip()))
        except InvalidOperation:
            raise ValidationError(f"Row {number}: amount {row.get('amount')!r} is not a number") \
                from None
        reason = (row.get("reason") or "").strip()
        if amount <= 0 or not reason:
            raise ValidationError(f"Row {number}: needs a positive amount and a reason")
        parsed.append(BonusRow(assignment, amount, reason, (row.get("key") or "").strip()))
    return parsed


# --- workers and qualifications ------------------------------------------------------------
def qualification_push(*, actor: str = "") -> int:
    """Mirror local qualification grants/revocations of marketplace workers onto the marketplace.

    The on-site qualification test grants locally; this pushes the grant (MTurk:
    AssociateQualificationWithWorker). Returns the number of pushes made.
    """
    _outside_transaction()
    done = 0
    grants = (QualificationGrant.objects.select_related("worker", "qualification")
              .exclude(worker__provider=Worker.Provider.LOCAL))
    for grant in grants:
        provider = get_provider(grant.worker.provider)
        pushed = QualificationPush.objects.filter(grant=grant, provider=provider.name).first()
        if pushed is not None and pushed.revoked == grant.revoked:
            continue
        if pushed is None and grant.revoked:
            continue  # never granted there, nothing to take back
        try:
            type_id = _qualification_type(provider, grant.qualification)
            if grant.revoked:
                provider.revoke_qualification(type_id, grant.worker.external_id,
                                              "Qualification revoked")
            else:
                provider.grant_qualification(type_id, grant.worker.external_id)
        except NotSupported:
            continue
        except MarketplaceError as exc:
            _log(None, provider.name, "qualification", str(grant), False, exc, actor)
            continue
        QualificationPush.objects.update_or_create(
            grant=grant, provider=provider.name,
            defaults={"revoked": grant.revoked, "pushed_at": timezone.now()})
        _log(None, provider.name, "qualification", str(grant), True,
             "revoked" if grant.revoked else "granted", actor)
        done += 1
    return done


def provider_worker_block(worker: Worker, *, reason: str, actor: str = "") -> None:
    """Block here, and on the worker's marketplace where it can block."""
    _outside_transaction()
    worker_block(worker, reason)
    _remote_worker_call(worker, "block", lambda p: p.block(worker.external_id, reason), actor)


def provider_worker_unblock(worker: Worker, *, actor: str = "") -> None:
    _outside_transaction()
    worker_unblock(worker)
    _remote_worker_call(worker, "unblock", lambda p: p.unblock(worker.external_id), actor)


def _remote_worker_call(worker: Worker, action: str, call, actor: str) -> None:
    if worker.provider == Worker.Provider.LOCAL:
        return
    provider = get_provider(worker.provider)
    try:
        call(provider)
    except NotSupported:
        return
    except MarketplaceError as exc:
        _log(None, provider.name, action, worker.external_id, False, exc, actor)
        raise
    _log(None, provider.name, action, worker.external_id, True, "", actor)


def workers_notify(batch: Batch, *, subject: str, message: str, actor: str = "") -> list[str]:
    """Message every marketplace worker who worked on the batch; returns ids not reached."""
    _outside_transaction()
    provider = get_provider(batch.provider)
    ids = sorted(set(Assignment.objects.filter(batch=batch, worker__provider=provider.name)
                     .values_list("worker__external_id", flat=True)))
    if not ids:
        return []
    failed = provider.notify(ids, subject, message)
    _log(batch, provider.name, "notify", f"{len(ids)} workers", not failed,
         f"not reached: {failed}" if failed else subject, actor)
    return failed


def sync_all(*, actor: str = "beat") -> dict[str, SyncReport]:
    """Sync every marketplace batch that has published units and is not long finished."""
    reports = {}
    recent = timezone.now() - timedelta(days=30)  # expired units still collect late reviews
    batches = Batch.objects.exclude(provider=Worker.Provider.LOCAL).filter(
        Q(provider_hits__status__in=[ProviderHit.Status.LIVE, ProviderHit.Status.PAUSED])
        | Q(provider_hits__status=ProviderHit.Status.EXPIRED,
            provider_hits__updated_at__gte=recent)).distinct()
    for batch in batches:
        reports[str(batch.uuid)] = batch_sync(batch, actor=actor)
    qualification_push(actor=actor)
    return reports
