"""Arrival from a marketplace (MTurk ExternalQuestion): preview, accept, then the task page."""
from django.http import HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render

from ..models import Task, Worker
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
