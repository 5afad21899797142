"""Arrival from an MTurk ExternalQuestion: preview, accept, then the task page.

An arrival needs a batch launched on MTurk and the HIT id we created for that very task
(``task_arrival_claim``); anything else is refused and writes nothing.
"""
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import get_object_or_404

from annotation.core.permissions import public
from annotation.engine.services.errors import AssignmentConflict, NotEligible
from annotation.engine.views import render_task
from annotation.models import Task, Worker
from annotation.providers.mturk.provider import MTurkProvider
from annotation.providers.services.arrivals import HitNotPublished, task_arrival_claim
from annotation.providers.views import arrived, framed, marketplace_id, refused

PREVIEW_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"


@public
def mturk_task(request, task_uuid):
    task = get_object_or_404(Task.objects.select_related("batch"), uuid=task_uuid)
    if task.batch.provider != Worker.Provider.MTURK:
        raise Http404("No such task on Mechanical Turk")  # a local batch is never previewed
    assignment_id = request.GET.get("assignmentId", "").strip()
    if not assignment_id or assignment_id == PREVIEW_ID:
        return render_task(request, task=task, preview=True)
    submit_to = request.GET.get("turkSubmitTo", "")
    ids = {name: marketplace_id(request.GET.get(name, ""))
           for name in ("assignmentId", "workerId", "hitId")}
    if None in ids.values():
        bad = ", ".join(name for name, value in ids.items() if value is None)
        return framed(HttpResponseBadRequest(f"{bad}: missing or not a Mechanical Turk id"))
    if submit_to.rstrip("/") not in MTurkProvider.submit_hosts:
        return framed(HttpResponseBadRequest("turkSubmitTo is not a Mechanical Turk address"))
    try:
        assignment = task_arrival_claim(provider=Worker.Provider.MTURK, task=task,
                                        worker_id=ids["workerId"],
                                        assignment_id=ids["assignmentId"], hit_id=ids["hitId"],
                                        submit_to=submit_to)
    except (HitNotPublished, AssignmentConflict, NotEligible) as exc:
        return refused(request, task.batch, exc)
    return arrived(request, task.batch, assignment)
