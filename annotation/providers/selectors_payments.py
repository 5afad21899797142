"""Who has been paid, who is owed, and what is still waiting for review — per batch or per
worker, base rewards, bonuses and marketplace fees kept apart, in Decimal to the cent.

- **paid**: money that moved through a marketplace — rewards of work approved there (approval
  pays) and bonuses it confirmed, with its fees (``costs.py``);
- **owed**: approved but not paid — local work (this system moves no money for local
  accounts: pay it outside and keep your own record) and bonuses not yet confirmed (pending,
  sending, failed or uncertain);
- **pending**: submitted work nobody has reviewed yet, priced as it will be billed if approved.
Rejected work costs nothing and is only counted. Two queries, whatever the size.
"""
from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import Count, Sum

from annotation.engine.selectors_workers import worker_display
from annotation.models import Assignment, Batch, Worker
from annotation.providers.base import get_provider
from annotation.providers.costs import ZERO, cents
from annotation.providers.models import Bonus, LocalPayout

S = Assignment.Status


@dataclass
class Amounts:
    base: Decimal = ZERO
    bonus: Decimal = ZERO
    fees: Decimal = ZERO

    @property
    def total(self) -> Decimal:
        return self.base + self.bonus + self.fees

    def add(self, other: "Amounts") -> None:
        self.base += other.base
        self.bonus += other.bonus
        self.fees += other.fees


@dataclass
class PaymentLine:
    """One batch, or one worker (``payments_overview(by=...)``)."""

    key: int | None  # the batch's id, or the worker's
    title: str
    provider: str = ""
    paid: Amounts = field(default_factory=Amounts)
    owed: Amounts = field(default_factory=Amounts)
    pending: Amounts = field(default_factory=Amounts)
    counts: dict[str, int] = field(default_factory=dict)  # assignments by status

    def add(self, other: "PaymentLine") -> None:
        for name in ("paid", "owed", "pending"):
            getattr(self, name).add(getattr(other, name))
        for status, n in other.counts.items():
            self.counts[status] = self.counts.get(status, 0) + n


@dataclass
class PaymentsOverview:
    lines: list[PaymentLine]
    total: PaymentLine


def payments_overview(*, batch: Batch | None = None, worker: Worker | None = None,
                      by: str = "batch") -> PaymentsOverview:
    """Money for one batch, one worker, or both, in lines ``by`` batch or by worker."""
    if by not in ("batch", "worker"):
        raise ValueError(f"by={by!r}")
    work, bonuses = Assignment.objects.all(), Bonus.objects.all()
    if batch is not None:
        work, bonuses = work.filter(batch=batch), bonuses.filter(batch=batch)
    if worker is not None:
        work, bonuses = work.filter(worker=worker), bonuses.filter(worker=worker)
    who = ("worker_id", "worker__provider", "worker__external_id", "worker__user__username")
    what = ("batch_id", "batch__title", "batch__provider")
    lines: dict[int, PaymentLine] = {}
    fees = {}

    def line_for(row) -> PaymentLine:
        if row["batch_id"] not in fees:
            fees[row["batch_id"]] = get_provider(row["batch__provider"]).fees()
        key = row[f"{by}_id"]
        if key not in lines:
            title = row["batch__title"] if by == "batch" else _person(row)
            provider = row["batch__provider" if by == "batch" else "worker__provider"]
            lines[key] = PaymentLine(key, title, provider)
        return lines[key]

    rows = (work.values(*what, *who, "batch__reward", "batch__assignments_per_task", "status")
            .annotate(n=Count("id")).order_by())
    for row in rows:
        line = line_for(row)
        status, n, reward = row["status"], row["n"], row["batch__reward"]
        line.counts[status] = line.counts.get(status, 0) + n
        through_marketplace = (row["batch__provider"] != Worker.Provider.LOCAL
                               and row["worker__provider"] == row["batch__provider"])
        if status == S.APPROVED:
            bucket = line.paid if through_marketplace else line.owed
        elif status == S.SUBMITTED:
            bucket = line.pending
        else:
            continue
        bucket.base += cents(reward * n)
        if through_marketplace:
            bucket.fees += fees[row["batch_id"]].reward_fee(
                reward, row["batch__assignments_per_task"]) * n
    bonus_rows = (bonuses.values(*what, *who, "status", "amount").annotate(n=Count("id"))
                  .order_by())
    for row in bonus_rows:
        line = line_for(row)
        marketplace = row["batch__provider"] != Worker.Provider.LOCAL
        bucket = line.paid if marketplace and row["status"] == Bonus.Status.PAID else line.owed
        bucket.bonus += row["amount"] * row["n"]
        if marketplace:
            bucket.fees += fees[row["batch_id"]].bonus_fee(row["amount"]) * row["n"]
    ordered = sorted(lines.values(), key=lambda line: (line.title, line.key))
    total = PaymentLine(None, "Total")
    for line in ordered:
        total.add(line)
    return PaymentsOverview(lines=ordered, total=total)


def _person(row) -> str:
    if row["worker__provider"] == Worker.Provider.LOCAL and row["worker__user__username"]:
        return row["worker__user__username"]
    return f"{row['worker__external_id']} ({Worker.Provider(row['worker__provider']).label})"


@dataclass
class PayoutDue:
    """What one worker of a local batch earned (approved rewards and bonuses), what the admin
    recorded as paid outside this system (``LocalPayout``), and the difference."""

    worker: Worker
    person: str
    approved: int
    earned: Decimal
    paid: Decimal

    @property
    def outstanding(self) -> Decimal:
        return self.earned - self.paid


def local_payouts_due(batch: Batch, *, worker: Worker | None = None) -> list[PayoutDue]:
    """Per worker of a local batch (or just ``worker``), by name: earned, paid, outstanding.
    Three queries, whatever the size."""
    lines = {line.key: line for line in
             payments_overview(batch=batch, worker=worker, by="worker").lines}
    payouts = LocalPayout.objects.filter(batch=batch)
    if worker is not None:
        payouts = payouts.filter(worker=worker)
    paid = {key: cents(total) for key, total in  # SQLite sums decimals as floats
            payouts.values("worker_id").annotate(total=Sum("amount"))
            .values_list("worker_id", "total").order_by()}
    workers = Worker.objects.select_related("user").in_bulk(set(lines) | set(paid))
    due = []
    for key, person in workers.items():
        line = lines.get(key)
        due.append(PayoutDue(
            worker=person, person=line.title if line else worker_display(person),
            approved=line.counts.get(S.APPROVED, 0) if line else 0,
            earned=line.owed.total if line else ZERO, paid=paid.get(key, ZERO)))
    return sorted(due, key=lambda d: (d.person, d.worker.pk))
