"""Provider-side records: what we created on a marketplace and what it told us back.

Money-moving calls leave a row *before* the call (a HIT being created, a bonus being sent) so a
crash half-way can be resumed without paying or publishing twice.
"""
import uuid

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from annotation.models.engine import Assignment, Batch, Task, Worker
from annotation.providers.prolific.audience import (
    screen_out_bounds_problem,
    validate_filter_set_id,
    validate_filters,
)

PROVIDERS = Worker.Provider.choices


class MarketplaceBatch(Batch):
    """Proxy of Batch for the marketplace admin (launch, pause, expire, sync)."""

    class Meta:
        proxy = True
        verbose_name = "marketplace batch"
        verbose_name_plural = "marketplace batches"


class ProviderConfig(models.Model):
    """Per-batch launch parameters and review policy (defaults are safe for the sandbox)."""

    class ReviewPolicy(models.TextChoices):
        AUTO = "auto", "Approve every matched submission"
        GOLD = "gold", "Approve after gold checks, reject below the pass rate"
        MANUAL = "manual", "Review by hand"

    batch = models.OneToOneField(Batch, on_delete=models.CASCADE, related_name="provider_config")
    keywords = models.CharField(max_length=200, blank=True, default="image, evaluation, labeling")
    lifetime_seconds = models.PositiveIntegerField(default=7 * 24 * 3600)
    auto_approval_seconds = models.PositiveIntegerField(default=3 * 24 * 3600)
    min_approval_rate = models.PositiveSmallIntegerField(
        null=True, blank=True, default=95, help_text="MTurk built-in: approval rate ≥ this %"
    )
    locales = models.CharField(
        max_length=100, blank=True, default="US", help_text="Comma-separated ISO country codes"
    )
    review_policy = models.CharField(
        max_length=16, choices=ReviewPolicy.choices, default=ReviewPolicy.MANUAL
    )
    gold_pass_rate = models.FloatField(default=0.7)
    reject_reason = models.CharField(
        max_length=500, default="Your answers to the quality-control items were mostly wrong."
    )
    estimated_minutes = models.PositiveSmallIntegerField(default=5, help_text="Prolific")
    completion_code = models.CharField(max_length=32, blank=True, help_text="Prolific")
    audience_filters = models.JSONField(
        default=list, blank=True, validators=[validate_filters],
        help_text="Prolific: the study's filters by id with their choices, e.g. "
                  '[{"filter_id": "fluent-languages", "selected_values": ["19"]}]')
    audience_filter_set_id = models.CharField(
        max_length=64, blank=True, validators=[validate_filter_set_id],
        help_text="Prolific: a filter set's id (Prolific's reusable audience), applied with "
                  "the filters above")
    screen_out_reward = models.DecimalField(
        max_digits=8, decimal_places=2, null=True, blank=True,
        help_text="Prolific: the fixed reward of a participant screened out in the study "
                  "(empty: nobody is screened out)")
    screening_minutes = models.PositiveSmallIntegerField(
        default=1, help_text="Prolific: minutes the screening takes (for the screen-out "
                             "reward's hourly rate)")
    new_participants_only = models.BooleanField(
        default=False, help_text="Prolific: keep out everyone who took an earlier batch of this "
                                 "HIT type (distinct people across batches)")

    def __str__(self) -> str:
        return f"Marketplace settings of {self.batch}"

    def clean(self) -> None:
        if self.screen_out_reward is not None:
            problem = screen_out_bounds_problem(self.screen_out_reward, self.batch.reward)
            if problem:
                raise ValidationError({"screen_out_reward": problem})


class ProviderHit(models.Model):
    """One published unit: an MTurk HIT (per task) or a Prolific study (per batch)."""

    class Status(models.TextChoices):
        CREATING = "creating", "Request sent, outcome unknown"
        LIVE = "live"
        PAUSED = "paused"
        EXPIRED = "expired"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="provider_hits")
    task = models.ForeignKey(
        Task, null=True, blank=True, on_delete=models.CASCADE, related_name="provider_hits"
    )
    provider = models.CharField(max_length=16, choices=PROVIDERS)
    token = models.CharField(max_length=64, unique=True, help_text="UniqueRequestToken")
    external_id = models.CharField(max_length=128, blank=True)
    hit_type_id = models.CharField(max_length=128, blank=True)
    max_assignments = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CREATING)
    expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "external_id"], condition=~Q(external_id=""),
                name="provider_hit_external_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider}:{self.external_id or self.token} ({self.status})"


class ProviderSubmission(models.Model):
    """A marketplace's view of one assignment, matched to ours (or flagged)."""

    class Flag(models.TextChoices):
        NONE = "", "—"
        WORKER_MISMATCH = "worker_mismatch", "Worker differs from the one who worked on our site"
        UNKNOWN = "unknown", "No matching assignment on our site"
        NOT_SUBMITTED = "not_submitted", "Submitted on the marketplace, not on our site"

    provider = models.CharField(max_length=16, choices=PROVIDERS)
    external_id = models.CharField(max_length=128)
    hit = models.ForeignKey(ProviderHit, on_delete=models.CASCADE, related_name="submissions")
    assignment = models.ForeignKey(
        Assignment, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    worker_external_id = models.CharField(max_length=128)
    remote_status = models.CharField(max_length=32)
    submitted_at = models.DateTimeField(null=True, blank=True)
    flag = models.CharField(max_length=32, choices=Flag.choices, blank=True, default="")
    synced_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["provider", "external_id"],
                                    name="provider_submission_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.provider}:{self.external_id} {self.remote_status} {self.flag}".strip()


class Bonus(models.Model):
    """A bonus, recorded before it is sent; ``token`` makes a retried send a no-op."""

    class Status(models.TextChoices):
        PENDING = "pending"
        SENDING = "sending", "Sending (claimed by one caller)"
        PAID = "paid"
        FAILED = "failed", "Failed (nothing paid; may be retried)"
        UNCERTAIN = "uncertain", "Outcome unknown: check on the marketplace before retrying"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="bonuses")
    assignment = models.ForeignKey(Assignment, on_delete=models.PROTECT, related_name="bonuses")
    worker = models.ForeignKey(Worker, on_delete=models.PROTECT, related_name="bonuses")
    provider = models.CharField(max_length=16, choices=PROVIDERS)
    amount = models.DecimalField(max_digits=8, decimal_places=2)
    reason = models.CharField(max_length=500)
    key = models.CharField(max_length=200, help_text="Caller's idempotency key")
    token = models.CharField(max_length=64, unique=True)
    external_id = models.CharField(max_length=128, blank=True, help_text="Prolific bulk bonus id")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField()
    paid_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "bonuses"
        constraints = [
            models.UniqueConstraint(fields=["assignment", "key"], name="bonus_once_per_key"),
            models.CheckConstraint(condition=Q(amount__gt=0), name="bonus_amount_positive"),
        ]

    def __str__(self) -> str:
        return f"${self.amount} to {self.worker} ({self.status})"


class LocalPayout(models.Model):
    """Money paid to a worker of a local batch outside this system (a bank transfer, a gift
    card …), recorded by the admin: this system moves no money for local accounts, so this
    record is what turns "owed" into "paid" (``services/payouts.py``)."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    batch = models.ForeignKey(Batch, on_delete=models.PROTECT, related_name="local_payouts")
    worker = models.ForeignKey(Worker, on_delete=models.PROTECT, related_name="local_payouts")
    amount = models.DecimalField(max_digits=10, decimal_places=2)
    reference = models.CharField(max_length=200, blank=True,
                                 help_text="The transfer's reference, for your books")
    actor = models.CharField(max_length=150, blank=True)
    paid_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="local_payout_positive"),
        ]
        indexes = [models.Index(fields=["batch", "worker"])]

    def __str__(self) -> str:
        return f"${self.amount} paid to {self.worker} for {self.batch}"


class QualificationPush(models.Model):
    """A local qualification grant (or revocation) mirrored onto a marketplace."""

    grant = models.ForeignKey(
        "annotation.QualificationGrant", on_delete=models.CASCADE, related_name="pushes"
    )
    provider = models.CharField(max_length=16, choices=PROVIDERS)
    revoked = models.BooleanField(help_text="The state that was pushed")
    pushed_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["grant", "provider"], name="one_push_per_grant"),
        ]

    def __str__(self) -> str:
        return f"{self.grant} on {self.provider} ({'revoked' if self.revoked else 'granted'})"


class ProviderAction(models.Model):
    """Audit log of every call that changes something on a marketplace."""

    batch = models.ForeignKey(
        Batch, null=True, blank=True, on_delete=models.SET_NULL, related_name="provider_actions"
    )
    provider = models.CharField(max_length=16, choices=PROVIDERS)
    action = models.CharField(max_length=32)
    target = models.CharField(max_length=200, blank=True)
    ok = models.BooleanField()
    detail = models.CharField(max_length=1000, blank=True)
    actor = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["batch", "created_at"])]

    def __str__(self) -> str:
        return f"{self.provider} {self.action} {self.target} ({'ok' if self.ok else 'failed'})"


class ProlificHookEvent(models.Model):
    """A Prolific hook event already applied: a replay of its id is refused."""

    event_id = models.CharField(max_length=128, unique=True)
    event_type = models.CharField(max_length=64)
    submission_id = models.CharField(max_length=128, blank=True)
    status = models.CharField(max_length=32, blank=True)
    received_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.event_type} {self.submission_id} {self.status}".strip()


class ScreenOut(models.Model):
    """A Prolific participant turned away for a missing qualification and sent back with the
    batch's screen-out code. One row per session (a reload records nothing new); no task slot
    is taken, so the study's place goes back to Prolific's pool when it marks it SCREENED OUT."""

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="screen_outs")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="screen_outs")
    session_id = models.CharField(max_length=128, unique=True)
    study_id = models.CharField(max_length=128)
    reason = models.CharField(max_length=300)
    reward = models.DecimalField(max_digits=8, decimal_places=2)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"Screen-out of {self.worker} from {self.batch} ({self.session_id})"
