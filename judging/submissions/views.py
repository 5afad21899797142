"""Submitter pages: the upload form with my submissions, and one submission's status (which
updates itself while the judge works). Views parse, authorize, call one service, render."""
from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render

from annotation.core.jobs import JobsBusy
from annotation.core.permissions import submitter_required

from .models import Submission
from .services import SubmissionRefused, submission_create, submission_judge


class SubmissionForm(forms.Form):
    name = forms.CharField(max_length=80, help_text="Your model's name; a resubmission of the "
                           "same name becomes its next version")
    file = forms.FileField(help_text="VisIT-Bench submission CSV (one '<model> prediction' "
                           "column) or JSONL (one object per line with 'prediction')")
    human_eval = forms.BooleanField(required=False, label="Also request a human evaluation "
                                    "(5 crowd votes per instance against a random existing "
                                    "model; an admin approves it)")


def _mine(request, submission_uuid) -> Submission:
    submission = (Submission.objects.select_related("model", "run")
                  .filter(uuid=submission_uuid, submitter=request.user).first())
    if submission is None:
        raise Http404("No such submission")
    return submission


@submitter_required
def submit(request):
    form = SubmissionForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        if upload.size > settings.SUBMISSION_MAX_BYTES:
            form.add_error("file", f"Larger than {settings.SUBMISSION_MAX_BYTES:,} bytes.")
        else:
            try:
                submission = submission_create(
                    submitter=request.user, name=form.cleaned_data["name"],
                    file_name=upload.name, data=upload.read(),
                    human_eval=form.cleaned_data["human_eval"])
            except SubmissionRefused as exc:
                form.add_error(None, " ".join(exc.messages))
            except JobsBusy as exc:  # the server is running as many jobs as it may
                form.add_error(None, exc.message)
            else:
                messages.success(request, f"Received: {submission.model.name} is being judged.")
                return redirect("judging:submission", submission_uuid=submission.uuid)
    try:
        judge, closed = submission_judge(), ""
    except SubmissionRefused as exc:
        judge, closed = None, " ".join(exc.messages)
    return render(request, "judging/submissions/submit.html", {
        "form": form, "judge": judge, "closed": closed,
        "cap": settings.SUBMISSION_BUDGET_CAP, "per_day": settings.SUBMISSIONS_PER_DAY,
        "max_rows": settings.SUBMISSION_MAX_ROWS,
        "submissions": Submission.objects.filter(submitter=request.user)
        .select_related("model", "run")[:50],
    }, status=400 if form.errors else 200)


def _progress(submission: Submission) -> dict:
    run = submission.run
    total = run.units_total if run else 0
    done = (run.units_done + run.units_failed) if run else 0
    return {"status": submission.status, "status_label": submission.get_status_display(),
            "units_done": done, "units_total": total,
            "percent": round(100 * done / total) if total else 0,
            "cost": f"{run.cost:.4f}" if run else "0"}


@submitter_required
def submission_status(request, submission_uuid):
    submission = _mine(request, submission_uuid)
    return render(request, "judging/submissions/status.html",
                  {"submission": submission, "progress": _progress(submission)})


@submitter_required
def submission_status_json(request, submission_uuid):
    return JsonResponse(_progress(_mine(request, submission_uuid)))
