"""Arrival from a marketplace (MTurk ExternalQuestion, Prolific study): preview, accept, then
the task page."""
from urllib.parse import urlencode

from django.conf import settings
from django.http import HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from ..models import Assignment, Batch, Task, Worker
from ..permissions import public
from ..services.claims import task_claim_specific
from ..services.errors import AssignmentConflict, NotEligible
from ..services.workers import worker_for_external
from .work import MTURK_SUBMIT_HOSTS, external_query, render_task

PREVIEW_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"


@public
def mturk_task(request, task_uuid):
    task = get_object_or_404(Task.objects.select_related("batch"), uuid=task_uuid)
    assignment_id = request.GET.get("assignmentId", "")
    if not assignment_id or assignment_id == PREVIEW_ID:
        return render_task(request, task=task, preview=True)
    worker_id = request.GET.get("workerId", "")
    submit_to = request.GET.get("turkSubmitTo", "")
    if not worker_id:
        return HttpResponseBadRequest("workerId is missing")
    if submit_to.rstrip("/") not in MTURK_SUBMIT_HOSTS:
        return HttpResponseBadRequest("turkSubmitTo is not a Mechanical Turk address")
    worker = worker_for_external(Worker.Provider.MTURK, worker_id)
    try:
        assignment = task_claim_specific(
            task=task, worker=worker, provider_assignment_id=assignment_id[:128],
            provider_hit_id=request.GET.get("hitId", "")[:128], submit_to=submit_to,
        )
    except AssignmentConflict as exc:
        return render(request, "annotation/not_eligible.html", {"batch": task.batch,
                                                                "reason": exc}, status=403)
    except NotEligible as exc:
        return render(request, "annotation/not_eligible.html", {"batch": task.batch,
                                                                "reason": exc}, status=403)
    if assignment is None:
        return render(request, "annotation/batch_done.html", {"batch": task.batch}, status=409)
    url = redirect("annotation:assignment", assignment_uuid=assignment.uuid).url
    response = redirect(f"{url}?{external_query(assignment)}")
    return response


# --- Prolific (issue 7): batch-level arrival, one task per session, completion redirect -----
@public
def prolific_batch(request, batch_uuid):
    """Arrival from a Prolific study: claim the participant's task for this session.

    ``SESSION_ID`` (Prolific's submission id) becomes the assignment's provider id, so a reload
    returns the same task and a forged session id owned by someone else is refused.
    """
    from django.db import IntegrityError

    from ..providers.models import ProviderHit
    from ..services.claims import task_claim_next

    batch = get_object_or_404(Batch, uuid=batch_uuid)
    pid = request.GET.get("PROLIFIC_PID", "").strip()[:128]
    study = request.GET.get("STUDY_ID", "").strip()[:128]
    session = request.GET.get("SESSION_ID", "").strip()[:128]
    if not (pid and study and session):
        return HttpResponseBadRequest("Open this study from Prolific (PROLIFIC_PID, STUDY_ID "
                                      "and SESSION_ID are required).")
    published = ProviderHit.objects.filter(batch=batch, provider=Worker.Provider.PROLIFIC) \
        .exclude(external_id="").values_list("external_id", flat=True)
    if batch.provider != Worker.Provider.PROLIFIC or (published and study not in published):
        return HttpResponseBadRequest("This link does not belong to that Prolific study.")
    worker = worker_for_external(Worker.Provider.PROLIFIC, pid)
    assignment = Assignment.objects.filter(provider_assignment_id=session).first()
    if assignment is not None and (assignment.worker_id != worker.pk
                                   or assignment.batch_id != batch.pk):
        return render(request, "annotation/not_eligible.html", {
            "batch": batch, "reason": "This session belongs to another participant."},
            status=403)
    if assignment is None:
        try:
            assignment = task_claim_next(batch=batch, worker=worker)
        except NotEligible as exc:
            return render(request, "annotation/not_eligible.html",
                          {"batch": batch, "reason": exc}, status=403)
        if assignment is None:
            return render(request, "annotation/batch_done.html", {"batch": batch}, status=409)
        done_path = reverse("annotation:prolific_done", args=[batch.uuid])
        try:
            Assignment.objects.filter(pk=assignment.pk, provider_assignment_id="").update(
                provider_assignment_id=session, provider_hit_id=study,
                # The shared after-submit page posts to <submit_to>/mturk/externalSubmit; for
                # Prolific that is our own completion view (see prolific_done).
                provider_submit_to=done_path.removesuffix(PROLIFIC_DONE_SUFFIX))
        except IntegrityError:
            return render(request, "annotation/not_eligible.html", {
                "batch": batch, "reason": "This session is already in use."}, status=403)
        assignment.refresh_from_db()
    url = redirect("annotation:assignment", assignment_uuid=assignment.uuid).url
    return redirect(f"{url}?{external_query(assignment)}")


PROLIFIC_DONE_SUFFIX = "/mturk/externalSubmit"


@public
@csrf_exempt
@require_POST
def prolific_done(request, batch_uuid):
    """After our commit, send the participant back to Prolific with the completion code.

    Reached by the shared auto-posting page (it posts ``assignmentId`` = the session id). It
    writes nothing; it only answers for a session whose work is saved. A page with a refresh
    and a link (not a 302) because the posting page's CSP ``form-action`` would block a
    cross-origin redirect.
    """
    from ..providers.services import config_for

    batch = get_object_or_404(Batch, uuid=batch_uuid)
    session = request.POST.get("assignmentId", "")
    assignment = Assignment.objects.filter(
        batch=batch, provider_assignment_id=session, worker__provider=Worker.Provider.PROLIFIC,
        status__in=[Assignment.Status.SUBMITTED, Assignment.Status.APPROVED,
                    Assignment.Status.REJECTED],
    ).first() if session else None
    if assignment is None:
        return HttpResponseBadRequest("No saved work for this session.")
    code = config_for(batch).completion_code
    url = f"{settings.PROLIFIC_COMPLETE_URL}?{urlencode({'cc': code})}"
    return render(request, "annotation/prolific_complete.html", {"url": url, "batch": batch})
