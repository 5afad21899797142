"""A study: the unit every scoped row (instances, batches, models, judge runs, metric runs,
reports, submissions, webhooks) belongs to, with its roles and its own settings.

A study sits below everything it scopes: every app may import it, it imports none (so its
settings name a judge by name, and the reference model is the ``EvalModel`` flagged
``is_reference`` within the study). One worker pool serves every study.
"""
from decimal import Decimal

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models


class Study(models.Model):
    class Visibility(models.TextChoices):
        PRIVATE = "private", "Private: members only"
        PUBLIC = "public", "Public board: anyone may read the leaderboard"

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=60, unique=True)
    description = models.TextField(blank=True)
    protocol_notes = models.TextField(
        blank=True, help_text="How the study collects its judgments (shown on its home)")
    visibility = models.CharField(max_length=8, choices=Visibility.choices,
                                  default=Visibility.PRIVATE)
    budget = models.DecimalField(max_digits=12, decimal_places=2, null=True, blank=True,
                                 validators=[MinValueValidator(Decimal(0))],
                                 help_text="Dollars the study may spend (empty: no limit)")
    fee_rate = models.DecimalField(
        max_digits=5, decimal_places=4, default=Decimal(0),
        validators=[MinValueValidator(Decimal(0))],
        help_text="The marketplace's fee on rewards, e.g. 0.2 for 20%")
    # Submissions: empty / null falls back to the deployment's setting of the same name.
    submission_judge = models.CharField(
        max_length=100, blank=True, help_text="A pairwise judge's name (empty: SUBMISSION_JUDGE)")
    submission_budget_cap = models.DecimalField(
        max_digits=12, decimal_places=6, null=True, blank=True,
        validators=[MinValueValidator(Decimal(0))],
        help_text="Dollars per submission (empty: SUBMISSION_BUDGET_CAP)")
    submissions_per_day = models.PositiveIntegerField(
        null=True, blank=True, help_text="Per submitter (empty: SUBMISSIONS_PER_DAY)")
    # Defaults a new batch of the study starts from.
    default_answer_options = models.JSONField(
        default=list, blank=True, help_text="The answers a new rating batch offers (empty: all)")
    default_min_seconds = models.PositiveIntegerField(
        null=True, blank=True, help_text="A new batch's minimum seconds per task")
    # The worker pool is the deployment's: a study may only narrow who works on it.
    required_qualification = models.ForeignKey(
        "annotation.Qualification", null=True, blank=True, on_delete=models.PROTECT,
        related_name="+",
        help_text="Workers without it neither see nor claim this study's tasks (empty: anyone)")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "studies"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_public(self) -> bool:
        return self.visibility == self.Visibility.PUBLIC

    @property
    def is_default(self) -> bool:
        return self.slug == settings.DEFAULT_STUDY_SLUG

    def effective_submission_judge(self) -> str:
        return self.submission_judge or settings.SUBMISSION_JUDGE

    def effective_submission_budget_cap(self):
        cap = self.submission_budget_cap
        return settings.SUBMISSION_BUDGET_CAP if cap is None else cap

    def effective_submissions_per_day(self) -> int:
        per_day = self.submissions_per_day
        return settings.SUBMISSIONS_PER_DAY if per_day is None else per_day


class StudyMembership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner", "Owner (admin of the study)"
        ANALYST = "analyst", "Analyst"
        SUBMITTER = "submitter", "Submitter"
        VIEWER = "viewer", "Viewer"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="study_memberships")
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "study"],
                                               name="one_membership_per_study")]

    def __str__(self) -> str:
        return f"{self.user} — {self.get_role_display()} of {self.study}"


# ---------------------------------------------------------------- the default study

_default_id: dict[str, int] = {}


def default_study_id() -> int:
    """The default study's id: what a scoped row made without a study belongs to (every
    writer that predates studies). Created when missing; remembered per process (forgotten
    after a migrate or flush, ``StudiesConfig``), so a bulk insert costs no query per row."""
    if "id" not in _default_id:
        slug = settings.DEFAULT_STUDY_SLUG
        # The pk alone: a migration that runs before a later column exists calls this too.
        found = Study.objects.filter(slug=slug).values_list("pk", flat=True).first()
        if found is None:
            found = Study.objects.get_or_create(
                slug=slug, defaults={"name": slug.replace("-", " ").capitalize() or "Default"})[0].pk
        _default_id["id"] = found
    return _default_id["id"]


def study_pk(study) -> int:
    """The id of ``study`` (a Study or an id); None is the default study: what every reader
    and writer from before studies means."""
    if study is None:
        return default_study_id()
    return getattr(study, "pk", study)


def default_study_forget() -> None:
    _default_id.clear()
