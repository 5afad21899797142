"""Automatic judges' tables: the judge configuration, a run, its work units and every API call.

Why separate tables (not columns on ``Judgment``): a verdict is the *result* of several paid calls
(two orderings × k samples, plus extraction calls); the calls carry the audit trail (raw output,
parse path, template version, prompt hash, tokens, cost) and the idempotency key that makes a
re-run or a resumed run never pay for the same call twice. Final verdicts go to
``judging.Judgment`` (source = judge name) so the ratings code treats judges like any annotator.
"""
import re
import uuid

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from studies.models import default_study_id

from .kinds import JudgeKind, KindNames, get_kind, kind_choices

API_KEY_ENV = re.compile(r"^[A-Z][A-Z0-9_]*_API_KEY$")


def validate_api_key_env(name: str) -> None:
    """Only variables named ``*_API_KEY`` may be sent to a judge endpoint, so an admin cannot
    point a judge at another secret of the process (SECRET_KEY, AWS or Prolific credentials)."""
    if name and not API_KEY_ENV.match(name):
        raise ValidationError(f"{name!r}: use an environment variable named like OPENAI_API_KEY")


def validate_judge_name(name: str) -> None:
    """A judge's name becomes ``Judgment.source``; "human" in any spelling is the source of
    human votes, so a judge so named would land on the human leaderboard. Refused."""
    from ..models.core import Judgment  # judging.models imports this module

    if Judgment.is_reserved_name(name):
        raise ValidationError(f"{name!r} is reserved for human judgments and analysts' "
                              "adjudications; give the automatic judge another name")


class Judge(models.Model):
    """A named, versioned judge: provider endpoint + model + sampling + templates + kind.

    Bump ``version`` whenever the model, sampling or templates change: the version is part of
    every call's idempotency key, so an unchanged version re-uses earlier calls for free.
    """

    Kind = KindNames  # Judge.Kind.PAIRWISE == "pairwise": the registered kinds (``kinds/``)

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    name = models.CharField(max_length=100, help_text="Becomes Judgment.source")
    version = models.CharField(max_length=50, default="1")
    kind = models.CharField(max_length=24, choices=kind_choices)
    base_url = models.CharField(max_length=500, help_text="OpenAI-compatible API root, …/v1")
    model_name = models.CharField(max_length=200)
    api_key_env = models.CharField(
        max_length=100, blank=True, validators=[validate_api_key_env],
        help_text="NAME of the environment variable holding the API key (never the key); "
                  "must end in _API_KEY")
    temperature = models.FloatField(default=0.0)
    max_tokens = models.PositiveIntegerField(default=1024)
    seed = models.IntegerField(null=True, blank=True, help_text="Sample i is sent seed + i")
    k = models.PositiveSmallIntegerField(default=1, help_text="Self-consistency samples per call")
    send_images = models.BooleanField(
        default=False, help_text="Send images as image parts (always on for pairwise VLM)")
    extraction_max_tokens = models.PositiveIntegerField(default=32)
    price_in_per_1k = models.DecimalField(max_digits=10, decimal_places=6, default=0)
    price_out_per_1k = models.DecimalField(max_digits=10, decimal_places=6, default=0)
    expected_output_tokens = models.PositiveIntegerField(
        default=300, help_text="Used by the cost estimate before a run")
    concurrency = models.PositiveSmallIntegerField(default=8)
    requests_per_minute = models.PositiveIntegerField(null=True, blank=True)
    tokens_per_minute = models.PositiveIntegerField(null=True, blank=True)
    timeout_s = models.FloatField(default=60.0)
    max_retries = models.PositiveSmallIntegerField(default=4)
    backoff_base_s = models.FloatField(default=0.5)
    backoff_max_s = models.FloatField(default=30.0)
    template_overrides = models.JSONField(
        default=dict, blank=True,
        help_text='{"template name": "full template text"}; overrides the shipped file')
    notes = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="judge_name_version"),
            models.CheckConstraint(condition=Q(k__gte=1), name="judge_k_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    def clean(self) -> None:
        """The admin's (any ModelForm's) check; the run services check again."""
        try:
            validate_judge_name(self.name)
        except ValidationError as exc:
            raise ValidationError({"name": exc.messages}) from exc

    @property
    def ident(self) -> str:
        """Stored as ``Judgment.annotator`` and hashed into every idempotency key."""
        return f"{self.name}@{self.version}"

    @property
    def spec(self) -> JudgeKind:
        """The judge's kind (``kinds/``): what it asks, of which items, how it is stored."""
        return get_kind(self.kind)

    @property
    def is_pairwise(self) -> bool:
        return self.spec.pairwise

    @property
    def score_range(self) -> tuple[int, int] | None:
        """(lowest, highest) grade a grading judge gives; None for pairwise kinds."""
        return self.spec.score_range


class JudgeRun(models.Model):
    class Scope(models.TextChoices):
        COMPARISONS = "comparisons"
        RESPONSES = "responses"
        CONVERSATIONS = "conversations"

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        BUDGET_STOPPED = "budget_stopped", "Stopped: budget reached"
        CANCELLED = "cancelled"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    judge = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="runs")
    study = models.ForeignKey("studies.Study", on_delete=models.PROTECT,
                              default=default_study_id, related_name="+")
    scope = models.CharField(max_length=16, choices=Scope.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    budget = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True,
                                 help_text="Hard cap on new spend; empty = no cap")
    estimated_cost = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    reserved = models.DecimalField(max_digits=12, decimal_places=6, default=0,
                                   help_text="Cost held by calls in flight")
    units_total = models.PositiveIntegerField(default=0)
    units_done = models.PositiveIntegerField(default=0)
    units_failed = models.PositiveIntegerField(default=0)
    calls_made = models.PositiveIntegerField(default=0)
    calls_cached = models.PositiveIntegerField(default=0)
    calls_failed = models.PositiveIntegerField(default=0)
    tokens_in = models.PositiveBigIntegerField(default=0)
    tokens_out = models.PositiveBigIntegerField(default=0)
    created_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"run {self.uuid} of {self.judge}"


class JudgeUnit(models.Model):
    """One fan-out unit: an item (comparison or response) in one ordering ('AB', 'BA' or '')."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="units")
    item = models.UUIDField(help_text="Comparison or Response uuid")
    ordering = models.CharField(max_length=2, blank=True)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    result = models.JSONField(default=dict, blank=True)
    prompts = models.JSONField(
        default=dict, blank=True,
        help_text='{turn: [template version, [prompt hashes]]} of the calls behind the result')
    error = models.CharField(max_length=500, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "item", "ordering"], name="judge_unit_unique"),
        ]
        indexes = [models.Index(fields=["run", "status"])]

    def __str__(self) -> str:
        return f"{self.item} {self.ordering}".strip()


class JudgeCall(models.Model):
    """One chat-completion call, keyed by hash(judge version + rendered prompt hash + sample)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        IN_FLIGHT = "in_flight"
        DONE = "done"
        FAILED = "failed"

    class ParsePath(models.TextChoices):
        NONE = "", "—"
        STRICT = "strict"
        EXTRACTION = "extraction"
        FAILED = "failed"

    class Purpose(models.TextChoices):
        JUDGE = "judge"
        EXTRACTION = "extraction"

    idempotency_key = models.CharField(max_length=64, unique=True)
    run = models.ForeignKey(JudgeRun, on_delete=models.SET_NULL, null=True, related_name="calls",
                            help_text="The run that first made this call")
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="calls")
    purpose = models.CharField(max_length=10, choices=Purpose.choices, default=Purpose.JUDGE)
    item = models.UUIDField(null=True, blank=True)
    ordering = models.CharField(max_length=2, blank=True)
    turn = models.CharField(max_length=8, blank=True)
    sample_index = models.PositiveSmallIntegerField(default=0)
    template_name = models.CharField(max_length=64)
    template_version = models.CharField(max_length=80)
    prompt_hash = models.CharField(max_length=64)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    claim_token = models.UUIDField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    raw_output = models.TextField(blank=True)
    refused = models.BooleanField(default=False)
    parse_path = models.CharField(max_length=10, choices=ParsePath.choices, blank=True)
    verdict = models.CharField(max_length=8, blank=True, help_text="A, B or unknown (as shown)")
    score = models.FloatField(null=True, blank=True)
    # Many judge calls share one extraction call: identical unparseable outputs render the same
    # extraction prompt, hence the same idempotency key (paid once, cached for the others).
    extraction = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="extracted_for")
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["run", "status"])]

    def __str__(self) -> str:
        return f"{self.template_name} {self.idempotency_key[:10]} {self.status}"
