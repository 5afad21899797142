"""Judge pages: runs with live progress, and one leaderboard per judge. Thin: parse, authorize,
call one service or selector, render."""
import rules
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_http_methods, require_POST

from annotation.core.jobs import JobsBusy
from annotation.core.permissions import admin_required, analyst_required
from studies.access import ANALYZE, MANAGE, study_or_default
from studies.links import study_redirect

from .. import rating_cache
from .forms import JudgeRunForm
from .models import Judge, JudgeCall, JudgeRun
from .selectors import graders_with_grades, judges_with_verdicts, parse_path_counts, run_progress
from .services import (
    RUN_BUDGET,
    judge_estimate,
    judge_run_cancel,
    judge_run_request,
    judge_run_resume,
)

# Each page serves the default study under /eval/judges/ and any study under /s/<slug>/judges/
# (analysts read and start runs; admins, or the study's owners, cancel and resume them).
study_analyst = study_or_default(ANALYZE, analyst_required)
study_admin = study_or_default(MANAGE, admin_required)

# What each parse path means, for the run page (``parse_path_counts`` keys).
PARSE_PATH_WORDS = {
    "strict": "read directly (the answer was in the expected format)",
    "extraction": "recovered by a second call that extracted the verdict from a free-form answer",
    "failed": "unreadable (counted as no verdict)",
    "pending": "not answered yet",
}


@study_analyst
def run_list(request, study):
    runs = JudgeRun.objects.filter(study=study).select_related("judge")[:100]
    return render(request, "judging/judges/run_list.html", {
        "runs": [(run, run_progress(run)) for run in runs], "study": study,
        "judges": Judge.objects.order_by("name", "version")})


@study_analyst
@require_http_methods(["GET", "POST"])
def run_new(request, study):
    """Choose a judge and its items, see the estimate against the budget, then start: the
    first POST prices the selection, a POST with ``start`` starts it (priced again by the
    service, which refuses a run above its budget)."""
    form = JudgeRunForm(request.POST or None, study=study)
    estimate = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            if "start" in request.POST:
                run = judge_run_request(judge=data["judge"], item_uuids=data["items"],
                                        budget=data["budget"],
                                        created_by=request.user.get_username(),
                                        study=study)
                messages.success(request, f"Run started over {run.units_total} units.")
                return study_redirect(request, "judging:judges:run_detail", run.uuid)
            estimate = judge_estimate(judge=data["judge"], item_uuids=data["items"],
                                      study=study)
        except ValidationError as exc:
            form.add_error(None, exc)
        except JobsBusy as exc:
            form.add_error(None, exc.message)
    data = getattr(form, "cleaned_data", {})
    budget = data.get("budget")
    limit = budget if budget is not None else RUN_BUDGET.maximum()[0]
    return render(request, "judging/judges/run_new.html", {
        "form": form, "estimate": estimate, "judge": data.get("judge"),
        "items": len(data.get("items") or ()), "budget": budget, "limit": limit,
        "over_budget": estimate is not None and estimate.cost > limit})


@study_analyst
def run_detail(request, study, run_uuid):
    run = get_object_or_404(JudgeRun.objects.select_related("judge"), uuid=run_uuid,
                            study=study)
    calls = (JudgeCall.objects.filter(run=run, purpose=JudgeCall.Purpose.JUDGE)
             .order_by("-pk")[:25])
    return render(request, "judging/judges/run_detail.html", {
        "run": run, "progress": run_progress(run), "parse_paths": [
            (PARSE_PATH_WORDS.get(path, path), n) for path, n in parse_path_counts(run).items()],
        "calls": calls, "live": run.status in (JudgeRun.Status.PENDING, JudgeRun.Status.RUNNING),
        "can_manage": rules.test_rule(MANAGE, request.user, study)})


@study_admin
@require_POST
def run_cancel(request, study, run_uuid):
    run = get_object_or_404(JudgeRun, uuid=run_uuid, study=study)
    judge_run_cancel(run)
    messages.info(request, "Run cancelled; calls in flight finish and are kept.")
    return study_redirect(request, "judging:judges:run_detail", run.uuid)


@study_admin
@require_POST
def run_resume(request, study, run_uuid):
    run = get_object_or_404(JudgeRun, uuid=run_uuid, study=study)
    try:
        judge_run_resume(run)
        messages.info(request, "Run resumed; calls already made are reused, not re-paid.")
    except ValidationError as exc:
        messages.error(request, "; ".join(exc.messages))
    except JobsBusy as exc:  # too many jobs queued or running: say so
        messages.error(request, exc.message)
    return study_redirect(request, "judging:judges:run_detail", run.uuid)


@study_analyst
def leaderboards(request, study):
    """Each judge's boards from the rating cache: the same entries as the leaderboard page's
    (split 'all', every worker), so either page fills the cache for the other."""
    boards = [(name, rating_cache.leaderboard(name)) for name in judges_with_verdicts()]
    score_boards = [(name, rating_cache.score_leaderboard(name))
                    for name in graders_with_grades()]
    return render(request, "judging/judges/leaderboards.html",
                  {"boards": boards, "score_boards": score_boards})
