"""Annotator pages: "/" (each role to its home), available work, my work, claiming the next
task, the task page, skip, reporting a problem with a task."""
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpResponseNotAllowed
from django.middleware.csrf import CsrfViewMiddleware
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from annotation.core.middleware import allow_marketplace_framing
from annotation.core.permissions import (
    ANALYST,
    ANNOTATOR,
    SUBMITTER,
    annotator_required,
    public,
    user_roles,
)
from annotation.engine.hit_types import get_hit_type
from annotation.engine.identity import assignment_token, request_owns
from annotation.engine.selectors import (
    assignment_with_context,
    open_batches_for,
    worker_earnings,
    worker_history,
    worker_position,
    worker_qualifications,
    worker_revealed_gold,
)
from annotation.engine.services.claims import task_claim_next
from annotation.engine.services.errors import AnswerInvalid, EngineError, NotEligible, TooFast
from annotation.engine.services.problems import task_problem_report
from annotation.engine.services.submissions import assignment_return, assignment_submit
from annotation.engine.services.workers import worker_for_user
from annotation.models import Assignment, Batch, TaskProblem

HISTORY_PAGE = 25


# Where "/" sends each role, first match wins: a user with several roles lands on the widest
# view (the navigation bar links every home they have). URL names, not imports: the analyst's
# and admin's homes live in the agreement app, which reads every app's models.
ROLE_HOMES = (("admin", "homes:dashboard"), (ANALYST, "homes:analyst"),
              (ANNOTATOR, "annotation:available"), (SUBMITTER, "judging:submit"))


@public  # its own check: anonymous → sign in, signed in → their role's home
def home(request):
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    roles = user_roles(request.user)
    for role, url_name in ROLE_HOMES:
        if role in roles:
            return redirect(url_name)
    if request.user.study_memberships.exists():  # a role in a study, none deployment-wide
        return redirect("studies:list")
    raise PermissionDenied("Your account has no role yet: ask an admin to give you one.")


@annotator_required
def available_work(request):
    worker = worker_for_user(request.user)
    batches = open_batches_for(worker)
    return render(request, "annotation/home.html", {
        "worker": worker, "offered": [b for b in batches if b.offered],
        "closed": [b for b in batches if not b.offered]})


@annotator_required
def my_work(request):
    worker = worker_for_user(request.user)
    page = Paginator(worker_history(worker), HISTORY_PAGE).get_page(request.GET.get("page"))
    correct, total = worker_revealed_gold(worker)
    return render(request, "annotation/my_work.html", {
        "worker": worker, "page": page, "earnings": worker_earnings(worker),
        "gold_correct": correct, "gold_total": total,
        "qualifications": worker_qualifications(worker)})


@annotator_required
def batch_next(request, batch_uuid):
    batch = get_object_or_404(Batch, uuid=batch_uuid)
    worker = worker_for_user(request.user)
    try:
        assignment = task_claim_next(batch=batch, worker=worker)
    except NotEligible as exc:
        return render(request, "annotation/not_eligible.html", {"batch": batch, "reason": exc},
                      status=403)
    if assignment is None:
        return render(request, "annotation/batch_done.html", {"batch": batch})
    return redirect("annotation:assignment", assignment_uuid=assignment.uuid)


@public
@csrf_exempt
def assignment_page(request, assignment_uuid):
    """Show a leased task (GET) or take its answer (POST). Only its own worker gets in."""
    assignment = _owned_assignment(request, assignment_uuid)
    if request.method == "POST":
        if (refused := _csrf_refusal(request)) is not None:
            return refused
        return _submit(request, assignment)
    if request.method != "GET":
        return HttpResponseNotAllowed(["GET", "POST"])
    if assignment.status != Assignment.Status.LEASED:
        return _after_submit(request, assignment)
    return render_task(request, assignment=assignment, task=assignment.task)


@public
@csrf_exempt
@require_POST
def assignment_skip(request, assignment_uuid):
    assignment = _owned_assignment(request, assignment_uuid)
    if (refused := _csrf_refusal(request)) is not None:
        return refused
    assignment_return(assignment=assignment)
    if assignment.provider_submit_to or request.POST.get("t"):  # inside the marketplace frame
        return allow_marketplace_framing(
            render(request, "annotation/returned.html", {"batch": assignment.batch}))
    messages.info(request, _("Task skipped — you won't see it again."))
    return redirect("annotation:batch_next", batch_uuid=assignment.batch.uuid)


@public
@csrf_exempt
@require_POST
def assignment_problem(request, assignment_uuid):
    """The worker reports a problem instead of answering: the report is kept for review, no
    vote counts, and the task goes back to the pool (``task_problem_report``)."""
    assignment = _owned_assignment(request, assignment_uuid)
    if (refused := _csrf_refusal(request)) is not None:
        return refused
    try:
        task_problem_report(assignment=assignment, category=request.POST.get("category", ""),
                            note=request.POST.get("note", ""))
    except ValidationError as exc:
        if assignment.status != Assignment.Status.LEASED:
            return _after_submit(request, assignment)
        return render_task(request, assignment=assignment, task=assignment.task,
                           error=" ".join(exc.messages), status=400)
    if assignment.provider_submit_to or request.POST.get("t"):  # inside the marketplace frame
        return allow_marketplace_framing(
            render(request, "annotation/returned.html", {"batch": assignment.batch}))
    messages.info(request, _("Thank you — the problem was reported and the task set aside. "
                             "It does not count against you."))
    return redirect("annotation:batch_next", batch_uuid=assignment.batch.uuid)


def render_task(request, *, task, assignment=None, preview=False, error=None, data=None,
                status=200):
    """A task page. A marketplace worker doing one HIT (a preview, a token-flow arrival, an
    assignment that goes back to MTurk) sees no "Task k of n": the batch is not their queue."""
    batch = assignment.batch if assignment is not None else task.batch
    hit = get_hit_type(batch.hit_type)
    one_hit = (preview or assignment is None or _is_token_flow(request)
               or bool(assignment.provider_submit_to))
    position = (0, 0) if one_hit else worker_position(batch, assignment.worker)
    context = {
        "hit": hit,
        "batch": batch,
        "task": task,
        "assignment": assignment,
        "preview": preview,
        "error": error,
        "data": data or {},
        "token": assignment_token(assignment) if assignment and _is_token_flow(request) else "",
        "show_position": not one_hit,
        "position": position[0],
        "total": position[1],
        "seconds_left": int((assignment.expires_at - timezone.now()).total_seconds())
        if assignment else None,
        "problem_categories": TaskProblem.Category.choices,
        **hit.page_context(task),
    }
    response = render(request, hit.template, context, status=status)
    allow_marketplace_framing(response)
    return response


def _is_token_flow(request) -> bool:
    return bool(request.GET.get("t") or request.POST.get("t"))


def _csrf_refusal(request):
    """Session-authenticated posts need the CSRF token; token-flow posts carry a signed
    per-assignment secret instead (third-party iframes may not send our cookies)."""
    if _is_token_flow(request):
        return None
    return CsrfViewMiddleware(lambda r: None).process_view(request, None, (), {})


def _owned_assignment(request, assignment_uuid) -> Assignment:
    assignment = assignment_with_context(assignment_uuid)
    if assignment is None or not request_owns(request, assignment):
        raise Http404("No such assignment")
    return assignment


def _submit(request, assignment):
    data = request.POST.copy()
    try:
        outcome = assignment_submit(assignment=assignment, data=data)
    except (AnswerInvalid, TooFast) as exc:
        return render_task(request, assignment=assignment, task=assignment.task, error=str(exc),
                           data=data, status=400)
    except EngineError as exc:
        return render_task(request, assignment=assignment, task=assignment.task, error=str(exc),
                           data=data, status=409)
    # The stored row (provider fields unchanged) with its worker as the submit left it: a
    # worker the gold check just blocked must not be handed another task.
    return _after_submit(request, outcome.assignment)


def _after_submit(request, assignment):
    """Marketplace work goes back to the marketplace; local work moves on to the next task."""
    if assignment.provider_submit_to:
        response = render(request, "annotation/external_submit.html", {
            "action": assignment.provider_submit_to.rstrip("/") + "/mturk/externalSubmit",
            "assignment_id": assignment.provider_assignment_id,
        })
        allow_marketplace_framing(response)
        return response
    if _is_token_flow(request):
        return allow_marketplace_framing(render(
            request, "annotation/returned.html", {"batch": assignment.batch, "submitted": True}))
    return _next_task_page(request, assignment.batch, assignment.worker)


def _next_task_page(request, batch, worker):
    """The next leased task's page, in this same response: one round trip per task instead of
    a redirect and a second request (the page's script then shows the task's own URL, so a
    reload asks for that task rather than re-posting). "next" explains an empty or closed
    batch."""
    try:
        following = task_claim_next(batch=batch, worker=worker)
    except NotEligible:
        following = None
    if following is None:
        return redirect("annotation:batch_next", batch_uuid=batch.uuid)
    return render_task(request, assignment=following, task=following.task)  # claims load both


def external_query(assignment) -> str:
    return urlencode({"t": assignment_token(assignment)})
