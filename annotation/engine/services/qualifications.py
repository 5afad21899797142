"""Qualification tests: a batch of gold tasks; finishing it with enough correct answers grants
the qualification it is linked to."""
from datetime import datetime

from annotation.models import Assignment, QualificationGrant, Task


def qualification_evaluate(*, batch, worker, now: datetime):
    """Grant ``batch.grants_qualification`` once the worker answered every test task well enough.

    Returns the grant, or None while the test is unfinished or failed.
    """
    qualification = batch.grants_qualification
    total = Task.objects.filter(batch=batch).count()
    answered = Assignment.objects.filter(
        batch=batch, worker=worker, gold_correct__isnull=False
    ).values_list("gold_correct", flat=True)
    answered = list(answered)
    if total == 0 or len(answered) < total:
        return None
    score = sum(answered) / total
    if score < qualification.pass_mark:
        return None
    return qualification_grant(qualification=qualification, worker=worker, now=now, score=score)


def qualification_grant(*, qualification, worker, now: datetime, score: float = 1.0):
    """Grant by hand (admin), e.g. for a worker qualified on another platform."""
    grant, _ = QualificationGrant.objects.update_or_create(
        qualification=qualification, worker=worker,
        defaults={"score": score, "granted_at": now, "revoked": False},
    )
    return grant


def qualification_revoke(*, qualification, worker) -> bool:
    return bool(
        QualificationGrant.objects.filter(qualification=qualification, worker=worker).update(
            revoked=True
        )
    )
