"""Where webhooks go (endpoints) and what happened to each message (deliveries).

The signing secret is never stored: an endpoint names the environment variable that holds it
(``WEBHOOK_SECRET_…``), like judges name their API-key variable."""
import re
import uuid

from django.core.exceptions import ValidationError
from django.db import models

from studies.models import default_study_id

EVENTS = {
    "batch.finished": "A batch has every task done, or was finished by an admin",
    "judge_run.done": "An automatic judge run finished (or failed)",
    "budget.reached": "A batch's spending reached its budget",
    "report.ready": "An agreement report finished building (or failed)",
}
SECRET_ENV = re.compile(r"^WEBHOOK_SECRET_[A-Z0-9_]+$")


def validate_secret_env(name: str) -> None:
    """Only variables made for webhooks: an admin must not be able to make the server sign
    with, say, the AWS key."""
    if not SECRET_ENV.match(name):
        raise ValidationError("Name an environment variable WEBHOOK_SECRET_<NAME> "
                              "(capitals, digits, underscores).")


def validate_events(events) -> None:
    if not isinstance(events, list) or not events or not all(e in EVENTS for e in events):
        raise ValidationError(f"A non-empty list of events among: {', '.join(sorted(EVENTS))}.")


class WebhookEndpoint(models.Model):
    name = models.CharField(max_length=100, unique=True)
    study = models.ForeignKey("studies.Study", on_delete=models.PROTECT,
                              default=default_study_id, related_name="+")
    url = models.URLField(max_length=500, help_text="https:// recommended; private addresses "
                          "are refused unless WEBHOOK_ALLOW_PRIVATE is set")
    events = models.JSONField(default=list, validators=[validate_events],
                              help_text="Events this endpoint receives")
    secret_env = models.CharField(max_length=100, validators=[validate_secret_env],
                                  help_text="Environment variable holding the HMAC secret")
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "webhook endpoint"

    def __str__(self):
        return self.name


class WebhookDelivery(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed (no more retries)"

    uuid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False,
                            help_text="Sent as X-VLMEval-Delivery: receivers deduplicate on it")
    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE,
                                 related_name="deliveries")
    event = models.CharField(max_length=40)
    payload = models.JSONField()
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "webhook deliveries"
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "next_attempt_at"])]

    def __str__(self):
        return f"{self.event} → {self.endpoint} ({self.status})"
