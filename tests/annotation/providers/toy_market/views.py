"""The toy marketplace's arrival page (a worker comes with ``worker``, ``seat`` and ``unit``)
and the endpoint our after-submit page posts to (the marketplace hearing of the submission)."""
from django.http import HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from annotation.core.permissions import public
from annotation.engine.services.errors import AssignmentConflict, NotEligible
from annotation.models import Assignment, Task
from annotation.providers.base import RemoteSubmission
from annotation.providers.services.arrivals import HitNotPublished, task_arrival_claim
from annotation.providers.views import arrived, framed, marketplace_id, refused

from .market import MARKET

SUBMIT_SUFFIX = "/mturk/externalSubmit"  # where the engine's after-submit page posts


@public
def toy_task(request, task_uuid):
    task = get_object_or_404(Task.objects.select_related("batch"), uuid=task_uuid)
    ids = {name: marketplace_id(request.GET.get(name, "")) for name in ("worker", "seat", "unit")}
    if None in ids.values():
        return framed(HttpResponseBadRequest("worker, seat and unit are required"))
    submit_to = reverse("annotation:toy_submitted").removesuffix(SUBMIT_SUFFIX)
    try:
        assignment = task_arrival_claim(provider="toy", task=task, worker_id=ids["worker"],
                                        assignment_id=ids["seat"], hit_id=ids["unit"],
                                        submit_to=submit_to)
    except (HitNotPublished, AssignmentConflict, NotEligible) as exc:
        return refused(request, task.batch, exc)
    return arrived(request, task.batch, assignment)


@public
@csrf_exempt
@require_POST
def toy_submitted(request):
    """The marketplace's side: it records the seat as submitted (our database is untouched)."""
    seat = request.POST.get("assignmentId", "")
    assignment = Assignment.objects.select_related("worker").filter(
        provider_assignment_id=seat, worker__provider="toy").first()
    if assignment is None:
        return HttpResponseBadRequest("No such seat.")
    MARKET.submissions[seat] = RemoteSubmission(
        external_id=seat, hit_id=assignment.provider_hit_id,
        worker_id=assignment.worker.external_id, status="submitted")
    return HttpResponse("Submitted to the toy marketplace.")
