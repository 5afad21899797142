"""Arrival from a marketplace (MTurk ExternalQuestion, Prolific study): preview, accept, then
the task page.

Only what this deployment published is accepted: an MTurk arrival needs a batch launched on
MTurk and the HIT id we created for that very task; a Prolific arrival needs a batch published
as that study. Anything else is refused and writes nothing (no worker row, no lease), so a task
uuid seen elsewhere cannot be turned into votes under invented worker ids. Every page of this
flow may be framed by the marketplace, refusals included.
"""
import re
from urllib.parse import urlencode

from django.conf import settings
from django.db import transaction
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from annotation.core.middleware import allow_marketplace_framing
from annotation.core.permissions import public
from annotation.engine.services.errors import AssignmentConflict, NotEligible
from annotation.engine.views import MTURK_SUBMIT_HOSTS, external_query, render_task
from annotation.models import Assignment, Batch, Task, Worker
from annotation.providers.prolific import screen_out_code
from annotation.providers.prolific.pay import money_label
from annotation.providers.services import (
    HitNotPublished,
    ScreenedOut,
    StudyNotPublished,
    config_for,
    mturk_arrival_claim,
    prolific_arrival_claim,
    prolific_hook_receive,
)
from annotation.providers.tasks import review_batch

# Marketplace ids are short alphanumeric strings (MTurk: A1B2…; Prolific: 24 hex digits).
MARKETPLACE_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


def _framed(response):
    return allow_marketplace_framing(response)


def _refused(request, batch, reason, status=403):
    return _framed(render(request, "annotation/not_eligible.html",
                          {"batch": batch, "reason": reason}, status=status))


def _marketplace_id(value: str) -> str | None:
    value = value.strip()
    return value if MARKETPLACE_ID.fullmatch(value) else None


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
    ids = {name: _marketplace_id(request.GET.get(name, ""))
           for name in ("assignmentId", "workerId", "hitId")}
    if None in ids.values():
        bad = ", ".join(name for name, value in ids.items() if value is None)
        return _framed(HttpResponseBadRequest(f"{bad}: missing or not a Mechanical Turk id"))
    if submit_to.rstrip("/") not in MTURK_SUBMIT_HOSTS:
        return _framed(HttpResponseBadRequest("turkSubmitTo is not a Mechanical Turk address"))
    try:
        assignment = mturk_arrival_claim(task=task, worker_id=ids["workerId"],
                                         assignment_id=ids["assignmentId"], hit_id=ids["hitId"],
                                         submit_to=submit_to)
    except (HitNotPublished, AssignmentConflict, NotEligible) as exc:
        return _refused(request, task.batch, exc)
    if assignment is None:
        return _framed(render(request, "annotation/batch_done.html", {"batch": task.batch},
                              status=409))
    url = redirect("annotation:assignment", assignment_uuid=assignment.uuid).url
    return redirect(f"{url}?{external_query(assignment)}")


# --- Prolific: batch-level arrival, one task per session, completion redirect --------------
PROLIFIC_DONE_SUFFIX = "/mturk/externalSubmit"


@public
def prolific_batch(request, batch_uuid):
    """Arrival from a Prolific study: the participant's task for this session
    (``prolific_arrival_claim``); a reload returns the same task."""
    batch = get_object_or_404(Batch, uuid=batch_uuid)
    pid, study, session = (_marketplace_id(request.GET.get(name, ""))
                           for name in ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID"))
    if not (pid and study and session):
        return _framed(HttpResponseBadRequest(
            "Open this study from Prolific (PROLIFIC_PID, STUDY_ID and SESSION_ID are "
            "required)."))
    # The shared after-submit page posts to <submit_to>/mturk/externalSubmit; for Prolific
    # that is our own completion view (see prolific_done).
    submit_to = reverse("annotation:prolific_done", args=[batch.uuid]).removesuffix(
        PROLIFIC_DONE_SUFFIX)
    try:
        assignment = prolific_arrival_claim(batch=batch, participant_id=pid, study_id=study,
                                            session_id=session, submit_to=submit_to)
    except StudyNotPublished as exc:
        return _framed(HttpResponseBadRequest(str(exc)))
    except ScreenedOut as exc:
        return _screened_out(request, batch, exc)
    except (AssignmentConflict, NotEligible) as exc:
        return _refused(request, batch, exc)
    if assignment is None:
        return _framed(render(request, "annotation/batch_done.html", {"batch": batch},
                              status=409))
    url = redirect("annotation:assignment", assignment_uuid=assignment.uuid).url
    return redirect(f"{url}?{external_query(assignment)}")


def _prolific_return_url(code: str) -> str:
    return f"{settings.PROLIFIC_COMPLETE_URL}?{urlencode({'cc': code})}"


def _screened_out(request, batch, screened: ScreenedOut):
    """Not eligible, paid for the screening: a link back to Prolific with the screen-out code
    (a link, not a refresh, so the participant reads why)."""
    url = _prolific_return_url(screen_out_code(screened.completion_code))
    return _framed(render(request, "annotation/prolific_screened_out.html", {
        "batch": batch, "reason": str(screened), "url": url,
        "reward": money_label(screened.reward, settings.PROLIFIC_CURRENCY)}))


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
    batch = get_object_or_404(Batch, uuid=batch_uuid)
    session = _marketplace_id(request.POST.get("assignmentId", ""))  # never a NUL into SQL
    assignment = Assignment.objects.filter(
        batch=batch, provider_assignment_id=session, worker__provider=Worker.Provider.PROLIFIC,
        status__in=[Assignment.Status.SUBMITTED, Assignment.Status.APPROVED,
                    Assignment.Status.REJECTED],
    ).first() if session else None
    if assignment is None:
        return HttpResponseBadRequest("No saved work for this session.")
    code = config_for(batch).completion_code
    return render(request, "annotation/prolific_complete.html",
                  {"url": _prolific_return_url(code), "batch": batch})


@public  # authenticated by Prolific's HMAC signature, not a session (prolific_hook_receive)
@csrf_exempt
@require_POST
def prolific_hook(request):
    """Prolific's submission-status events: a returned or timed-out place releases its lease
    at once, a submission awaiting review is reviewed now (queued after the commit)."""
    outcome = prolific_hook_receive(body=request.body, headers=request.headers)
    if outcome.batch_id is not None:
        batch_id = outcome.batch_id
        transaction.on_commit(lambda: review_batch.delay(batch_id))
    return HttpResponse(outcome.detail, status=outcome.status, content_type="text/plain")
