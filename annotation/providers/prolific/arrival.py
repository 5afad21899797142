"""Prolific arrivals, per batch (a study session): what this deployment published is checked,
then the worker row and the claim are written in one transaction, so a refusal or a failure
leaves no lease and no worker row."""
from datetime import datetime
from decimal import Decimal

from django.db import IntegrityError, transaction

from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.errors import AssignmentConflict, EngineError, NotQualified
from annotation.engine.services.workers import worker_for_external
from annotation.models import Assignment, Batch, ScreenOut, Worker
from annotation.providers.models import ProviderHit
from annotation.providers.services.common import config_for


class StudyNotPublished(EngineError):
    """A Prolific arrival for a study this deployment did not publish for the batch."""


class ScreenedOut(EngineError):
    """A Prolific participant lacks a required qualification and the batch pays a screen-out:
    they go back to Prolific with the screen-out code of ``completion_code`` and are paid
    ``reward`` (recorded as ``ScreenOut``)."""

    def __init__(self, reason: str, *, completion_code: str, reward: Decimal):
        super().__init__(reason)
        self.completion_code, self.reward = completion_code, reward


def published_studies(batch: Batch) -> set[str]:
    """The Prolific study ids this deployment created for ``batch`` (empty until launched)."""
    return set(ProviderHit.objects.filter(batch=batch, provider=Worker.Provider.PROLIFIC)
               .exclude(external_id="").values_list("external_id", flat=True))


def prolific_arrival_claim(*, batch: Batch, participant_id: str, study_id: str,
                           session_id: str, submit_to: str,
                           now: datetime | None = None) -> Assignment | None:
    """The participant's assignment for this Prolific session: the one on record, or a new
    lease of the batch's next task carrying the session; ``None`` when no task is left.

    All or nothing, in one transaction (no marketplace call is made): the worker row, the
    claim and the session ids commit together, so a failure after the claim leaves no slot
    leased and no worker row. ``SESSION_ID`` (Prolific's submission id) becomes the
    assignment's provider id, so a reload returns the same task.

    Raises ``StudyNotPublished`` unless the batch is on Prolific and ``study_id`` is a study
    this deployment created for it; ``AssignmentConflict`` when the session belongs to another
    participant or batch, or another arrival took it meanwhile; ``NotEligible`` from the claim;
    ``ScreenedOut`` instead of ``NotQualified`` when the batch has a screen-out reward.
    """
    if batch.provider != Worker.Provider.PROLIFIC or study_id not in published_studies(batch):
        raise StudyNotPublished("This link does not belong to that Prolific study.")
    try:
        return _arrival_claim(batch, participant_id=participant_id, study_id=study_id,
                              session_id=session_id, submit_to=submit_to, now=now)
    except NotQualified as refusal:
        _screen_out_record(batch, refusal, participant_id=participant_id, study_id=study_id,
                           session_id=session_id)
        raise


def _arrival_claim(batch: Batch, *, participant_id: str, study_id: str, session_id: str,
                   submit_to: str, now: datetime | None) -> Assignment | None:
    try:
        with transaction.atomic():
            worker = worker_for_external(Worker.Provider.PROLIFIC, participant_id)
            assignment = Assignment.objects.filter(provider_assignment_id=session_id).first()
            if assignment is not None:
                if assignment.worker_id != worker.pk or assignment.batch_id != batch.pk:
                    raise AssignmentConflict("This session belongs to another participant.")
                return assignment
            assignment = task_claim_next(batch=batch, worker=worker, now=now)
            if assignment is not None:
                _session_attach(assignment, session_id=session_id, study_id=study_id,
                                submit_to=submit_to)
            return assignment
    except IntegrityError:  # another arrival holds this session id; ours rolled back whole
        raise AssignmentConflict("This session is already in use.") from None


def _session_attach(assignment: Assignment, *, session_id: str, study_id: str,
                    submit_to: str) -> None:
    """Record the session on a fresh lease. A lease the worker already held under another
    session keeps its ids (the participant continues that one)."""
    fields = {"provider_assignment_id": session_id, "provider_hit_id": study_id,
              "provider_submit_to": submit_to}
    if Assignment.objects.filter(pk=assignment.pk, provider_assignment_id="").update(**fields):
        for name, value in fields.items():
            setattr(assignment, name, value)
    else:
        assignment.refresh_from_db(fields=list(fields))


def _screen_out_record(batch: Batch, refusal: NotQualified, *, participant_id: str,
                       study_id: str, session_id: str) -> None:
    """Raise ``ScreenedOut`` (after recording it once per session) when the batch pays a
    screen-out; return (so the caller re-raises the plain refusal) when it does not. The
    refused claim rolled back whole first, so no slot is held."""
    config = config_for(batch)
    if config.screen_out_reward is None:
        return
    with transaction.atomic():
        worker = worker_for_external(Worker.Provider.PROLIFIC, participant_id)
        record, _ = ScreenOut.objects.get_or_create(
            session_id=session_id,
            defaults={"batch": batch, "worker": worker, "study_id": study_id,
                      "reason": str(refusal)[:300], "reward": config.screen_out_reward})
    if record.worker_id != worker.pk or record.batch_id != batch.pk:
        raise AssignmentConflict("This session belongs to another participant.")
    raise ScreenedOut(str(refusal), completion_code=config.completion_code,
                      reward=record.reward)
