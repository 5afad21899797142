"""Arrival from a Prolific study: one task per session, then the completion redirect; and
Prolific's signed status hooks.

An arrival needs a batch published as that study (``prolific_arrival_claim``); anything else
is refused and writes nothing.
"""
from urllib.parse import urlencode

from django.conf import settings
from django.db import transaction
from django.http import HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from annotation.core.permissions import public
from annotation.engine.services.errors import AssignmentConflict, NotEligible
from annotation.models import Assignment, Batch, Worker
from annotation.providers.prolific.arrival import (
    ScreenedOut,
    StudyNotPublished,
    prolific_arrival_claim,
)
from annotation.providers.prolific.hooks import prolific_hook_receive
from annotation.providers.prolific.pay import money_label
from annotation.providers.prolific.provider import screen_out_code
from annotation.providers.services.common import config_for
from annotation.providers.tasks import review_batch
from annotation.providers.views import arrived, framed, marketplace_id, refused

PROLIFIC_DONE_SUFFIX = "/mturk/externalSubmit"


@public
def prolific_batch(request, batch_uuid):
    """Arrival from a Prolific study: the participant's task for this session
    (``prolific_arrival_claim``); a reload returns the same task."""
    batch = get_object_or_404(Batch, uuid=batch_uuid)
    pid, study, session = (marketplace_id(request.GET.get(name, ""))
                           for name in ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID"))
    if not (pid and study and session):
        return framed(HttpResponseBadRequest(
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
        return framed(HttpResponseBadRequest(str(exc)))
    except ScreenedOut as exc:
        return _screened_out(request, batch, exc)
    except (AssignmentConflict, NotEligible) as exc:
        return refused(request, batch, exc)
    return arrived(request, batch, assignment)


def _prolific_return_url(code: str) -> str:
    return f"{settings.PROLIFIC_COMPLETE_URL}?{urlencode({'cc': code})}"


def _screened_out(request, batch, screened: ScreenedOut):
    """Not eligible, paid for the screening: a link back to Prolific with the screen-out code
    (a link, not a refresh, so the participant reads why)."""
    url = _prolific_return_url(screen_out_code(screened.completion_code))
    return framed(render(request, "annotation/prolific_screened_out.html", {
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
    session = marketplace_id(request.POST.get("assignmentId", ""))  # never a NUL into SQL
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
