"""The crowd-work engine's tables.

Invariants live in the database where it can hold them:
- ``Assignment(task, worker)`` is unique: a worker never gets the same task twice, and a
  returned (skipped) assignment keeps its row, so a skipped task is never offered again;
- ``Task.slots_taken`` counts live leases plus counted submissions not rejected, and a check
  constraint keeps it within ``0..max_assignments``; claims, late submits and rejections
  (``engine.services.rejections``) move it with conditional updates;
- a worker holds at most one lease per batch (``status='leased'`` is unique per worker and
  batch), whatever path creates it and however many of their claims race.
"""
import uuid

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q

from studies.models import default_study_id


class Worker(models.Model):
    class Provider(models.TextChoices):
        LOCAL = "local", "Local account"
        MTURK = "mturk", "Mechanical Turk"
        PROLIFIC = "prolific", "Prolific"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    provider = models.CharField(max_length=16, choices=Provider.choices, default=Provider.LOCAL)
    external_id = models.CharField(max_length=128, help_text="Provider's worker id")
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="worker",
    )
    blocked = models.BooleanField(default=False)
    blocked_reason = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["provider", "external_id"], name="worker_unique_id"),
        ]

    def __str__(self) -> str:
        return f"{self.provider}:{self.external_id}"


class Qualification(models.Model):
    """A badge earned by passing a qualification-test batch (all-gold tasks)."""

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    pass_mark = models.FloatField(default=0.8, help_text="Fraction of gold answers needed")
    provider_ids = models.JSONField(
        default=dict, blank=True, help_text="Marketplace qualification ids, by provider"
    )

    def __str__(self) -> str:
        return self.name


class QualificationGrant(models.Model):
    qualification = models.ForeignKey(Qualification, on_delete=models.CASCADE, related_name="grants")
    worker = models.ForeignKey(Worker, on_delete=models.CASCADE, related_name="qualifications")
    score = models.FloatField()
    granted_at = models.DateTimeField()
    revoked = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["qualification", "worker"], name="one_grant_per_worker"),
        ]

    def __str__(self) -> str:
        return f"{self.qualification} → {self.worker}"


class Batch(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft"
        ACTIVE = "active"
        PAUSED = "paused"
        FINISHED = "finished"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    study = models.ForeignKey("studies.Study", on_delete=models.PROTECT,
                              default=default_study_id, related_name="batches")
    hit_type = models.CharField(max_length=64, help_text="Registered HIT type slug")
    title = models.CharField(max_length=200)
    description = models.CharField(max_length=500, blank=True)
    instructions = models.TextField(blank=True)
    assignments_per_task = models.PositiveSmallIntegerField(default=5)
    reward = models.DecimalField(max_digits=8, decimal_places=2, default=0)
    budget = models.DecimalField(max_digits=10, decimal_places=2, null=True, blank=True)
    lease_seconds = models.PositiveIntegerField(default=30 * 60)
    min_seconds = models.PositiveIntegerField(
        default=0, help_text="Submissions faster than this are refused (click-through guard)"
    )
    required_qualification = models.ForeignKey(
        Qualification, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    grants_qualification = models.ForeignKey(
        Qualification, null=True, blank=True, on_delete=models.PROTECT,
        related_name="test_batches", help_text="Set on a qualification-test batch",
    )
    hit_options = models.JSONField(
        default=dict, blank=True,
        help_text="The HIT type's per-batch settings (e.g. which answers a rating HIT offers), "
                  "checked by the type's clean_options",
    )
    image_problems = models.JSONField(
        default=list, blank=True,
        help_text="Image URLs of the upload that could not be fetched as images: "
                  "[{task, url, reason}], listed on the batch's page before activation",
    )
    auto_block_below = models.FloatField(
        null=True, blank=True, help_text="Block workers whose gold accuracy falls below this"
    )
    # Applied by ``block_unreliable`` (agreement), never at submit: the fit costs too much there.
    auto_block_reliability_below = models.FloatField(
        null=True, blank=True, validators=[MinValueValidator(0.0), MaxValueValidator(1.0)],
        help_text="Block workers whose estimated accuracy (Dawid–Skene over this batch's "
                  "votes) is below this even at its upper 95% bound (command block_unreliable)",
    )
    provider = models.CharField(
        max_length=16, choices=Worker.Provider.choices, default=Worker.Provider.LOCAL
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    trial = models.BooleanField(
        default=False, help_text="A trial (e.g. the sample an admin tries the product with): "
        "its votes are kept and shown in its own results and review, but counted on no "
        "leaderboard or report unless an analyst includes trial batches")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "batches"
        constraints = [
            models.CheckConstraint(
                condition=Q(assignments_per_task__gte=1), name="batch_n_positive"
            ),
        ]

    def __str__(self) -> str:
        return self.title


class Task(models.Model):
    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="tasks")
    position = models.PositiveIntegerField()
    payload = models.JSONField(help_text="What the HIT type shows; refers to domain objects")
    is_gold = models.BooleanField(default=False)
    gold_answer = models.JSONField(null=True, blank=True)
    max_assignments = models.PositiveSmallIntegerField()
    slots_taken = models.PositiveSmallIntegerField(
        default=0, help_text="Live leases + counted submissions"
    )
    provider_hit_id = models.CharField(max_length=128, blank=True)

    class Meta:
        ordering = ["batch", "position"]
        constraints = [
            models.UniqueConstraint(fields=["batch", "position"], name="task_position_unique"),
            models.CheckConstraint(
                condition=Q(slots_taken__lte=F("max_assignments")), name="task_slots_within_n"
            ),
        ]
        indexes = [
            # Only tasks with a free slot, in batch order: the next-task claim walks this index
            # instead of every full task before the first open one.
            models.Index(fields=["batch", "position"], name="open_task_order",
                         condition=Q(slots_taken__lt=F("max_assignments"))),
        ]

    def __str__(self) -> str:
        return f"{self.batch_id}#{self.position}"


class Assignment(models.Model):
    class Status(models.TextChoices):
        LEASED = "leased"
        SUBMITTED = "submitted"
        APPROVED = "approved"
        REJECTED = "rejected"
        EXPIRED = "expired"
        RETURNED = "returned"

    #: Work that fills one of its task's N slots: counted and not rejected (a rejection gives
    #: the slot back). What "done" and "spent" count.
    COUNTS_AS_DONE = Q(counted=True) & ~Q(status=Status.REJECTED)

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="assignments")
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="assignments")
    worker = models.ForeignKey(Worker, on_delete=models.PROTECT, related_name="assignments")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.LEASED)
    claimed_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    answer = models.JSONField(null=True, blank=True)
    seconds_spent = models.FloatField(null=True, blank=True)
    counted = models.BooleanField(
        # It took one of the task's N slots; a rejection gives the slot back (COUNTS_AS_DONE).
        default=False, help_text="Counts towards the task's N (false for late, uncounted work)"
    )
    late = models.BooleanField(default=False, help_text="Submitted after its lease expired")
    gold_correct = models.BooleanField(null=True, blank=True)
    hit_type_version = models.CharField(max_length=32)
    provider_assignment_id = models.CharField(max_length=128, blank=True)
    provider_hit_id = models.CharField(max_length=128, blank=True)
    provider_submit_to = models.URLField(blank=True)
    review_note = models.CharField(max_length=500, blank=True)
    telemetry = models.JSONField(
        default=dict, blank=True,
        help_text="What the task page measured (active ms, blurs, pastes, pasted characters, "
                  "keystrokes); checked keys only, sent by an untrusted browser")
    flags = models.JSONField(
        default=list, blank=True,
        help_text='Quality flags computed at submit: [{"code": …, "detail": …}]')

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["task", "worker"], name="one_assignment_per_worker"),
            models.UniqueConstraint(
                fields=["provider_assignment_id"],
                condition=~Q(provider_assignment_id=""),
                name="provider_assignment_unique",
            ),
            models.CheckConstraint(
                condition=Q(status="leased") | Q(status="expired") | Q(status="returned")
                | Q(answer__isnull=False),
                name="submitted_has_answer",
            ),
            # One lease per worker and batch. A lease past its deadline still holds the place
            # until it is expired (the sweep, or the worker's next claim, which expires it in
            # its own transaction). Also the index of "does this worker already hold a task
            # here?", asked on every claim.
            models.UniqueConstraint(fields=["worker", "batch"], condition=Q(status="leased"),
                                    name="one_lease_per_worker_and_batch"),
        ]
        indexes = [
            models.Index(fields=["status", "expires_at"]),
            models.Index(fields=["batch", "status"]),
            models.Index(fields=["worker", "batch"]),
        ]

    def __str__(self) -> str:
        # Who did it is shown as the person by the pages that load them (the worker row's own
        # string, "local:user-3", is an id, not a name).
        return f"task {self.task} ({self.status})"


class TaskProblem(models.Model):
    """A worker's report that a task cannot be answered fairly (a broken image, two identical
    responses, offensive content, …). Never a vote: the reporting assignment is given back
    (as a skip) and the report waits for the batch's reviewer."""

    class Category(models.TextChoices):
        BROKEN_IMAGE = "broken_image", "An image does not load or is unreadable"
        IDENTICAL = "identical", "The responses are identical"
        OFFENSIVE = "offensive", "Offensive or harmful content"
        UNCLEAR = "unclear", "The instruction is unclear or impossible"
        OTHER = "other", "Something else"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE,
                                      related_name="problem")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="problems")
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="problems")
    worker = models.ForeignKey(Worker, on_delete=models.PROTECT, related_name="+")
    category = models.CharField(max_length=16, choices=Category.choices)
    note = models.CharField(max_length=1000, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["batch", "created_at"])]

    def __str__(self) -> str:
        return f"{self.get_category_display()} (task {self.task_id})"
