"""Stored results of the agreement app: cached metric scores, metric batch runs, and reports.

Nothing here is computed in ``save()``: the services in ``agreement/services/`` write these rows.
"""
import uuid

from django.db import models
from django.utils import timezone

from judging.models import Response
from studies.models import default_study_id


class MetricScore(models.Model):
    """One reference-metric score of one response, cached.

    The key is (metric, config_hash, response, reference_hash): ``config_hash`` covers the metric
    version and options (and, for CIDEr-D, the scored set whose IDF it uses), ``reference_hash``
    the reference text(s) scored against, so a changed reference or setting is a cache miss.
    """

    metric = models.CharField(max_length=50)
    config_hash = models.CharField(max_length=16)
    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="+")
    reference_hash = models.CharField(max_length=16)
    score = models.FloatField()
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["metric", "config_hash", "response", "reference_hash"],
                name="metric_score_unique",
            ),
        ]
        indexes = [models.Index(fields=["metric", "config_hash"])]

    def __str__(self) -> str:
        return f"{self.metric}={self.score:.4g} on {self.response_id}"


class BackgroundJob(models.Model):
    """What a queued computation records about itself: status, error, who asked and when."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    error = models.TextField(blank=True)
    created_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField()
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True
        ordering = ["-created_at"]

    def mark_failed(self, exc: BaseException) -> None:
        """Record a failure (its type and message) without touching the job's other fields."""
        type(self).objects.filter(pk=self.pk).update(
            status=self.Status.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000],
            finished_at=timezone.now())

    @classmethod
    def fail_unfinished(cls, pk: int, reason: str) -> int:
        """Record why a job stopped (e.g. its process exited), unless it already finished."""
        return cls.objects.filter(pk=pk, status__in=[cls.Status.PENDING, cls.Status.RUNNING]) \
            .update(status=cls.Status.FAILED, error=reason[:2000], finished_at=timezone.now())


class MetricRun(BackgroundJob):
    """Progress of one batch computation of metrics (what the Celery task works through)."""

    study = models.ForeignKey("studies.Study", on_delete=models.PROTECT,
                              default=default_study_id, related_name="+")
    metrics = models.JSONField(default=list, help_text="Metric names, in order")
    options = models.JSONField(default=dict, blank=True, help_text="e.g. seed, bert model")
    configs = models.JSONField(
        default=dict, blank=True,
        help_text="{metric: {config, config_hash}}: the full configuration each metric ran with "
                  "(model, layer, tokenizers, package versions); the cache is keyed by its hash")
    total = models.PositiveIntegerField(default=0, help_text="(metric, response) pairs to score")
    done = models.PositiveIntegerField(default=0)
    cached = models.PositiveIntegerField(default=0, help_text="Found in the cache, not recomputed")

    def __str__(self) -> str:
        return f"metric run {self.uuid} ({self.status})"

    @property
    def percent(self) -> int:
        """How far the run is (0-100), from the pairs scored so far."""
        if self.status == self.Status.DONE:
            return 100
        return min(100, round(100 * self.done / self.total)) if self.total else 0


class Report(BackgroundJob):
    """An agreement report: its parameters, the data snapshot it used and every number."""

    title = models.CharField(max_length=200, blank=True)
    study = models.ForeignKey("studies.Study", on_delete=models.PROTECT,
                              default=default_study_id, related_name="+")
    params = models.JSONField(default=dict, help_text="judges, split, seed, metrics, rounds")
    snapshot = models.JSONField(default=dict, blank=True, help_text="Counts, filters, versions")
    data = models.JSONField(default=dict, blank=True, help_text="report.json")
    stage = models.CharField(max_length=80, blank=True,
                             help_text="What the build is doing now, e.g. 'metrics 2/5'")
    progress = models.PositiveSmallIntegerField(default=0, help_text="Percent done (0-100)")

    def __str__(self) -> str:
        return self.title or f"report {self.uuid}"


class ReportFile(models.Model):
    """One downloadable artefact of a report (HTML, JSON, CSV, PNG, SVG), kept in the database
    so downloads go through the analyst-only view (media is public in local mode)."""

    report = models.ForeignKey(Report, on_delete=models.CASCADE, related_name="files")
    name = models.CharField(max_length=120)
    content_type = models.CharField(max_length=60)
    content = models.BinaryField()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["report", "name"], name="report_file_unique"),
        ]

    def __str__(self) -> str:
        return self.name
