"""Reads of the engine: progress, cost, worker statistics. No writes here."""
from dataclasses import dataclass
from decimal import Decimal
from statistics import median

from django.db.models import Count, Exists, F, OuterRef, Q, Sum, Window
from django.db.models.functions import Coalesce, RowNumber
from django.utils.translation import gettext, ngettext

from annotation.core.marketplaces import get_provider
from annotation.core.money import ZERO, cents
from annotation.engine import statements
from annotation.engine.hit_types import get_hit_type
from annotation.models import (
    Assignment,
    Batch,
    Bonus,
    QualificationGrant,
    Task,
    TaskProblem,
    Worker,
)


@dataclass(frozen=True)
class BatchProgress:
    tasks: int
    slots: int  # tasks × N
    done: int  # counted submissions not rejected (Assignment.COUNTS_AS_DONE)
    leased: int  # live leases
    remaining: int
    late_uncounted: int

    @property
    def percent(self) -> float:
        return 100.0 * self.done / self.slots if self.slots else 0.0


def batch_progress(batch: Batch) -> BatchProgress:
    tasks = Task.objects.filter(batch=batch).aggregate(
        n=Count("id"), slots=Sum("max_assignments")
    )
    counts = Assignment.objects.filter(batch=batch).aggregate(
        done=Count("id", filter=Assignment.COUNTS_AS_DONE),
        leased=Count("id", filter=Q(status=Assignment.Status.LEASED)),
        late=Count("id", filter=Q(counted=False, late=True)),
    )
    slots = tasks["slots"] or 0
    return BatchProgress(
        tasks=tasks["n"],
        slots=slots,
        done=counts["done"],
        leased=counts["leased"],
        remaining=max(slots - counts["done"] - counts["leased"], 0),
        late_uncounted=counts["late"],
    )


def batch_problems(batch: Batch, limit: int = 200):
    """The newest problem reports workers filed on ``batch``'s tasks (with the counts by
    category for the whole batch), for the reviewer."""
    counts = dict(TaskProblem.objects.filter(batch=batch).values_list("category")
                  .annotate(n=Count("pk")).order_by())
    rows = list(TaskProblem.objects.filter(batch=batch)
                .select_related("task", "worker__user").order_by("-created_at", "-pk")[:limit])
    return rows, {TaskProblem.Category(c).label: n for c, n in sorted(counts.items())}


def batch_cost(batch: Batch) -> dict[str, Decimal]:
    """Reward owed for counted work so far and the full-batch estimate (before provider fees)."""
    progress = batch_progress(batch)
    return {
        "spent": batch.reward * progress.done,
        "estimate": batch.reward * progress.slots,
    }


def worker_gold_accuracy(worker: Worker) -> tuple[int, int]:
    """(correct, total) over every gold task the worker answered."""
    row = Assignment.objects.filter(worker=worker, gold_correct__isnull=False).aggregate(
        total=Count("id"), correct=Count("id", filter=Q(gold_correct=True))
    )
    return row["correct"], row["total"]


def worker_position(batch: Batch, worker: Worker) -> tuple[int, int]:
    """("Task k of n") — k counts this worker's submitted tasks plus the current one, n the
    tasks that are theirs (done, held, still open to them), not the whole batch."""
    submitted, total = statements.submitted_and_total(batch.pk, worker.pk)
    return min(submitted + 1, total), total


def assignment_with_context(assignment_uuid) -> Assignment | None:
    """The assignment with its task, batch and worker loaded — what every task page and submit
    starts from — in one hand-written statement (the hot path: see annotation.engine.statements)."""
    return statements.assignment_with_context(assignment_uuid)


def batches_open_to(worker: Worker):
    """Active batches of the worker's own marketplace (local accounts: local batches), but
    none of a study that requires a qualification the worker does not hold: they do not even
    see those (the claim refuses them too, ``services.claims.ensure_eligible``)."""
    held = QualificationGrant.objects.filter(
        worker=worker, revoked=False, qualification_id=OuterRef("study__required_qualification"))
    return (Batch.objects.filter(status=Batch.Status.ACTIVE, provider=worker.provider)
            .filter(Q(study__required_qualification__isnull=True) | Exists(held))
            .order_by("-created_at"))


# --------------------------------------------------------------------------- the worker's pages
MEDIAN_SAMPLE = 101  # the time estimate reads each batch's latest submissions, no more


@dataclass(frozen=True)
class OpenBatch:
    """One active batch as a given worker sees it on their home page."""

    batch: Batch
    progress: BatchProgress
    left_for_me: int  # tasks they could still be given, the one they hold included
    holding: bool  # they hold a live lease here (a task in progress)
    median_seconds: float | None  # of the batch's latest submissions; None before any
    timed: int  # how many submissions that median is over
    refusal: str  # why they may not work here ("" when they may)

    @property
    def offered(self) -> bool:
        return not self.refusal and self.left_for_me > 0

    @property
    def hit_title(self) -> str:
        """The HIT type's own title ("Which response is better?"); the slug if unregistered."""
        try:
            return get_hit_type(self.batch.hit_type).title
        except LookupError:
            return self.batch.hit_type

    @property
    def hourly_rate(self) -> tuple[Decimal, str] | None:
        """(reward per hour, what the time is): at the median time of the batch's latest
        submissions, before any at its HIT type's expected time; None for unpaid work."""
        if not self.batch.reward:
            return None
        if self.median_seconds:
            seconds, basis = self.median_seconds, gettext("at the median time")
        else:
            try:
                seconds = get_hit_type(self.batch.hit_type).expected_seconds
            except LookupError:
                return None
            basis = gettext("at the expected time; no submissions yet")
        return cents(self.batch.reward * 3600 / Decimal(str(seconds))), basis

    @property
    def estimate(self) -> tuple[str, str]:
        """(time per task, what it is based on): the median of the batch's latest submissions;
        before any, the batch's minimum time (a floor, said so); else the HIT type's expected
        time."""
        if self.median_seconds is not None:
            return (gettext("about %(time)s") % {"time": _duration(self.median_seconds)},
                    ngettext("median of %(n)d submitted task", "median of %(n)d submitted tasks",
                             self.timed) % {"n": self.timed})
        if self.batch.min_seconds:
            return (gettext("at least %(time)s") % {"time": _duration(self.batch.min_seconds)},
                    gettext("the batch's minimum time; no submissions yet"))
        try:  # what the hourly rate assumes too
            expected = get_hit_type(self.batch.hit_type).expected_seconds
        except LookupError:
            return (gettext("not known yet"), gettext("no submissions yet"))
        return (gettext("about %(time)s") % {"time": _duration(expected)},
                gettext("expected for this kind of task; no submissions yet"))


def _duration(seconds: float) -> str:
    return f"{round(seconds)} s" if seconds < 90 else f"{round(seconds / 60)} min"


def open_batches_for(worker: Worker) -> list[OpenBatch]:
    """Active batches with progress, what is left for ``worker`` and a time estimate, in a
    fixed number of queries whatever the number of batches (no per-batch query)."""
    batches = list(batches_open_to(worker).select_related("required_qualification"))
    if not batches:
        return []
    ids = [b.pk for b in batches]
    progress = batch_progress_many(ids)
    mine = Assignment.objects.filter(task=OuterRef("pk"), worker=worker)
    open_for_me = dict(
        Task.objects.filter(batch_id__in=ids, slots_taken__lt=F("max_assignments"))
        .filter(~Exists(mine)).order_by().values("batch_id").annotate(n=Count("id"))
        .values_list("batch_id", "n"))
    holding = set(Assignment.objects.filter(batch_id__in=ids, worker=worker,
                                            status=Assignment.Status.LEASED)
                  .values_list("batch_id", flat=True))
    held_quals = set(QualificationGrant.objects.filter(worker=worker, revoked=False)
                     .values_list("qualification_id", flat=True))
    seconds = _recent_seconds(ids)
    rows = []
    for batch in batches:
        spent = seconds.get(batch.pk, [])
        rows.append(OpenBatch(
            batch=batch, progress=progress[batch.pk],
            left_for_me=open_for_me.get(batch.pk, 0) + (batch.pk in holding),
            holding=batch.pk in holding,
            median_seconds=median(spent) if spent else None, timed=len(spent),
            refusal=_refusal(batch, worker, held_quals)))
    return rows


def _refusal(batch: Batch, worker: Worker, held_quals: set[int]) -> str:
    """The claim's own eligibility rules (services.claims.ensure_eligible), read in bulk."""
    if worker.blocked:
        return gettext("Your account is blocked from new work.")
    if batch.required_qualification_id and batch.required_qualification_id not in held_quals:
        return gettext("Needs the “%(name)s” qualification.") % {
            "name": batch.required_qualification}
    return ""


def _recent_seconds(batch_ids: list[int]) -> dict[int, list[float]]:
    """Seconds spent on each batch's latest ``MEDIAN_SAMPLE`` submissions, in one query."""
    ranked = (Assignment.objects.filter(batch_id__in=batch_ids, submitted_at__isnull=False,
                                        seconds_spent__isnull=False)
              .annotate(rank=Window(RowNumber(), partition_by=[F("batch_id")],
                                    order_by=[F("submitted_at").desc(), F("pk").desc()]))
              .filter(rank__lte=MEDIAN_SAMPLE).values_list("batch_id", "seconds_spent"))
    out: dict[int, list[float]] = {}
    for batch_id, spent in ranked:
        out.setdefault(batch_id, []).append(spent)
    return out


def batch_progress_many(batch_ids) -> dict[int, BatchProgress]:
    """``batch_progress`` of many batches in two queries (a dashboard's rows)."""
    ids = list(batch_ids)
    tasks = {row["batch_id"]: row for row in Task.objects.filter(batch_id__in=ids).order_by()
             .values("batch_id").annotate(n=Count("id"), slots=Sum("max_assignments"))}
    counts = {row["batch_id"]: row for row in Assignment.objects.filter(batch_id__in=ids)
              .order_by().values("batch_id").annotate(
                  done=Count("id", filter=Assignment.COUNTS_AS_DONE),
                  leased=Count("id", filter=Q(status=Assignment.Status.LEASED)),
                  late=Count("id", filter=Q(counted=False, late=True)))}
    out = {}
    for pk in ids:
        t = tasks.get(pk, {"n": 0, "slots": 0})
        c = counts.get(pk, {"done": 0, "leased": 0, "late": 0})
        slots = t["slots"] or 0
        out[pk] = BatchProgress(tasks=t["n"], slots=slots, done=c["done"], leased=c["leased"],
                                remaining=max(slots - c["done"] - c["leased"], 0),
                                late_uncounted=c["late"])
    return out


@dataclass(frozen=True)
class Earnings:
    approved: Decimal  # rewards of approved work
    pending: Decimal  # rewards of submitted work not reviewed yet
    rejected: int  # rejected submissions (unpaid)
    bonus_paid: Decimal
    bonus_pending: Decimal  # recorded, not (yet, or not surely) paid


def worker_earnings(worker: Worker) -> Earnings:
    """What the worker has earned, at each batch's reward, in two queries."""
    status = Assignment.Status
    rewards = Assignment.objects.filter(worker=worker).aggregate(
        approved=Sum("batch__reward", filter=Q(status=status.APPROVED)),
        pending=Sum("batch__reward", filter=Q(status=status.SUBMITTED)),
        rejected=Count("id", filter=Q(status=status.REJECTED)))
    waiting = (Bonus.Status.PENDING, Bonus.Status.SENDING, Bonus.Status.UNCERTAIN)
    bonuses = Bonus.objects.filter(worker=worker).aggregate(
        paid=Sum("amount", filter=Q(status=Bonus.Status.PAID)),
        pending=Sum("amount", filter=Q(status__in=waiting)))
    return Earnings(approved=_money(rewards["approved"]), pending=_money(rewards["pending"]),
                    rejected=rewards["rejected"], bonus_paid=_money(bonuses["paid"]),
                    bonus_pending=_money(bonuses["pending"]))


def _money(total) -> Decimal:
    """A summed amount in cents (SQLite sums decimals as floats: 0.300000000000000)."""
    return cents(Decimal(str(total or 0)))


def worker_history(worker: Worker):
    """The worker's assignments, newest first by the date the page shows (``at``: when
    submitted, or when claimed for work not submitted), with their batch (for a paginated
    list) and the requester's note (a rejected one shows its reason)."""
    return (Assignment.objects.filter(worker=worker).select_related("batch")
            .only("uuid", "status", "claimed_at", "submitted_at", "seconds_spent", "counted",
                  "late", "gold_correct", "review_note", "batch__title", "batch__reward",
                  "batch__status")
            .annotate(at=Coalesce("submitted_at", "claimed_at"))
            .order_by("-at", "-pk"))


def worker_revealed_gold(worker: Worker) -> tuple[int, int]:
    """(correct, total) over gold tasks of finished batches only: a batch reveals its gold
    results once it is finished, so a live batch's gold items stay unrecognisable."""
    row = Assignment.objects.filter(worker=worker, gold_correct__isnull=False,
                                    batch__status=Batch.Status.FINISHED).aggregate(
        total=Count("id"), correct=Count("id", filter=Q(gold_correct=True)))
    return row["correct"], row["total"]


def worker_qualifications(worker: Worker):
    """Qualifications the worker holds (revoked grants left out), by name."""
    return (QualificationGrant.objects.filter(worker=worker, revoked=False)
            .select_related("qualification").order_by("qualification__name"))


# --------------------------------------------------------------------------- the study dashboard
_BONUS_COMMITTED = (Bonus.Status.PENDING, Bonus.Status.SENDING, Bonus.Status.PAID,
                    Bonus.Status.UNCERTAIN)


@dataclass(frozen=True)
class BatchOverview:
    """A dashboard row: progress and money, marketplace fees included."""

    batch: Batch
    progress: BatchProgress
    spent: Decimal  # counted work at the batch's reward + paid bonuses, fees included
    committed: Decimal  # every slot paid + every committed bonus, fees included
    budget: Decimal | None


@dataclass(frozen=True)
class BatchCosts:
    # A ``providers.costs.CostEstimate``: every slot paid + every committed bonus, fees included.
    estimate: object
    spent: Decimal  # approved work + paid bonuses, fees included
    budget: Decimal | None

    @property
    def committed(self) -> Decimal:
        return self.estimate.total

    @property
    def left(self) -> Decimal | None:
        return None if self.budget is None else self.budget - self.committed


def batch_costs(batch: Batch, *, extra_bonus: Decimal = ZERO, fees=None) -> BatchCosts:
    """``fees``: a ``FeeSchedule`` in place of the marketplace's own (a study's budget prices
    local work at the study's fee rate); ``extra_bonus``: a bonus about to be committed."""
    return batch_costs_many([batch], fees_for=lambda b: fees, extra_bonus=extra_bonus)[batch.pk]


def batch_costs_many(batches, *, fees_for=lambda batch: None,
                     extra_bonus: Decimal = ZERO) -> dict[int, BatchCosts]:
    """``batch_costs`` of each of ``batches`` in five queries whatever their number (a study's
    budget adds up every batch of the study on each activation). ``fees_for(batch)``: its
    ``FeeSchedule``, None for the marketplace's own."""
    batches = list(batches)
    ids = [b.pk for b in batches]
    slots = dict(Task.objects.filter(batch_id__in=ids).values("batch_id")
                 .annotate(n=Sum("max_assignments")).values_list("batch_id", "n"))
    approved = dict(Assignment.objects.filter(batch_id__in=ids,
                                              status=Assignment.Status.APPROVED)
                    .values("batch_id").annotate(n=Count("id")).values_list("batch_id", "n"))
    bonuses = _bonuses_by_batch(ids)
    outside = _paid_outside_assignments(batches)
    out = {}
    for batch in batches:
        provider, fees = get_provider(batch.provider), fees_for(batch)
        per = bonuses.get(batch.pk, {"committed": [], "paid": []})
        full = provider.estimate(reward=batch.reward, assignments=slots.get(batch.pk) or 0,
                                 assignments_per_hit=batch.assignments_per_task,
                                 bonuses=per["committed"] + ([extra_bonus] if extra_bonus else []),
                                 fees=fees)
        spent = provider.estimate(reward=batch.reward, assignments=approved.get(batch.pk, 0),
                                  assignments_per_hit=batch.assignments_per_task,
                                  bonuses=per["paid"], fees=fees).total
        out[batch.pk] = BatchCosts(estimate=full,
                                   spent=spent + _outside_cost(batch, outside, fees),
                                   budget=batch.budget)
    return out


def _bonuses_by_batch(ids) -> dict[int, dict[str, list[Decimal]]]:
    """Committed bonus amounts per batch, and those of them paid (one query)."""
    bonuses: dict[int, dict[str, list[Decimal]]] = {}
    for batch_id, status, amount in Bonus.objects.filter(
            batch_id__in=ids, status__in=_BONUS_COMMITTED).values_list(
            "batch_id", "status", "amount"):
        per = bonuses.setdefault(batch_id, {"committed": [], "paid": []})
        per["committed"].append(amount)
        if status == Bonus.Status.PAID:
            per["paid"].append(amount)
    return bonuses


def _paid_outside_assignments(batches) -> dict[int, tuple[Decimal, int]]:
    """Places a marketplace paid that no assignment of ours holds, asked of each batch's
    marketplace (``Provider.paid_outside_assignments``: Prolific's screen-outs)."""
    by_provider: dict[str, list[int]] = {}
    for batch in batches:
        by_provider.setdefault(batch.provider, []).append(batch.pk)
    out: dict[int, tuple[Decimal, int]] = {}
    for name, ids in by_provider.items():
        out.update(get_provider(name).paid_outside_assignments(ids))
    return out


def _outside_cost(batch: Batch, outside: dict, fees=None) -> Decimal:
    reward, places = outside.get(batch.pk, (ZERO, 0))
    if not places:
        return ZERO
    return get_provider(batch.provider).estimate(
        reward=reward, assignments=places, assignments_per_hit=batch.assignments_per_task,
        fees=fees).total


def batches_overview(batches) -> list[BatchOverview]:
    """Progress and cost of ``batches`` in three queries (progress twice, bonuses once) and
    what their marketplaces paid outside our assignments (Prolific's screen-outs).

    ``spent`` counts counted submissions (what is owed as work comes in; the marketplace bills
    approved work, which lags behind) — the figure ``batch_cost`` gives, plus fees and bonuses.
    """
    batches = list(batches)
    progress = batch_progress_many(b.pk for b in batches)
    bonuses = _bonuses_by_batch([b.pk for b in batches])
    outside = _paid_outside_assignments(batches)
    rows = []
    for batch in batches:
        p = progress[batch.pk]
        per = bonuses.get(batch.pk, {"committed": [], "paid": []})
        rows.append(BatchOverview(
            batch=batch, progress=p,
            spent=_cost(batch, p.done, per["paid"]) + _outside_cost(batch, outside),
            committed=_cost(batch, p.slots, per["committed"]), budget=batch.budget))
    return rows


def _cost(batch: Batch, assignments: int, bonuses: list[Decimal]) -> Decimal:
    return get_provider(batch.provider).estimate(
        reward=batch.reward, assignments=assignments,
        assignments_per_hit=batch.assignments_per_task, bonuses=bonuses).total


# --- quality flags (annotation.engine.services.quality) ----------------------------------------

def assignments_flagged(assignments, code: str):
    """``assignments`` narrowed to those carrying flag ``code`` ("any": any flag; "": all).

    A text match on the stored JSON (``"<code>"`` as a JSON string), the one JSON lookup
    PostgreSQL and SQLite both run; flag details never quote a code."""
    if not code:
        return assignments
    return assignments.filter(flags__icontains='"code"' if code == "any" else f'"{code}"')


def active_seconds(telemetry: dict | None) -> float | None:
    """Seconds the task page was visible and focused, as the page measured it (None: unknown)."""
    active = (telemetry or {}).get("active_ms")
    return None if active is None else active / 1000
