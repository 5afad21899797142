"""Prolific's submission-status hooks in: the signed request checked, the event applied once.

Prolific pushes ``submission.status.change`` events to the endpoint a researcher subscribed
(``docs/prolific.md``). A request is refused (nothing written) unless its signature matches the
secret from ``PROLIFIC_HOOK_SECRET`` and its timestamp is within ``PROLIFIC_HOOK_TOLERANCE``;
an event id already applied is acknowledged and ignored (Prolific redelivers, an attacker
replays). The event row and the status change commit together, so a failed apply is retried
by Prolific's redelivery. Polling (``batch_sync``) stays as the fallback and catches up.

The body read: ``{"event_type": "submission.status.change", "resource_id": <submission id>,
"status": <Prolific status>}`` (other fields ignored); the event id is the ``X-Event-ID``
header, else the body's ``event_id``.
"""
import json
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.models import Assignment, Worker
from annotation.providers.base import RemoteSubmission
from annotation.providers.models import ProlificHookEvent, ProviderHit
from annotation.providers.prolific import signing, statuses
from annotation.providers.services.review import record_submission

SUBMISSION_EVENT = "submission.status.change"


@dataclass(frozen=True)
class HookOutcome:
    status: int  # the HTTP status to answer
    detail: str
    batch_id: int | None = None  # a batch whose review should run now
    applied: bool = False


def prolific_hook_receive(*, body: bytes, headers) -> HookOutcome:
    refused = signing.verify(
        settings.PROLIFIC_HOOK_SECRET, timestamp=headers.get(signing.TIMESTAMP_HEADER, ""),
        signature=headers.get(signing.SIGNATURE_HEADER, ""), body=body,
        tolerance=settings.PROLIFIC_HOOK_TOLERANCE)
    if refused:
        return HookOutcome(403, f"Refused: {refused}.")
    try:
        event = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return HookOutcome(400, "The body is not JSON.")
    if not isinstance(event, dict):
        return HookOutcome(400, "The body is not a JSON object.")
    event_id = str(headers.get(signing.EVENT_ID_HEADER) or event.get("event_id") or "")[:128]
    event_type = str(event.get("event_type") or "")[:64]
    if not event_id:
        return HookOutcome(400, "No event id (X-Event-ID).")
    if event_type != SUBMISSION_EVENT:
        return HookOutcome(200, f"Ignored: {event_type or 'no event type'}.")
    submission_id = str(event.get("resource_id") or "")[:128]
    prolific_status = str(event.get("status") or "")[:32]
    if not submission_id or statuses.normalised(prolific_status) == "other":
        return HookOutcome(400, "A submission event needs resource_id and a known status.")
    try:
        with transaction.atomic():
            ProlificHookEvent.objects.create(
                event_id=event_id, event_type=event_type, submission_id=submission_id,
                status=prolific_status, received_at=timezone.now())
            batch_id = _apply(submission_id, statuses.normalised(prolific_status),
                              str(event.get("participant_id") or "")[:128])
    except IntegrityError:
        return HookOutcome(200, "Already applied.")
    return HookOutcome(200, "Applied.", batch_id=batch_id, applied=True)


def _apply(submission_id: str, status: str, participant_id: str) -> int | None:
    """Record the submission's status as a sync would; returns the batch to review when the
    submission now awaits review, else None. An unknown submission is recorded nowhere (the
    next sync flags it)."""
    assignment = (Assignment.objects.select_related("worker")
                  .filter(provider_assignment_id=submission_id,
                          worker__provider=Worker.Provider.PROLIFIC).first())
    if assignment is None:
        return None
    hit = ProviderHit.objects.filter(batch_id=assignment.batch_id,
                                     provider=Worker.Provider.PROLIFIC).exclude(
        external_id="").first()
    if hit is None:
        return None
    record_submission(Worker.Provider.PROLIFIC, hit, RemoteSubmission(
        external_id=submission_id, hit_id=hit.external_id,
        worker_id=participant_id or assignment.worker.external_id, status=status))
    return assignment.batch_id if status == "submitted" else None
