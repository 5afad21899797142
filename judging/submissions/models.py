"""A new model's public submission: the predictions a submitter uploaded, the model version
they became, and the automatic judge run that puts it on the leaderboards."""
import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from studies.models import default_study_id

from ..judges.models import JudgeRun
from ..models import EvalModel

IN_FLIGHT = ("judging",)


class Submission(models.Model):
    class Status(models.TextChoices):
        JUDGING = "judging", "Being judged"
        DONE = "done", "On the leaderboards"
        FAILED = "failed", "Failed"
        WITHDRAWN = "withdrawn", "Withdrawn"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    submitter = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT,
                                  related_name="submissions")
    study = models.ForeignKey("studies.Study", on_delete=models.PROTECT,
                              default=default_study_id, related_name="+")
    name = models.CharField(max_length=80, help_text="The model's name as submitted")
    version = models.PositiveIntegerField(help_text="1 for a name's first submission, then 2, …")
    model = models.OneToOneField(EvalModel, on_delete=models.PROTECT, related_name="submission")
    file_name = models.CharField(max_length=200)
    rows = models.PositiveIntegerField(default=0)
    responses = models.PositiveIntegerField(default=0)
    unmatched = models.JSONField(default=list, blank=True,
                                 help_text="Rows that matched no instance (skipped)")
    run = models.OneToOneField(JudgeRun, null=True, blank=True, on_delete=models.SET_NULL,
                               related_name="submission")
    estimated_cost = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.JUDGING)
    error = models.TextField(blank=True)
    human_eval_requested = models.BooleanField(default=False)
    human_batch = models.ForeignKey("annotation.Batch", null=True, blank=True,
                                    on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    withdrawn_reason = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # One submission in flight per submitter, whatever races the page and the API run.
            models.UniqueConstraint(fields=["submitter"], condition=Q(status__in=IN_FLIGHT),
                                    name="one_submission_in_flight"),
            models.UniqueConstraint(fields=["study", "name", "version"],
                                    name="submission_version_once_per_study"),
        ]

    def __str__(self):
        return f"{self.name} v{self.version} ({self.get_status_display()})"
