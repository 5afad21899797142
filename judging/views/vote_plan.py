"""``/s/<slug>/plan/``: how many more human votes a target needs, with and without a judge
(analysts), and the button that turns the plan into a batch (the study's owner)."""
from decimal import Decimal, InvalidOperation

import rules
from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from studies.access import ANALYZE, MANAGE, study_page

from ..selectors import HUMAN, judge_names
from ..services.comparisons import SamplingError

# The planner and its service are imported inside the views: they load SciPy, which a web
# worker must not pay for at boot (tests/test_gunicorn_config.py).


def _inputs(data) -> dict:
    """The form's fields, checked: a bad one is a PlanError with a readable message."""
    from ..planner import PlanError

    try:
        votes = int(data.get("votes") or 5)
        reward = Decimal(data.get("reward") or "0")
    except (ValueError, InvalidOperation) as exc:
        raise PlanError("votes must be a whole number and the reward an amount") from exc
    if not reward.is_finite():
        raise PlanError("the reward must be an amount")
    return {"judge": data.get("judge") or None, "votes_per_comparison": votes, "reward": reward}


@study_page(ANALYZE)
def vote_plan_page(request, study):
    from ..planner import PlanError
    from ..services.vote_plans import vote_plan

    target = request.GET.get("target", "").strip()
    context = {"study": study, "target": target, "form": request.GET,
               "judges": [j for j in judge_names(study) if j != HUMAN],
               "can_create": rules.test_rule(MANAGE, request.user, study)}
    if target:
        try:
            context["result"] = vote_plan(study, target, **_inputs(request.GET))
        except PlanError as exc:
            context["error"] = str(exc)
    return render(request, "judging/vote_plan.html", context)


@require_POST
@study_page(MANAGE)
def vote_plan_batch(request, study):
    from ..planner import PlanError
    from ..services.vote_plans import vote_plan_batch_create

    target = request.POST.get("target", "").strip()
    try:
        _, batches = vote_plan_batch_create(
            study, target, title=f"Plan: {target}",
            **_inputs(request.POST))
    except (PlanError, SamplingError) as exc:
        messages.error(request, str(exc))
        return redirect(reverse("studies:plan", args=[study.slug]))
    for batch in batches:
        messages.success(request, f"Batch “{batch.title}” created with "
                                  f"{batch.tasks.count()} tasks (draft).")
    return redirect(reverse("studies:plan", args=[study.slug]))
